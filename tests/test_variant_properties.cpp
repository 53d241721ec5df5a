// Mathematical properties every variant must have (HOUSE_STYLE tests, kind 3):
//   translation invariance of the relative variants (and its failure for absolute ones),
//   RoPE preserves norms and makes q·k a function of i - j, causal outputs ignore the future,
//   attention rows sum to 1, ALiBi slopes are the paper's geometric sequence.
#include <doctest/doctest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/position/position_encoding.h"
#include "tests/small_model.h"
#include "tests/tensor_compare.h"

namespace relpos {
// core/position/alibi.cpp
std::vector<double> alibi_slopes(int64_t H);
}  // namespace relpos

using namespace relpos;
using test::small_config;
using test::small_model;

namespace {

constexpr int64_t kPropertyVocab = 40;

struct Run {
  torch::Tensor hidden;                 // (B,T,D)
  std::vector<AttentionRecord> records;  // one per layer
};

Run forward(Model& m, const torch::Tensor& tokens, int64_t offset = 0,
            const torch::Tensor& key_mask = {}) {
  Run r;
  ForwardOptions o;
  o.offset = offset;
  o.key_mask = key_mask;
  o.records = &r.records;
  torch::NoGradGuard guard;
  r.hidden = m->hidden(tokens, o);
  return r;
}

}  // namespace

TEST_CASE("properties: relative variants are unchanged when every position is shifted") {
  const auto tokens = torch::randint(0, kPropertyVocab, {2, 8}, torch::kLong);
  for (const auto& name : Registry::get().names()) {
    const bool invariant = Registry::get().at(name).translation_invariant;
    for (bool causal : {false, true}) {
      CAPTURE(name);
      CAPTURE(causal);
      Model m = small_model(small_config(name, causal), kPropertyVocab);
      const Run a = forward(m, tokens, 0);
      const Run b = forward(m, tokens, 13);  // positions 13..20 instead of 0..7
      double probs_diff = 0;
      for (size_t l = 0; l < a.records.size(); ++l)
        probs_diff =
            std::max(probs_diff, test::max_abs_diff(a.records[l].probs, b.records[l].probs));
      const double hidden_diff = test::max_abs_diff(a.hidden, b.hidden);
      if (invariant) {
        CHECK(probs_diff < 1e-5);
        CHECK(hidden_diff < 1e-4);
      } else {
        // Absolute encodings see other positions: the property must fail for them.
        CHECK(probs_diff > 1e-3);
        CHECK(hidden_diff > 1e-2);
      }
    }
  }
}

TEST_CASE("properties: relative variants give the same outputs after left padding") {
  // Real tokens at positions 0..5 (right padding) or 2..7 (left padding), padding masked out.
  // A stronger shift test than ForwardOptions.offset: the variants that ignore the offset see
  // genuinely different positions here. In causal mode the left padding leaves queries that see
  // no key at all, which must not turn the real outputs into NaN.
  const auto real = torch::randint(0, kPropertyVocab, {2, 6}, torch::kLong);
  const auto pad = torch::randint(0, kPropertyVocab, {2, 2}, torch::kLong);
  const auto right = torch::cat({real, pad}, 1);  // (B,T)
  const auto left = torch::cat({pad, real}, 1);   // (B,T)
  auto right_mask = torch::ones({2, 8}, torch::kBool);
  right_mask.narrow(1, 6, 2).fill_(false);
  auto left_mask = torch::ones({2, 8}, torch::kBool);
  left_mask.narrow(1, 0, 2).fill_(false);
  for (const auto& name : Registry::get().names()) {
    const bool invariant = Registry::get().at(name).translation_invariant;
    for (bool causal : {false, true}) {
      CAPTURE(name);
      CAPTURE(causal);
      Model m = small_model(small_config(name, causal), kPropertyVocab);
      const auto a = forward(m, right, 0, right_mask).hidden.narrow(1, 0, 6);  // (B,6,D)
      const auto b = forward(m, left, 0, left_mask).hidden.narrow(1, 2, 6);    // (B,6,D)
      REQUIRE(torch::isfinite(b).all().item<bool>());
      if (invariant)
        CHECK(test::max_abs_diff(a, b) < 1e-4);
      else
        CHECK(test::max_abs_diff(a, b) > 1e-2);
    }
  }
}

