#include "core/model/transformer.h"

#include <fmt/format.h>
#include <torch/nn/functional/activation.h>

#include <cmath>

#include "core/model/dropout.h"
#include "core/model/fused_attention.h"
#include "core/util/errors.h"

namespace relpos {
namespace {

// The first stacked encoding without a fused path (FusedScores::unsupported), or null.
std::shared_ptr<PositionEncodingImpl> refusing_fused(const EncodingList& encodings) {
  for (const auto& e : encodings)
    if (e->fused_scores() == FusedScores::unsupported) return e;
  return nullptr;
}

}  // namespace

PositionStackImpl::PositionStackImpl(const ModelDims& dims, const PositionConfig& cfg) {
  for (const auto& type : cfg.types) {
    auto enc = make_position_encoding(type, dims, cfg);
    register_module(type, enc);
    encodings_.push_back(enc);
  }
}

torch::Tensor PositionStackImpl::embed(torch::Tensor x, int64_t offset) {
  for (const auto& e : encodings_) x = e->embed(x, offset);  // (B,T,E)
  return x;
}

torch::Tensor PositionStackImpl::embed_at(torch::Tensor x, const torch::Tensor& positions) {
  for (const auto& e : encodings_) x = e->embed_at(x, positions);  // (B,T,E)
  return x;
}

namespace {

// The smallest of the encodings' limits (-1: no limit), or -1 when none has one.
template <class Limit>
int64_t smallest_limit(const EncodingList& encodings, Limit limit) {
  int64_t m = -1;
  for (const auto& e : encodings) {
    const int64_t l = limit(*e);
    if (l >= 0 && (m < 0 || l < m)) m = l;
  }
  return m;
}

}  // namespace

int64_t PositionStackImpl::max_length() const {
  return smallest_limit(encodings_, [](const PositionEncodingImpl& e) { return e.max_length(); });
}

int64_t PositionStackImpl::table_length() const {
  return smallest_limit(encodings_, [](const PositionEncodingImpl& e) { return e.table_length(); });
}

torch::Tensor activation(const torch::Tensor& x, const std::string& kind) {
  return kind == "gelu_tanh" ? torch::gelu(x, "tanh") : torch::gelu(x);
}

torch::nn::LayerNorm layer_norm(int64_t width, double eps) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(eps));
}

BlockImpl::BlockImpl(const ModelConfig& cfg)
    : pre_norm_(cfg.norm == "pre"), activation_(cfg.activation) {
  attention =
      register_module("attention", MultiHeadAttention(cfg.width, cfg.heads, cfg.attention_dropout));
  attention_norm = register_module("attention_norm", layer_norm(cfg.width, cfg.norm_eps));
  ff_in = register_module("ff_in", torch::nn::Linear(cfg.width, cfg.ff_width));
  ff_out = register_module("ff_out", torch::nn::Linear(cfg.ff_width, cfg.width));
  ff_norm = register_module("ff_norm", layer_norm(cfg.width, cfg.norm_eps));
  dropout = register_module("dropout", torch::nn::Dropout(cfg.dropout));
}

torch::Tensor BlockImpl::forward(torch::Tensor x, const AttentionContext& ctx,
                                 const EncodingList& encodings, const torch::Tensor& key_mask,
                                 AttentionRecord* record) {
  auto drop = [this](const torch::Tensor& h) { return relpos::dropout(h, dropout); };
  auto ff = [this, &drop](const torch::Tensor& h) {
    return ff_out(drop(activation(ff_in(h), activation_)));  // (B,T,D)
  };
  auto attend = [&](const torch::Tensor& h) {
    return attention(h, ctx, encodings, key_mask, record);  // (B,T,D)
  };
  if (pre_norm_) {
    x = x + drop(attend(apply_norm(attention_norm, x)));  // (B,T,D)
    x = x + drop(ff(apply_norm(ff_norm, x)));             // (B,T,D)
  } else {
    x = apply_norm(attention_norm, x + drop(attend(x)));  // (B,T,D)
    x = apply_norm(ff_norm, x + drop(ff(x)));             // (B,T,D)
  }
  return x;
}

TransformerImpl::TransformerImpl(const ModelConfig& model, const PositionConfig& position_cfg,
                                 int64_t vocab_size)
    : cfg_(model), vocab_size_(vocab_size) {
  TORCH_CHECK(vocab_size > 0, "vocabulary size must be positive, got ", vocab_size);
  const int64_t E = model.embed_dim(), D = model.width;
  token_embedding = register_module("token_embedding", torch::nn::Embedding(vocab_size, E));
  if (model.segments)
    segment_embedding =
        register_module("segment_embedding", torch::nn::Embedding(model.segment_vocab, E));
  if (E != D)
    embedding_projection = register_module("embedding_projection", torch::nn::Linear(E, D));
  if (model.norm == "post")
    embedding_norm =
        register_module("embedding_norm",
                        layer_norm(model.embedding_norm_before_projection ? E : D, model.norm_eps));
  embedding_dropout = register_module("embedding_dropout", torch::nn::Dropout(model.dropout));
  position = register_module("position", PositionStack(model_dims(model), position_cfg));
  blocks = register_module("blocks", torch::nn::ModuleList());
  const int64_t distinct = model.share_layers ? 1 : model.layers;
  for (int64_t l = 0; l < distinct; ++l) blocks->push_back(Block(model));
  if (model.norm == "pre")
    final_norm = register_module("final_norm", layer_norm(D, model.norm_eps));
  // Position encodings initialise their own parameters; everything else gets BERT's init.
  for (auto& child : named_children())
    if (child.key() != "position") init_weights(*child.value(), model.init_std);
  // auto: content-dependent terms too; as the kernel's mask they were faster than the eager
  // path on the GPU (huang_m4 1.33x, transformer_xl 1.37x at BERT-base size, docs/performance.md).
  if (model.attention_impl == "fused")
    use_fused_attention(true);
  else if (model.attention_impl == "auto" && fused_attention_available())
    use_fused_attention(!refusing_fused(position->encodings()));
}

