// The transformer and its heads: LayerNorm placement, ALBERT options (factorized embeddings,
// shared layers), the tied LM head, classifier/span heads against hand-computed values, key
// padding, and positional parameter counts against the closed forms of docs/variants.md.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <torch/nn/functional/activation.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/position/position_encoding.h"
#include "tests/child_log.h"
#include "tests/small_model.h"
#include "tests/tensor_compare.h"

using namespace relpos;
using test::small_config;

namespace {

constexpr int64_t kModelVocab = 30;

int64_t param_total(const std::vector<torch::Tensor>& ps) {
  int64_t n = 0;
  for (const auto& p : ps) n += p.numel();
  return n;
}

Model build(const Config& cfg, int64_t vocab = kModelVocab) {
  torch::manual_seed(21);
  Model m(cfg, vocab);
  m->eval();
  return m;
}

AttentionContext context(int64_t layer, int64_t T, bool causal) {
  AttentionContext c;
  c.layer = layer;
  c.length = T;
  c.causal = causal;
  return c;
}

torch::Tensor feed_forward(BlockImpl& b, const torch::Tensor& x) {
  return b.ff_out(torch::gelu(b.ff_in(x)));  // (B,T,D)
}

}  // namespace

TEST_CASE("model: pre-LN and post-LN place the norms where they say") {
  const auto tokens = torch::randint(0, kModelVocab, {2, 6}, torch::kLong);
  std::map<std::string, torch::Tensor> out;
  for (const char* norm : {"pre", "post"}) {
    CAPTURE(norm);
    const Config cfg = small_config("shaw", false, {"model.layers=1", std::string("model.norm=") + norm});
    Model m = build(cfg);
    auto& tr = *m->transformer;
    torch::NoGradGuard guard;
    const auto h = m->hidden(tokens);  // (B,T,D)
    out[norm] = h;
    // The same computation written out from the block's parts.
    auto blk = tr.block(0);
    const auto ctx = context(0, 6, false);
    auto x = tr.embed(tokens, {});  // (B,T,D)
    torch::Tensor expected;
    if (std::string(norm) == "pre") {
      CHECK(tr.final_norm);
      CHECK(!tr.embedding_norm);
      x = x + blk->attention(blk->attention_norm(x), ctx, tr.position->encodings());
      x = x + feed_forward(*blk, blk->ff_norm(x));
      expected = tr.final_norm(x);
    } else {
      CHECK(!tr.final_norm);
      CHECK(tr.embedding_norm);
      // embed() ends with the embedding LayerNorm: each token has mean 0 and variance 1.
      CHECK(x.mean(-1).abs().max().item<double>() < 1e-5);
      x = blk->attention_norm(x + blk->attention(x, ctx, tr.position->encodings()));
      expected = blk->ff_norm(x + feed_forward(*blk, x));
    }
    CHECK(test::max_abs_diff(h, expected) < 1e-6);
  }
  // Same seed, same weights: the placement alone changes the output.
  CHECK(test::max_abs_diff(out["pre"], out["post"]) > 1e-2);
}

TEST_CASE("model: factorized embedding (E < D) projects E-wide embeddings to D") {
  const auto tokens = torch::randint(0, kModelVocab, {2, 6}, torch::kLong);
  {
    const Config cfg = small_config("learned", false, {"model.embedding_width=8"});
    Model m = build(cfg);
    auto& tr = *m->transformer;
    REQUIRE(tr.embedding_projection);
    CHECK(tr.token_embedding->weight.sizes() == torch::IntArrayRef({kModelVocab, 8}));
    CHECK(tr.embedding_projection->weight.sizes() == torch::IntArrayRef({16, 8}));
    const auto table = tr.position->named_parameters()["learned.table"];
    CHECK(table.sizes() == torch::IntArrayRef({32, 8}));  // the learned table is E wide
    REQUIRE(m->lm_head->dense);
    CHECK(m->lm_head->dense->weight.sizes() == torch::IntArrayRef({8, 16}));  // back to E
    // embed = W_p (token + P) + b, written out.
    torch::NoGradGuard guard;
    const auto e = tr.token_embedding->weight.index_select(0, tokens.reshape({-1})).view({2, 6, 8}) +
                   table.narrow(0, 0, 6).unsqueeze(0);  // (B,T,E)
    const auto expected = torch::matmul(e, tr.embedding_projection->weight.t()) +
                          tr.embedding_projection->bias;  // (B,T,D)
    CHECK(test::max_abs_diff(tr.embed(tokens, {}), expected) < 1e-6);
    CHECK(m->lm_logits(m->hidden(tokens)).sizes() == torch::IntArrayRef({2, 6, kModelVocab}));
  }
  {
    const Config cfg = small_config("learned", false, {"model.embedding_width=0"});
    Model m = build(cfg);
    CHECK(!m->transformer->embedding_projection);
    CHECK(m->transformer->token_embedding->weight.sizes() == torch::IntArrayRef({kModelVocab, 16}));
  }
}