namespace {

// q·k of RoPE written from the paper: with q, k rotated to positions i and j, the pair m
// contributes (q0 k0 + q1 k1) cos φ + (q1 k0 - q0 k1) sin φ, φ = (j - i)·θ_m,
// θ_m = base^(-2m/rd); channels past rd contribute q·k unchanged.
double rope_dot(const torch::Tensor& q, const torch::Tensor& k, int64_t i, int64_t j,
                int64_t rd, double base) {
  auto qa = q.accessor<double, 1>();
  auto ka = k.accessor<double, 1>();
  double s = 0;
  for (int64_t m = 0; m < rd / 2; ++m) {
    const double theta = std::pow(base, -2.0 * m / static_cast<double>(rd));
    const double phi = static_cast<double>(j - i) * theta;
    const double q0 = qa[2 * m], q1 = qa[2 * m + 1], k0 = ka[2 * m], k1 = ka[2 * m + 1];
    s += (q0 * k0 + q1 * k1) * std::cos(phi) + (q1 * k0 - q0 * k1) * std::sin(phi);
  }
  for (int64_t c = rd; c < q.size(0); ++c) s += qa[c] * ka[c];
  return s;
}

}  // namespace

TEST_CASE("properties: RoPE preserves norms and q·k depends only on i - j") {
  const int64_t T = 9, d = 8;
  for (int64_t rotary_dim : {int64_t{0}, int64_t{4}}) {
    CAPTURE(rotary_dim);
    const int64_t rd = rotary_dim == 0 ? d : rotary_dim;
    const Config cfg = small_config("rope", false,
                                    {"position.rope.rotary_dim=" + std::to_string(rotary_dim),
                                     "position.rope.base=100"});
    auto rope = make_position_encoding("rope", model_dims(cfg.model), cfg.position);
    rope->to(torch::kDouble);
    auto opts = torch::TensorOptions().dtype(torch::kDouble);
    // Random q, k: norms per (b,h,t).
    auto q = torch::randn({2, 2, T, d}, opts), k = torch::randn({2, 2, T, d}, opts);  // (B,H,T,d)
    auto q0 = q.clone(), k0 = k.clone();
    AttentionContext ctx;
    ctx.length = T;
    rope->transform_qk(q, k, ctx);
    CHECK(test::max_abs_diff(q.norm(2, -1), q0.norm(2, -1)) < 1e-12);
    CHECK(test::max_abs_diff(k.norm(2, -1), k0.norm(2, -1)) < 1e-12);
    CHECK(test::max_abs_diff(q, q0) > 1e-2);  // it did rotate
    if (rd < d) {  // channels past the rotary width pass unchanged
      CHECK(torch::equal(q.narrow(-1, rd, d - rd), q0.narrow(-1, rd, d - rd)));
      CHECK(torch::equal(k.narrow(-1, rd, d - rd), k0.narrow(-1, rd, d - rd)));
    }
    // The same query and key vector at every position: the score matrix must be Toeplitz,
    // and equal to the paper's formula in j - i; an offset changes nothing.
    auto qv = torch::randn({d}, opts), kv = torch::randn({d}, opts);
    for (int64_t offset : {int64_t{0}, int64_t{5}}) {
      CAPTURE(offset);
      auto qs = qv.view({1, 1, 1, d}).expand({1, 1, T, d}).clone();  // (1,1,T,d)
      auto ks = kv.view({1, 1, 1, d}).expand({1, 1, T, d}).clone();  // (1,1,T,d)
      ctx.offset = offset;
      rope->transform_qk(qs, ks, ctx);
      auto S = torch::matmul(qs, ks.transpose(-1, -2))[0][0];  // (T,T)
      for (int64_t i = 0; i + 1 < T; ++i)
        for (int64_t j = 0; j + 1 < T; ++j)
          CHECK(std::abs(S[i][j].item<double>() - S[i + 1][j + 1].item<double>()) < 1e-12);
      double worst = 0;
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j)
          worst = std::max(worst, std::abs(S[i][j].item<double>() - rope_dot(qv, kv, i, j, rd, 100)));
      // θ and the angles are float64 (core/position/rope.cpp): only summation order differs.
      CHECK(worst < 1e-10);
    }
  }
}

