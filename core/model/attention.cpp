#include "core/model/attention.h"

#include "core/model/attention_values.h"
#include "core/model/fused_attention.h"

#include <cmath>
#include <limits>

namespace relpos {

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t width, int64_t heads,
                                               double attention_dropout_p)
    : width_(width), heads_(heads), head_dim_(width / heads) {
  TORCH_CHECK(width % heads == 0, "width ", width, " is not divisible by heads ", heads);
  query = register_module("query", torch::nn::Linear(width, width));
  key = register_module("key", torch::nn::Linear(width, width));
  value = register_module("value", torch::nn::Linear(width, width));
  output = register_module("output", torch::nn::Linear(width, width));
  attention_dropout =
      register_module("attention_dropout", torch::nn::Dropout(attention_dropout_p));
}

torch::Tensor MultiHeadAttentionImpl::split_heads(const torch::Tensor& x) const {
  return x.view({x.size(0), x.size(1), heads_, head_dim_}).transpose(1, 2);  // (B,H,T,d)
}

std::pair<torch::Tensor, torch::Tensor> MultiHeadAttentionImpl::project_qk(
    const torch::Tensor& x) {
  return {split_heads(query(x)), split_heads(key(x))};  // (B,H,T,d) each
}

torch::Tensor visibility_mask(int64_t T, bool causal, torch::Device device) {
  auto opts = torch::TensorOptions().dtype(torch::kBool).device(device);
  if (!causal) return torch::ones({T, T}, opts);  // (T,T)
  return torch::ones({T, T}, opts).tril();        // (T,T) j <= i
}