TEST_CASE("model: share_layers keeps one block and applies it at every layer") {
  auto total = [](int64_t layers, bool shared) {
    const Config cfg = small_config("shaw", false,
                                    {"model.layers=" + std::to_string(layers),
                                     std::string("model.share_layers=") + (shared ? "true" : "false")});
    return param_total(build(cfg)->parameters());
  };
  const int64_t one = total(1, true);
  CHECK(total(4, true) == one);
  CHECK(total(1, false) == one);
  // Not shared: three more blocks and three more Shaw parameter sets (2·(2K+1)·d each).
  const Config c1 = small_config("shaw", false, {"model.layers=1"});
  const int64_t block = param_total(build(c1)->transformer->block(0)->parameters());
  CHECK(total(4, false) == one + 3 * block + 3 * 2 * 7 * 8);

  const Config cfg = small_config("shaw", false, {"model.layers=4", "model.share_layers=true"});
  Model m = build(cfg);
  auto& tr = *m->transformer;
  CHECK(tr.blocks->size() == 1);
  for (const auto& p : m->named_parameters())
    if (p.key().rfind("transformer.blocks.", 0) == 0)
      CHECK_MESSAGE(p.key().rfind("transformer.blocks.0.", 0) == 0, p.key());
  CHECK(tr.position->named_parameters()["shaw.keys"].size(0) == 1);
  // The forward pass is block 0 applied four times.
  const auto tokens = torch::randint(0, kModelVocab, {2, 6}, torch::kLong);
  torch::NoGradGuard guard;
  auto x = tr.embed(tokens, {});
  for (int l = 0; l < 4; ++l)
    x = tr.blocks->ptr<BlockImpl>(0)->forward(x, context(0, 6, false), tr.position->encodings(),
                                              {}, nullptr);
  CHECK(test::max_abs_diff(m->hidden(tokens), tr.final_norm(x)) < 1e-6);
}

TEST_CASE("model: the LM head is tied to the token embeddings") {
  for (bool causal : {false, true}) {
    for (int64_t E : {int64_t{0}, int64_t{8}}) {
      CAPTURE(causal);
      CAPTURE(E);
      const Config cfg = small_config("none", causal, {"model.embedding_width=" + std::to_string(E)});
      Model m = build(cfg);
      const int64_t width = E == 0 ? 16 : E;
      // No separate decoder weight: the only (V,E) tensor is the token embedding.
      std::vector<std::string> vocab_sized;
      for (const auto& p : m->named_parameters())
        if (p.value().dim() == 2 && p.value().size(0) == kModelVocab)
          vocab_sized.push_back(p.key());
      CHECK(vocab_sized == std::vector<std::string>{"transformer.token_embedding.weight"});
      CHECK(m->lm_head->bias.sizes() == torch::IntArrayRef({kModelVocab}));

      // The gradient of a loss on the head's logits reaches the embedding through the head
      // alone (the hidden states are a constant here).
      auto hidden = torch::randn({2, 5, 16});  // (B,T,D)
      m->zero_grad();
      auto w = torch::randn({2, 5, kModelVocab});
      (m->lm_logits(hidden) * w).sum().backward();
      const auto& g = m->transformer->token_embedding->weight.grad();
      REQUIRE(g.defined());
      CHECK(g.abs().sum().item<double>() > 0);

      // Logits written out: h -> [dense] -> [GELU, LayerNorm when MLM] -> · Wᵀ + bias.
      torch::NoGradGuard guard;
      auto h = hidden;
      auto& head = *m->lm_head;
      CHECK(static_cast<bool>(head.dense) == (!causal || E != 0));
      CHECK(static_cast<bool>(head.norm) == !causal);
      if (head.dense) h = torch::matmul(h, head.dense->weight.t()) + head.dense->bias;  // (B,T,E)
      if (!causal) {
        h = 0.5 * h * (1 + torch::erf(h / std::sqrt(2.0)));  // exact GELU
        auto mu = h.mean(-1, true), var = (h - mu).pow(2).mean(-1, true);
        h = (h - mu) / torch::sqrt(var + 1e-5) * head.norm->weight + head.norm->bias;  // (B,T,E)
      }
      auto W = m->transformer->token_embedding->weight.clone();  // (V,E)
      CHECK(W.size(1) == width);
      const auto expected = torch::matmul(h, W.t()) + head.bias;  // (B,T,V)
      CHECK(test::max_abs_diff(m->lm_logits(hidden), expected) < 1e-5);
      // Changing one embedding row changes exactly that vocabulary column.
      m->transformer->token_embedding->weight[3].zero_();
      const auto after = m->lm_logits(hidden);  // (B,T,V)
      CHECK(test::max_abs_diff(after.select(-1, 3), head.bias[3].expand({2, 5})) < 1e-6);
      CHECK(test::max_abs_diff(after.narrow(-1, 4, kModelVocab - 4),
                               expected.narrow(-1, 4, kModelVocab - 4)) < 1e-6);
    }
  }
}