TEST_CASE("properties: causal outputs at i ignore the tokens after i") {
  const int64_t T = 8, keep = 5;
  const auto tokens = torch::randint(0, kPropertyVocab, {2, T}, torch::kLong);
  auto changed = tokens.clone();
  changed.narrow(1, keep, T - keep).copy_((tokens.narrow(1, keep, T - keep) + 7) % kPropertyVocab);
  for (const auto& name : Registry::get().names()) {
    CAPTURE(name);
    Model m = small_model(small_config(name, true), kPropertyVocab);
    torch::NoGradGuard guard;
    const auto a = m->lm_logits(m->hidden(tokens));   // (B,T,V)
    const auto b = m->lm_logits(m->hidden(changed));  // (B,T,V)
    CHECK(test::max_abs_diff(a.narrow(1, 0, keep), b.narrow(1, 0, keep)) < 1e-6);
    CHECK(test::max_abs_diff(a.narrow(1, keep, T - keep), b.narrow(1, keep, T - keep)) > 1e-3);
    // In encoder mode the same change reaches the earlier positions.
    Model e = small_model(small_config(name, false), kPropertyVocab);
    const auto c = e->hidden(tokens), f = e->hidden(changed);  // (B,T,D)
    CHECK(test::max_abs_diff(c.narrow(1, 0, keep), f.narrow(1, 0, keep)) > 1e-3);
  }
}

TEST_CASE("properties: attention rows sum to 1, masked keys get 0") {
  const auto tokens = torch::randint(0, kPropertyVocab, {2, 8}, torch::kLong);
  auto mask = torch::ones({2, 8}, torch::kBool);
  mask[1].narrow(0, 5, 3).fill_(false);  // sequence 1: 5 real tokens, 3 padding
  const auto upper = torch::ones({8, 8}, torch::kBool).triu(1);  // (T,T) j > i
  for (const auto& name : Registry::get().names()) {
    for (bool causal : {false, true}) {
      CAPTURE(name);
      CAPTURE(causal);
      Model m = small_model(small_config(name, causal), kPropertyVocab);
      for (bool masked : {false, true}) {
        CAPTURE(masked);
        const Run r = forward(m, tokens, 0, masked ? mask : torch::Tensor());
        REQUIRE(r.records.size() == 2);
        for (const auto& rec : r.records) {
          const auto& p = rec.probs;  // (B,H,T,T)
          CHECK(p.min().item<double>() >= 0.0);
          CHECK(test::max_abs_diff(p.sum(-1), torch::ones_like(p.sum(-1))) < 1e-5);
          if (masked) CHECK(p[1].narrow(-1, 5, 3).abs().max().item<double>() == 0.0);
          if (causal)
            CHECK(p.masked_select(upper.view({1, 1, 8, 8})).abs().max().item<double>() == 0.0);
        }
      }
    }
  }
}

TEST_CASE("properties: ALiBi slopes are the paper's geometric sequence") {
  // H = 8: 2^(-8h/8) = 1/2, 1/4, ..., 1/256.
  const std::vector<double> h8 = {1.0 / 2,  1.0 / 4,  1.0 / 8,   1.0 / 16,
                                  1.0 / 32, 1.0 / 64, 1.0 / 128, 1.0 / 256};
  // H = 12 (not a power of 2): the 8-head slopes, then the odd-position slopes of the 16-head
  // sequence 2^(-0.5h): 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
  std::vector<double> h12 = h8;
  for (double e : {0.5, 1.5, 2.5, 3.5}) h12.push_back(std::pow(2.0, -e));
  // H = 6: the 4-head slopes 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3 from the 8-head sequence.
  const std::vector<double> h6 = {0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
  // H = 16: 2^(-h/2).
  std::vector<double> h16;
  for (int h = 1; h <= 16; ++h) h16.push_back(std::pow(2.0, -0.5 * h));
  const std::vector<std::pair<int64_t, std::vector<double>>> cases = {
      {8, h8}, {12, h12}, {6, h6}, {16, h16}, {1, {1.0 / 256}}, {2, {1.0 / 16, 1.0 / 256}}};
  for (const auto& [H, expected] : cases) {
    CAPTURE(H);
    const auto got = alibi_slopes(H);
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-14));
  }
  // The score term the model adds is -m_h·|i - j| with those slopes.
  const Config cfg = small_config("alibi", false, {"model.width=48", "model.heads=12"});
  auto alibi = make_position_encoding("alibi", model_dims(cfg.model), cfg.position);
  const int64_t T = 5;
  auto content = torch::zeros({1, 12, T, T});  // (1,H,T,T)
  auto term = alibi->score_term(content, {}, {}, AttentionContext{});  // (1,H,T,T)
  for (int64_t h = 0; h < 12; ++h)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j)
        CHECK(term[0][h][i][j].item<double>() ==
              doctest::Approx(-h12[h] * std::abs(i - j)).epsilon(1e-6));
}