namespace {

// (B,H,T,T) zeros without storage, for hooks that read the content scores for their shape, dtype
// and device only, where attention forms none.
torch::Tensor content_stand_in(const torch::Tensor& q, int64_t B, int64_t H, int64_t T) {
  return torch::zeros({1, 1, 1, 1}, q.options()).expand({B, H, T, T});
}

// The encoding that computes the whole score in its own term (can_include_content), when every
// other encoding reads the content scores for their shape only; nullptr otherwise.
const PositionEncodingImpl* content_includer(const EncodingList& encodings) {
  const PositionEncodingImpl* found = nullptr;
  for (const auto& e : encodings) {
    if (!found && e->can_include_content()) {
      found = e.get();
    } else if (e->fused_scores() == FusedScores::unsupported) {
      return nullptr;
    }
  }
  return found;
}

}  // namespace

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& x,
                                              const AttentionContext& layer_ctx,
                                              const EncodingList& encodings,
                                              const torch::Tensor& key_mask,
                                              AttentionRecord* record) {
  // The hooks may project position vectors with this layer's W_Q and W_K.
  AttentionContext ctx = layer_ctx;
  ctx.project_qk = [this](const torch::Tensor& p) { return project_qk(p); };
  TORCH_CHECK(x.dim() == 3 && x.size(2) == width_, "attention expects (B,T,", width_, "), got ",
              x.sizes());
  const int64_t B = x.size(0), T = x.size(1);
  auto q = split_heads(query(x));  // (B,H,T,d)
  auto k = split_heads(key(x));    // (B,H,T,d)
  auto v = split_heads(value(x));  // (B,H,T,d)
  for (const auto& e : encodings) e->transform_qk(q, k, ctx);

  if (fused_ && !record) {
    // The content scores are never formed: a stand-in without storage gives the hooks their
    // shape, dtype and device (the encodings allowed here read nothing else of them).
    const auto stand_in = content_stand_in(q, B, heads_, T);
    torch::Tensor bias;  // (1|B,H,T,T) the stacked encodings' terms, or undefined
    for (const auto& e : encodings) {
      auto term = e->score_term(stand_in, q, k, ctx);
      if (term.defined()) bias = bias.defined() ? bias + term : term;
    }
    const double p = attention_dropout->is_training() ? attention_dropout->options.p() : 0.0;
    auto z = fused_attention(q, k, v, bias, ctx.causal, key_mask, p);  // (B,H,T,d)
    return output(z.transpose(1, 2).reshape({B, T, width_}));          // (B,T,D)
  }

  // 1/√d on q (B,H,T,d) rather than on the (B,H,T,T) product: one pass over T² fewer each way.
  // q/√d and k contiguous: the copies the batched matmul would make (and keep for backward)
  // anyway, made here so that a position term's product with them keeps the same storage.
  const double inv_sqrt_d = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  ctx.scaled_query = q.contiguous() * inv_sqrt_d;  // (B,H,T,d)
  k = k.contiguous();                              // (B,H,T,d)
  // An encoding whose term contains the content product computes the whole score; the others
  // then get a stand-in for the content scores' shape (as on the fused path).
  const PositionEncodingImpl* includer = record ? nullptr : content_includer(encodings);
  auto content = includer ? content_stand_in(q, B, heads_, T)
                          : torch::matmul(ctx.scaled_query, k.transpose(-1, -2));  // (B,H,T,T)
  torch::Tensor scores = includer ? torch::Tensor() : content;                     // (B,H,T,T)
  if (record) record->terms.clear(), record->content_parts.clear();
  for (const auto& e : encodings) {
    ctx.include_content = e.get() == includer;
    auto term = e->score_term(content, q, k, ctx);  // (B|1,H,T,T) or undefined
    TORCH_CHECK(term.defined() || !ctx.include_content, e->type(),
                " can include content but returned no score term");
    if (term.defined()) scores = scores.defined() ? scores + term : term;
    if (record) {
      record->terms.push_back(term.defined() ? term.detach() : term);
      auto part = term.defined() ? e->content_part(q, k, ctx) : torch::Tensor();  // (B,H,1,T)
      record->content_parts.push_back(part.defined() ? part.detach() : part);
    }
  }
  // Nothing below reads the content scores: with a position term they are a (B,H,T,T) tensor of
  // their own, freed here rather than kept to the end of the layer.
  content = torch::Tensor();

  // An encoder without padding sees every key: no mask to apply.
  torch::Tensor hidden;  // (1|B,1,T,T) true where key j is not visible from query i
  if (ctx.causal || key_mask.defined()) {
    auto visible = visibility_mask(T, ctx.causal, x.device()).view({1, 1, T, T});  // (1,1,T,T)
    if (key_mask.defined()) {
      TORCH_CHECK(key_mask.sizes() == torch::IntArrayRef({B, T}), "key mask must be (", B, ",",
                  T, "), got ", key_mask.sizes());
      visible = visible & key_mask.view({B, 1, 1, T});  // (B,1,T,T)
    }
    hidden = visible.logical_not();
    scores = scores.masked_fill(hidden, -std::numeric_limits<float>::infinity());  // (B,H,T,T)
  }
  auto probs = torch::softmax(scores, -1);  // (B,H,T,T)
  scores = torch::Tensor();                 // the softmax's backward keeps its output only
  // A query that sees no key at all (a sequence of padding only, or left padding in a causal
  // model) gets NaN from a softmax over -inf; its row becomes 0 so that no NaN reaches the
  // real tokens through the next layer (0·NaN is NaN). The causal mask alone never empties a row.
  if (key_mask.defined()) probs = probs.masked_fill(hidden, 0.0);  // (B,H,T,T)
  if (record) record->probs = probs.detach();
  auto [z, dropped] = attend_values(probs, v, attention_dropout->options.p(),
                                    attention_dropout->is_training());  // (B,H,T,d), (B,H,T,T)
  for (const auto& e : encodings) {
    auto term = e->value_term(dropped, ctx);  // (B,H,T,d) or undefined
    if (term.defined()) z = z + term;
  }
  return output(z.transpose(1, 2).reshape({B, T, width_}));  // (B,T,D)
}

}  // namespace relpos