TEST_CASE("model: classifier and span heads with hand-set weights") {
  const Config cfg = small_config("none", false, {"task.type=classify", "data.corpus=sentiment", "task.num_classes=3",
                                                  "model.width=4", "model.heads=2"});
  Model m = build(cfg);
  REQUIRE(m->classifier_head);
  torch::NoGradGuard guard;
  auto& c = *m->classifier_head;
  c.pooler->weight.copy_(torch::tensor({{1.0, 0.0, 0.0, 0.0},
                                        {0.0, 2.0, 0.0, 0.0},
                                        {0.0, 0.0, -1.0, 0.0},
                                        {0.5, 0.0, 0.0, 0.5}}));
  c.pooler->bias.copy_(torch::tensor({0.1, 0.0, -0.2, 0.0}));
  c.classifier->weight.copy_(torch::tensor({{1.0, -1.0, 0.5, 0.0},
                                            {0.0, 0.3, 0.0, 2.0},
                                            {-0.5, 0.0, 1.0, 1.0}}));
  c.classifier->bias.copy_(torch::tensor({1.0, 2.0, 3.0}));
  const std::vector<std::vector<std::vector<double>>> hv = {
      {{0.1, 0.2, 0.3, 0.4}, {1.0, -1.0, 0.5, 0.0}, {0.0, 0.0, 0.0, 0.0}},
      {{2.0, 1.0, 0.0, -1.0}, {0.3, 0.3, 0.3, 0.3}, {-0.7, 0.2, 0.9, 1.5}}};
  auto hidden = torch::zeros({2, 3, 4});
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t)
      for (int e = 0; e < 4; ++e) hidden[b][t][e] = hv[b][t][e];
  const std::vector<int64_t> pool = {1, 2};
  const auto logits = m->class_logits(hidden, torch::tensor(pool));  // (B,C)
  REQUIRE(logits.sizes() == torch::IntArrayRef({2, 3}));
  const double P[4][4] = {{1, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, -1, 0}, {0.5, 0, 0, 0.5}};
  const double pb[4] = {0.1, 0, -0.2, 0};
  const double C[3][4] = {{1, -1, 0.5, 0}, {0, 0.3, 0, 2}, {-0.5, 0, 1, 1}};
  const double cb[3] = {1, 2, 3};
  for (int b = 0; b < 2; ++b) {
    double pooled[4];
    for (int o = 0; o < 4; ++o) {
      double s = pb[o];
      for (int e = 0; e < 4; ++e) s += P[o][e] * hv[b][pool[b]][e];
      pooled[o] = std::tanh(s);
    }
    for (int k = 0; k < 3; ++k) {
      double s = cb[k];
      for (int o = 0; o < 4; ++o) s += C[k][o] * pooled[o];
      CHECK(logits[b][k].item<double>() == doctest::Approx(s).epsilon(1e-6));
    }
  }

  const Config scfg = small_config("none", false, {"task.type=span_qa", "data.corpus=wordnet_qa", "model.width=4", "model.heads=2"});
  Model s = build(scfg);
  REQUIRE(s->span_head);
  s->span_head->span->weight.copy_(torch::tensor({{1.0, 0.0, -1.0, 2.0}, {0.0, 0.5, 0.5, 0.0}}));
  s->span_head->span->bias.copy_(torch::tensor({0.5, -0.5}));
  const auto span = s->span_logits(hidden);  // (B,T,2)
  REQUIRE(span.sizes() == torch::IntArrayRef({2, 3, 2}));
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t) {
      const auto& x = hv[b][t];
      CHECK(span[b][t][0].item<double>() == doctest::Approx(0.5 + x[0] - x[2] + 2 * x[3]).epsilon(1e-6));
      CHECK(span[b][t][1].item<double>() == doctest::Approx(-0.5 + 0.5 * x[1] + 0.5 * x[2]).epsilon(1e-6));
    }
}