void TransformerImpl::use_fused_attention(bool on) {
  if (on)
    if (const auto e = refusing_fused(position->encodings()))
      throw ConfigError(fmt::format(
          "model.attention_impl: position encoding '{}' has no fused attention path (its "
          "scores read the content scores, or it adds a value term that needs the "
          "probabilities); use auto or eager",
          e->type()));
  fused_ = on;
  for (const auto& b : *blocks) b->as<BlockImpl>()->attention->set_fused(on);
}

void init_weights(torch::nn::Module& module, double std) {
  torch::NoGradGuard guard;
  for (auto& m : module.modules(/*include_self=*/true)) {
    if (auto* lin = m->as<torch::nn::Linear>()) {
      lin->weight.normal_(0.0, std);
      if (lin->bias.defined()) lin->bias.zero_();
    } else if (auto* emb = m->as<torch::nn::Embedding>()) {
      emb->weight.normal_(0.0, std);
    } else if (auto* ln = m->as<torch::nn::LayerNorm>()) {
      ln->weight.fill_(1.0);
      ln->bias.zero_();
    }
  }
}

Block TransformerImpl::block(int64_t layer) const {
  return blocks->ptr<BlockImpl>(cfg_.share_layers ? 0 : layer);
}

torch::Tensor TransformerImpl::embed(const torch::Tensor& tokens, const ForwardOptions& opts) {
  TORCH_CHECK(tokens.dim() == 2, "tokens must be (B,T), got ", tokens.sizes());
  auto x = token_embedding(tokens);  // (B,T,E)
  if (segment_embedding) {
    // One segment type (an imported RoBERTa): every token has it, the second text of a pair too,
    // as RoBERTa feeds token type 0 throughout.
    if (opts.segments.defined() && cfg_.segment_vocab > 1) {
      TORCH_CHECK(opts.segments.sizes() == tokens.sizes(), "segments ", opts.segments.sizes(),
                  " do not match tokens ", tokens.sizes());
      x = x + segment_embedding(opts.segments);  // (B,T,E)
    } else {
      x = x + segment_embedding->weight[0];  // (B,T,E) everything in segment 0
    }
  }
  if (opts.positions.defined()) {
    TORCH_CHECK(opts.positions.sizes() == tokens.sizes(), "positions ", opts.positions.sizes(),
                " do not match tokens ", tokens.sizes());
    x = position->embed_at(x, opts.positions);  // (B,T,E)
  } else {
    x = position->embed(x, opts.offset);  // (B,T,E)
  }
  if (cfg_.embedding_norm_before_projection) {
    // ALBERT: LayerNorm and dropout on the E-wide embeddings, then the projection to D.
    x = relpos::dropout(apply_norm(embedding_norm, x), embedding_dropout);  // (B,T,E)
    return embedding_projection ? embedding_projection(x) : x;              // (B,T,D)
  }
  if (embedding_projection) x = embedding_projection(x);  // (B,T,D)
  if (embedding_norm) x = apply_norm(embedding_norm, x);  // (B,T,D)
  return relpos::dropout(x, embedding_dropout);           // (B,T,D)
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& tokens, const ForwardOptions& opts) {
  auto x = embed(tokens, opts);  // (B,T,D)
  const int64_t T = tokens.size(1);
  if (opts.records) opts.records->assign(cfg_.layers, AttentionRecord{});
  for (int64_t l = 0; l < cfg_.layers; ++l) {
    AttentionContext ctx;
    ctx.layer = cfg_.share_layers ? 0 : l;
    ctx.length = T;
    ctx.offset = opts.offset;
    ctx.positions = opts.positions;
    ctx.causal = cfg_.causal();
    AttentionRecord* rec = opts.records ? &(*opts.records)[l] : nullptr;
    x = block(l)->forward(x, ctx, position->encodings(), opts.key_mask, rec);  // (B,T,D)
  }
  if (final_norm) x = apply_norm(final_norm, x);  // (B,T,D)
  return x;
}

std::vector<torch::Tensor> TransformerImpl::input_position_scores(int64_t T) {
  torch::NoGradGuard guard;
  const auto& encs = position->encodings();
  std::vector<torch::Tensor> out(encs.size());
  auto opts = token_embedding->weight.options();
  auto zeros = torch::zeros({1, T, cfg_.embed_dim()}, opts);  // (1,T,E)
  auto attn = block(0)->attention;
  for (size_t i = 0; i < encs.size(); ++i) {
    auto p = encs[i]->embed(zeros, 0);  // (1,T,E)
    if (p.equal(zeros)) continue;       // this encoding adds nothing to the input
    if (embedding_projection)
      p = torch::matmul(p, embedding_projection->weight.t());  // (1,T,D), no bias: P only
    auto q = torch::matmul(p, attn->query->weight.t());        // (1,T,D)
    auto k = torch::matmul(p, attn->key->weight.t());          // (1,T,D)
    const int64_t H = attn->heads(), d = attn->head_dim();
    q = q.view({T, H, d}).transpose(0, 1);                                               // (H,T,d)
    k = k.view({T, H, d}).transpose(0, 1);                                               // (H,T,d)
    out[i] = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(d));  // (H,T,T)
  }
  return out;
}

}  // namespace relpos
