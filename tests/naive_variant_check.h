// The harness of the naive-loop tests (tests/test_variants_naive*.cpp): one attention layer with
// one position variant, run for real and as a naive float64 loop whose scores come from a
// formula the test writes from the paper; scores on visible pairs, probabilities and the layer
// output must agree to 1e-10.
#pragma once

#include <doctest/doctest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <array>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "core/model/attention.h"
#include "tests/naive_attention.h"
#include "tests/variant_helpers.h"

namespace relpos::test {

constexpr double kNaiveTol = 1e-10;

// The variants the naive test cases check against their formula: each test file states its own
// next to its test cases (at static initialization, so every test process knows them all), and
// the last test of tests/test_variants_naive.cpp compares them with the registry.
inline std::set<std::string>& naive_tested() {
  static std::set<std::string> names;
  return names;
}
inline bool naive_tests(std::initializer_list<const char*> names) {
  for (const char* n : names) naive_tested().insert(n);
  return true;
}

struct Setup {
  int64_t B = 2, H = 3, d = 4, T = 7, K = 2;
  bool causal = false;
  int64_t offset = 2;  // absolute position of token 0 (matters for rope only)
  int64_t layer = 1;   // parameter set used (of 2)
};

// What the test knows about the variant: its score per pair, optionally a value vector per
// pair and a transformation of q and k, all built from the variant's parameters.
struct Formula {
  std::function<ScoreFn(const NaiveHeads&, PositionEncodingImpl&)> score;
  std::function<ValueFn(PositionEncodingImpl&)> value;
  std::function<void(NaiveHeads&)> transform;
  // Instead of `score`, for a variant that also uses the layer's own projections (deberta).
  std::function<ScoreFn(const NaiveHeads&, PositionEncodingImpl&, const MultiHeadAttentionImpl&)>
      score_with_layer;
};

inline torch::Tensor param(PositionEncodingImpl& enc, const std::string& name) {
  return enc.named_parameters()[name].detach();
}

inline double dot_qk(const NaiveHeads& x, int64_t b, int64_t h, int64_t i, int64_t j) {
  double s = 0;
  for (int64_t m = 0; m < x.q.size(3); ++m) s += el(x.q, b, h, i, m) * el(x.k, b, h, j, m);
  return s;
}

inline ScoreFn content_score(const NaiveHeads& x) {
  const double rsd = 1.0 / std::sqrt(static_cast<double>(x.q.size(3)));
  return
      [x, rsd](int64_t b, int64_t h, int64_t i, int64_t j) { return dot_qk(x, b, h, i, j) * rsd; };
}

// One attention layer with the variant on a random input (float64, seeded): its output with a
// record and without one, and the naive heads of the same input.
struct LayerRun {
  MultiHeadAttention attn{nullptr};
  std::shared_ptr<PositionEncodingImpl> enc;
  AttentionRecord rec;
  torch::Tensor y, y_plain;  // (B,T,D) with and without the record
  NaiveHeads heads;          // q, k, v of the input, before any transform
};

inline LayerRun run_layer(const std::string& type, const std::string& yaml, const Setup& s) {
  torch::manual_seed(1234);
  auto dims = tiny_dims(s.H, s.d, s.causal);
  LayerRun r;
  r.attn = MultiHeadAttention(dims.width, s.H, 0.0);
  r.attn->to(torch::kDouble);
  randomize(*r.attn, 0.5);
  r.enc = make_variant(type, dims, yaml);
  randomize(*r.enc, 1.0);

  auto x = torch::randn({s.B, s.T, dims.width}, torch::kDouble);  // (B,T,D)
  AttentionContext ctx;
  ctx.layer = s.layer;
  ctx.length = s.T;
  ctx.offset = s.offset;
  ctx.causal = s.causal;
  {
    torch::NoGradGuard guard;
    r.y = r.attn->forward(x, ctx, {r.enc}, {}, &r.rec);  // (B,T,D)
    // Without a record attention may take another route to the same scores (an encoding that
    // includes the content product, position_encoding.h): the output must be the same.
    r.y_plain = r.attn->forward(x, ctx, {r.enc}, {}, nullptr);  // (B,T,D)
  }
  r.heads = {naive_heads(x, r.attn->query, s.H), naive_heads(x, r.attn->key, s.H),
             naive_heads(x, r.attn->value, s.H)};
  return r;
}

// Runs the real layer with the variant and the naive loop, and compares scores on visible
// pairs, probabilities and the layer output.
inline void check_variant(const std::string& type, const std::string& yaml, const Setup& s,
                          const Formula& f) {
  CAPTURE(type);
  CAPTURE(yaml);
  CAPTURE(s.causal);
  CAPTURE(s.T);
  CAPTURE(s.H);
  LayerRun r = run_layer(type, yaml, s);
  if (f.transform) f.transform(r.heads);
  auto score =
      f.score_with_layer ? f.score_with_layer(r.heads, *r.enc, *r.attn) : f.score(r.heads, *r.enc);
  auto naive =
      naive_attend(r.heads, *r.attn, s.causal, score, f.value ? f.value(*r.enc) : ValueFn{});

  // The variant's term is its position contribution: e - q·k/√d (position_encoding.h).
  REQUIRE(r.rec.terms.size() == 1);
  const torch::Tensor& term = r.rec.terms[0];
  auto scores = term.defined() ? naive.content + term : naive.content;  // (B,H,T,T)
  auto visible = torch::ones({s.T, s.T}, torch::kBool);                 // (T,T)
  if (s.causal) visible = visible.tril();
  CHECK(max_abs_diff(scores.masked_fill(visible.logical_not(), 0),
                     naive.scores.masked_fill(visible.logical_not(), 0)) < kNaiveTol);
  CHECK(max_abs_diff(r.rec.probs, naive.probs) < kNaiveTol);
  CHECK(max_abs_diff(r.y, naive.out) < kNaiveTol);
  CHECK(max_abs_diff(r.y_plain, naive.out) < kNaiveTol);
}

// Runs `check_variant` bidirectional and causal, with K below T and above T.
inline void check_all_modes(const std::string& type, const std::function<std::string(int64_t K)>& yaml,
                     const std::function<Formula(const Setup&)>& formula) {
  for (bool causal : {false, true}) {
    for (auto [H, T, K] : std::vector<std::array<int64_t, 3>>{{2, 6, 2}, {3, 7, 9}, {3, 5, 1}}) {
      Setup s;
      s.causal = causal;
      s.H = H;
      s.T = T;
      s.K = K;
      check_variant(type, yaml(K), s, formula(s));
    }
  }
}

}  // namespace relpos::test