TEST_CASE("model: padded tokens do not affect real tokens (encoder, every variant)") {
  const auto tokens = torch::randint(0, kModelVocab, {2, 8}, torch::kLong);
  auto other = tokens.clone();
  other[1].narrow(0, 5, 3).copy_((tokens[1].narrow(0, 5, 3) + 5) % kModelVocab);
  auto mask = torch::ones({2, 8}, torch::kBool);
  mask[1].narrow(0, 5, 3).fill_(false);
  for (const auto& name : Registry::get().names()) {
    CAPTURE(name);
    Model m = test::small_model(small_config(name, false), kModelVocab);
    torch::NoGradGuard guard;
    ForwardOptions o;
    o.key_mask = mask;
    const auto a = m->hidden(tokens, o), b = m->hidden(other, o);  // (B,T,D)
    CHECK(test::max_abs_diff(a[0], b[0]) == 0.0);
    CHECK(test::max_abs_diff(a[1].narrow(0, 0, 5), b[1].narrow(0, 0, 5)) < 1e-6);
    // Without the mask the change is seen.
    CHECK(test::max_abs_diff(m->hidden(tokens)[1].narrow(0, 0, 5),
                             m->hidden(other)[1].narrow(0, 0, 5)) > 1e-3);
    // A sequence of padding only gives finite outputs and leaves its neighbour alone.
    auto empty = mask.clone();
    empty[0].fill_(false);
    o.key_mask = empty;
    const auto e = m->hidden(tokens, o);  // (B,T,D)
    CHECK(torch::isfinite(e).all().item<bool>());
    CHECK(test::max_abs_diff(e[1], a[1]) == 0.0);
  }
  // ...and finite gradients: the NaN of a softmax over no visible key must not flow back.
  for (bool causal : {false, true}) {
    Model m = test::small_model(small_config("shaw", causal), kModelVocab);
    auto empty = mask.clone();
    empty[0].fill_(false);
    ForwardOptions o;
    o.key_mask = empty;
    m->zero_grad();
    m->lm_logits(m->hidden(tokens, o)).sum().backward();
    for (const auto& p : m->named_parameters())
      if (p.value().grad().defined())
        CHECK_MESSAGE(torch::isfinite(p.value().grad()).all().item<bool>(), p.key());
  }
}

namespace {

struct Sizes {
  int64_t D, H, L, E, K, S, buckets, max_len;
  bool shared;
};

// docs/variants.md, positional parameters of each learnable variant: one set (a layer's, or the
// model's for a variant whose parameters are not per layer). -1: not written down here.
int64_t closed_form_set(const std::string& name, const Sizes& s) {
  const int64_t d = s.D / s.H, R = 2 * s.K + 1;
  if (name == "learned") return s.max_len * s.E;
  if (name == "shaw") return 2 * R * d;
  if (name == "transformer_xl") return s.H * d * s.D + 2 * s.H * d;
  if (name == "huang" || name == "huang_m3" || name == "huang_m4") return R * d;
  if (name == "huang_m1") return s.K + 1;
  if (name == "huang_m2") return R;
  if (name == "tisa") return 3 * s.S * s.H;
  if (name == "t5_bias") return s.buckets * s.H;
  if (name == "kerple_log" || name == "kerple_power") return 2 * s.H;
  if (name == "fire") return (s.H + 2) * 32 + 2;  // mlp_width 32
  if (name == "cope") return 2 * 64 * d;           // n_pos 64; E and E' (an encoder)
  return -1;
}

// In the whole model: a parameter-free variant has none; the registry says whether a set is per
// layer (then times the distinct layers, 1 when shared) or one for the model.
int64_t closed_form(const std::string& name, const Sizes& s) {
  const VariantInfo& info = Registry::get().at(name);
  if (!info.learnable()) return 0;
  const int64_t Lp = s.shared ? 1 : s.L;
  // deberta: P (2K×D) shared by the layers, W_{Q,r} and W_{K,r} (H·d × D) per layer.
  if (name == "deberta") return 2 * s.K * s.D + 2 * s.D * s.D * Lp;
  const int64_t set = closed_form_set(name, s);
  REQUIRE_MESSAGE(set >= 0, "no closed form for the learnable variant " << name
                                << ": add it from docs/variants.md");
  return info.parameters == ParamScope::PerLayer ? set * Lp : set;
}

std::vector<std::string> size_sets(const Sizes& s) {
  const std::string K = std::to_string(s.K);
  return {"model.width=" + std::to_string(s.D), "model.heads=" + std::to_string(s.H),
          "model.layers=" + std::to_string(s.L),
          "model.embedding_width=" + std::to_string(s.E == s.D ? 0 : s.E),
          std::string("model.share_layers=") + (s.shared ? "true" : "false"),
          "position.shaw.clip=" + K, "position.huang.clip=" + K, "position.huang_m1.clip=" + K,
          "position.huang_m2.clip=" + K, "position.huang_m3.clip=" + K,
          "position.huang_m4.clip=" + K, "position.deberta.clip=" + K,
          "position.tisa.kernels=" + std::to_string(s.S),
          "position.t5_bias.buckets=" + std::to_string(s.buckets),
          "position.learned.max_len=" + std::to_string(s.max_len), "task.seq_len=16"};
}

std::string run_output(const std::string& cmd, int& status) {
  std::string out;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int st = ::pclose(pipe);
  test::ChildLog::instance().note({cmd}, test::wait_status_text(st),
                                  "(stderr was not captured: see the test's own output)");
  status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

}  // namespace

TEST_CASE("model: positional parameter counts match docs/variants.md's closed forms") {
  const std::vector<Sizes> sizes = {{32, 4, 3, 32, 5, 4, 16, 40, false},
                                    {32, 4, 3, 32, 5, 4, 16, 40, true},
                                    {48, 6, 2, 24, 7, 5, 32, 64, false},
                                    {48, 6, 2, 24, 7, 5, 32, 64, true}};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Sizes& s = sizes[i];
    CAPTURE(s.D);
    CAPTURE(s.shared);
    // `relpos list` with the same settings (two of the sizes: each run starts a process).
    const bool run_list = i == 0 || i == 3;
    std::map<std::string, int64_t> listed;
    if (run_list) {
      std::string cmd = std::string(RELPOS_BINARY) + " list";
      for (const auto& set : size_sets(s)) cmd += " --set " + set;
      int status = -1;
      const std::string out = run_output(cmd, status);
      REQUIRE_MESSAGE(status == 0, out);
      std::istringstream lines(out);
      for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string name;
        int64_t n;
        if (line.rfind("  ", 0) == 0 && words >> name >> n) listed[name] = n;
      }
    }
    for (const auto& name : Registry::get().names()) {
      CAPTURE(name);
      const int64_t expected = closed_form(name, s);
      if (run_list) {
        REQUIRE(listed.count(name) == 1);
        CHECK(listed[name] == expected);
      }
      // The same count from the encoding, and inside a model that uses it.
      std::vector<std::string> sets = size_sets(s);
      sets.push_back("position.type=" + name);
      const Config cfg = load_config({test::config_path("base.yaml")}, sets).config;
      CHECK(make_position_encoding(name, model_dims(cfg.model), cfg.position)->parameter_count() ==
            expected);
      Model m(cfg, 50);
      int64_t in_model = 0;
      for (const auto& p : m->named_parameters())
        if (p.key().rfind("transformer.position.", 0) == 0) in_model += p.value().numel();
      CHECK(in_model == expected);
    }
    // The general huang with every term and a scale: table plus K+1 scales per layer.
    std::vector<std::string> sets = size_sets(s);
    sets.insert(sets.end(), {"position.type=huang", "position.huang.terms=qk,qa,ka,qka",
                             "position.huang.scale_qk=abs", "position.shaw.values=false",
                             "position.huang.clip=" + std::to_string(s.K)});
    const Config cfg = load_config({test::config_path("base.yaml")}, sets).config;
    const int64_t Lp = s.shared ? 1 : s.L, d = s.D / s.H;
    CHECK(make_position_encoding("huang", model_dims(cfg.model), cfg.position)->parameter_count() ==
          ((2 * s.K + 1) * d + s.K + 1) * Lp);
    // Shaw without value vectors: half.
    CHECK(make_position_encoding("shaw", model_dims(cfg.model), cfg.position)->parameter_count() ==
          (2 * s.K + 1) * d * Lp);
  }
}

TEST_CASE("model: a model too big for memory is a config error naming its sizes") {
  // width 2^24: each width x width projection is 2^48 floats (1 PiB), beyond any machine's
  // address space, so the allocation fails at once whatever the overcommit policy; the
  // embedding before it (4 tokens x 2^24) is small.
  const Config cfg = test::small_config("none", false,
                                        {"model.width=16777216", "model.heads=1",
                                         "model.layers=1", "model.ff_width=4"});
  CHECK_THROWS_WITH_AS(build_model(cfg, 4, torch::kCPU),
                       doctest::Contains("the model does not fit in memory (model.layers 1, "
                                         "model.width 16777216, model.ff_width 4"),
                       ConfigError);
}

// DESIGN.md §2: the position-only scores of an input encoding are (P W_Q^h)(P W_K^h)ᵀ/√d at
// layer 0, with P the encoding's rows (through the factorized projection's weight, no bias, when
// E < D) and no LayerNorm or bias. Written here as loops over i, j, h and the channels.
TEST_CASE("model: input position scores of learned and sinusoidal equal (P W_Q)(P W_K)^T/sqrt(d)") {
  const int64_t T = 6, H = 2, d = 8;
  for (const char* type : {"learned+tisa", "sinusoidal"}) {
    for (int64_t E : {0, 8}) {
      CAPTURE(type);
      CAPTURE(E);
      const Config cfg = small_config(type, false, {"model.embedding_width=" + std::to_string(E)});
      Model m = build(cfg);
      auto& tr = *m->transformer;
      torch::NoGradGuard guard;
      const int64_t width = E > 0 ? E : H * d;
      // P (T,width): the learned table's rows, or sin/cos(i / 10000^(2m/width)) (scale 1).
      std::vector<std::vector<double>> P(T, std::vector<double>(width));
      const auto named = tr.position->named_parameters();
      const bool learned = std::string(type).rfind("learned", 0) == 0;
      const auto table = learned ? named["learned.table"].to(torch::kDouble) : torch::Tensor();
      for (int64_t i = 0; i < T; ++i)
        for (int64_t c = 0; c < width; ++c) {
          const double ang = i / std::pow(10000.0, static_cast<double>(c - c % 2) / width);
          P[i][c] = learned ? table[i][c].item<double>() : (c % 2 == 0 ? std::sin(ang) : std::cos(ang));
        }
      if (E > 0) {  // project E -> D with the projection's weight only
        const auto Wp = tr.embedding_projection->weight.to(torch::kDouble);  // (D,E)
        std::vector<std::vector<double>> Q(T, std::vector<double>(H * d, 0.0));
        for (int64_t i = 0; i < T; ++i)
          for (int64_t c = 0; c < H * d; ++c)
            for (int64_t e = 0; e < E; ++e) Q[i][c] += Wp[c][e].item<double>() * P[i][e];
        P = Q;
      }
      const auto Wq = tr.block(0)->attention->query->weight.to(torch::kDouble);  // (D,D)
      const auto Wk = tr.block(0)->attention->key->weight.to(torch::kDouble);    // (D,D)
      std::vector<std::vector<double>> q(T, std::vector<double>(H * d, 0.0)), k = q;
      for (int64_t i = 0; i < T; ++i)
        for (int64_t c = 0; c < H * d; ++c)
          for (int64_t e = 0; e < H * d; ++e) {
            q[i][c] += Wq[c][e].item<double>() * P[i][e];
            k[i][c] += Wk[c][e].item<double>() * P[i][e];
          }
      const auto scores = tr.input_position_scores(T);
      REQUIRE(scores.size() == (learned ? 2u : 1u));
      if (learned) CHECK(!scores[1].defined());  // tisa adds nothing to the input
      REQUIRE(scores[0].sizes() == torch::IntArrayRef({H, T, T}));
      double worst = 0.0;
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = 0; j < T; ++j) {
            double s = 0.0;
            for (int64_t c = h * d; c < (h + 1) * d; ++c) s += q[i][c] * k[j][c];
            s /= std::sqrt(static_cast<double>(d));
            worst = std::max(worst, std::abs(scores[0][h][i][j].item<double>() - s));
          }
      CHECK(worst < 1e-4);
      CHECK(scores[0].abs().max().item<double>() > 1e-2);  // not vacuously small
    }
  }
}
