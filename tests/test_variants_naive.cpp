// Every registered position variant against a naive loop written here from its formula
// (docs/variants.md and the header comment of each core/position/<variant>.cpp): one attention layer
// plus the variant, float64, bidirectional and causal, clip distances below and above T.
// Learned tables are read from the variant's parameters; everything fixed (clipping, buckets,
// slopes, sinusoids, rotations) is recomputed here without calling the variant's helpers.
#include <doctest/doctest.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/model/attention.h"
#include "core/position/relative_ops.h"
#include "tests/naive_attention.h"
#include "tests/naive_variant_check.h"
#include "tests/variant_helpers.h"

using namespace relpos;
using namespace relpos::test;

namespace {

// ---- formulas --------------------------------------------------------------------------------

// Huang et al. 2020: the sum of the chosen terms over √d, qk optionally scaled per distance.
Formula huang_formula(const Setup& s, std::set<std::string> terms, const std::string& scale_qk) {
  Formula f;
  f.score = [s, terms, scale_qk](const NaiveHeads& x, PositionEncodingImpl& enc) -> ScoreFn {
    const bool uses_table = terms.count("qa") || terms.count("ka") || terms.count("qka");
    auto a = uses_table ? param(enc, "table") : torch::Tensor();           // (L,R,d)
    auto sc = scale_qk != "none" ? param(enc, "scale") : torch::Tensor();  // (L,K+1|R)
    return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
      const int64_t r = j - i, c = clip_offset(r, s.K) + s.K, L = s.layer;
      double e = 0;
      for (int64_t m = 0; m < s.d; ++m) {
        const double q = el(x.q, b, h, i, m), k = el(x.k, b, h, j, m);
        const double am = uses_table ? el(a, L, c, m) : 0.0;
        if (terms.count("qk")) {
          double w = 1.0;
          if (scale_qk == "abs") w = el(sc, L, std::min(std::abs(r), s.K));
          if (scale_qk == "signed") w = el(sc, L, c);
          e += w * q * k;
        }
        if (terms.count("qa")) e += q * am;
        if (terms.count("ka")) e += k * am;
        if (terms.count("qka")) e += q * k * am;
      }
      return e / std::sqrt(static_cast<double>(s.d));
    };
  };
  return f;
}

// Entry (layer, head, row, channel) of a relative table stored (L,R,d), or (L,H,R,d) per head.
double table_el(const torch::Tensor& a, bool per_head, int64_t l, int64_t h, int64_t c, int64_t m) {
  return per_head ? el(a, l, h, c, m) : el(a, l, c, m);
}

Formula shaw_formula(const Setup& s, bool values, bool per_head = false) {
  Formula f;
  f.score = [s, per_head](const NaiveHeads& x, PositionEncodingImpl& enc) -> ScoreFn {
    auto aK = param(enc, "keys");  // (L,R,d) or (L,H,R,d)
    return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
      const int64_t c = clip_offset(j - i, s.K) + s.K;
      double e = 0;
      for (int64_t m = 0; m < s.d; ++m)
        e += el(x.q, b, h, i, m) * (el(x.k, b, h, j, m) + table_el(aK, per_head, s.layer, h, c, m));
      return e / std::sqrt(static_cast<double>(s.d));
    };
  };
  if (values)
    f.value = [s, per_head](PositionEncodingImpl& enc) -> ValueFn {
      auto aV = param(enc, "values");  // (L,R,d) or (L,H,R,d)
      return [=](int64_t h, int64_t i, int64_t j, int64_t m) {
        return table_el(aV, per_head, s.layer, h, clip_offset(j - i, s.K) + s.K, m);
      };
    };
  return f;
}

// Transformer-XL: [(q_i+u)·k_j + (q_i+v)·(R_{i-j} W_R)]/√d, R the sinusoid of width D at i-j.
Formula transformer_xl_formula(const Setup& s, double base) {
  Formula f;
  f.score = [s, base](const NaiveHeads& x, PositionEncodingImpl& enc) -> ScoreFn {
    auto w_r = param(enc, "w_r"), u = param(enc, "u"), v = param(enc, "v");  // (L,Hd,D) (L,H,d)
    const int64_t D = s.H * s.d;
    return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
      const double dist = static_cast<double>(i - j);
      double e = 0;
      for (int64_t m = 0; m < s.d; ++m) {
        double rw = 0;
        for (int64_t c = 0; c < D; ++c) {
          const double freq = std::pow(base, -static_cast<double>(c - c % 2) / D);
          const double R = c % 2 == 0 ? std::sin(dist * freq) : std::cos(dist * freq);
          rw += R * el(w_r, s.layer, h * s.d + m, c);
        }
        const double q = el(x.q, b, h, i, m);
        e += (q + el(u, s.layer, h, m)) * el(x.k, b, h, j, m) + (q + el(v, s.layer, h, m)) * rw;
      }
      return e / std::sqrt(static_cast<double>(s.d));
    };
  };
  return f;
}

// TISA: q·k/√d + Σ_s a_hs exp(-|b_hs| (r - c_hs)²), r = j - i.
Formula tisa_formula(const Setup& s) {
  Formula f;
  f.score = [s](const NaiveHeads& x, PositionEncodingImpl& enc) -> ScoreFn {
    auto a = param(enc, "a"), bw = param(enc, "b"), c = param(enc, "c");  // (L,H,S)
    auto content = content_score(x);
    return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
      double fr = 0;
      for (int64_t k = 0; k < a.size(2); ++k) {
        const double diff = static_cast<double>(j - i) - el(c, s.layer, h, k);
        fr += el(a, s.layer, h, k) * std::exp(-std::abs(el(bw, s.layer, h, k)) * diff * diff);
      }
      return content(b, h, i, j) + fr;
    };
  };
  return f;
}

// T5's bucket, written from the formula in docs/variants.md / t5_bias.cpp's header (and HF's T5).
int64_t naive_t5_bucket(int64_t r, bool causal, int64_t N, int64_t M) {
  int64_t offset = 0, n = 0;
  if (!causal) {
    N /= 2;
    offset = r > 0 ? N : 0;
    n = std::abs(r);
  } else {
    n = std::max<int64_t>(-r, 0);
  }
  const int64_t exact = N / 2;
  if (n < exact) return offset + n;
  const double lg =
      std::log(static_cast<double>(n) / exact) / std::log(static_cast<double>(M) / exact);
  return offset +
         std::min<int64_t>(N - 1, exact + static_cast<int64_t>(std::floor(lg * (N - exact))));
}

Formula t5_formula(const Setup& s, int64_t N, int64_t M) {
  Formula f;
  f.score = [s, N, M](const NaiveHeads& x, PositionEncodingImpl& enc) -> ScoreFn {
    auto bias = param(enc, "bias");  // (N,H)
    auto content = content_score(x);
    return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
      return content(b, h, i, j) + el(bias, naive_t5_bucket(j - i, s.causal, N, M), h);
    };
  };
  return f;
}

// ALiBi slopes written out by hand from the paper's rule (geometric 2^(-8h/n) for the largest
// power of two n <= H, then every other slope of the 2n sequence).
std::vector<double> hand_slopes(int64_t H) {
  auto p = [](double e) { return std::pow(2.0, e); };
  switch (H) {
    case 1:
      return {p(-8)};
    case 2:
      return {p(-4), p(-8)};
    case 3:
      return {p(-4), p(-8), p(-2)};
    case 4:
      return {p(-2), p(-4), p(-6), p(-8)};
    case 5:
      return {p(-2), p(-4), p(-6), p(-8), p(-1)};
    case 6:
      return {p(-2), p(-4), p(-6), p(-8), p(-1), p(-3)};
    case 8:
      return {p(-1), p(-2), p(-3), p(-4), p(-5), p(-6), p(-7), p(-8)};
    case 12:
      return {p(-1), p(-2), p(-3),   p(-4),   p(-5),   p(-6),
              p(-7), p(-8), p(-0.5), p(-1.5), p(-2.5), p(-3.5)};
    default:
      FAIL("no hand slopes for H=" << H);
      return {};
  }
}

Formula alibi_formula(const Setup& s) {
  Formula f;
  f.score = [s](const NaiveHeads& x, PositionEncodingImpl&) -> ScoreFn {
    auto slopes = hand_slopes(s.H);
    auto content = content_score(x);
    return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
      // causal: -m_h·(i-j) on the visible j <= i; encoder: -m_h·|i-j|.
      const double dist =
          s.causal ? static_cast<double>(i - j) : std::abs(static_cast<double>(i - j));
      return content(b, h, i, j) - slopes[h] * dist;
    };
  };
  return f;
}

// RoPE: pair (2m, 2m+1) at absolute position p rotated by p·base^(-2m/rd).
torch::Tensor naive_rotate(const torch::Tensor& x, int64_t offset, int64_t rd, double base) {
  auto y = x.clone();  // (B,H,T,d)
  auto Y = y.accessor<double, 4>();
  for (int64_t b = 0; b < x.size(0); ++b)
    for (int64_t h = 0; h < x.size(1); ++h)
      for (int64_t t = 0; t < x.size(2); ++t)
        for (int64_t m = 0; m < rd / 2; ++m) {
          const double ang = static_cast<double>(offset + t) * std::pow(base, -2.0 * m / rd);
          const double x0 = el(x, b, h, t, 2 * m), x1 = el(x, b, h, t, 2 * m + 1);
          Y[b][h][t][2 * m] = x0 * std::cos(ang) - x1 * std::sin(ang);
          Y[b][h][t][2 * m + 1] = x0 * std::sin(ang) + x1 * std::cos(ang);
        }
  return y;
}

Formula rope_formula(const Setup& s, int64_t rotary_dim, double base) {
  Formula f;
  const int64_t rd = rotary_dim > 0 ? rotary_dim : s.d;
  f.transform = [s, rd, base](NaiveHeads& x) {
    x.q = naive_rotate(x.q, s.offset, rd, base);
    x.k = naive_rotate(x.k, s.offset, rd, base);
  };
  f.score = [](const NaiveHeads& x, PositionEncodingImpl&) { return content_score(x); };
  return f;
}

Formula content_formula(const Setup&) {
  Formula f;
  f.score = [](const NaiveHeads& x, PositionEncodingImpl&) { return content_score(x); };
  return f;
}

std::string clip_yaml(int64_t K) { return "{clip: " + std::to_string(K) + "}"; }
std::string no_yaml(int64_t) { return "{}"; }

}  // namespace

const bool kNaiveAbsolute = naive_tests({"none", "sinusoidal", "learned"});
TEST_CASE("naive: none, sinusoidal and learned add nothing inside attention") {
  for (const char* type : {"none", "sinusoidal", "learned"})
    check_all_modes(type, no_yaml, content_formula);
}

const bool kNaiveShaw = naive_tests({"shaw"});
TEST_CASE("naive: shaw with and without value vectors") {
  check_all_modes("shaw", clip_yaml, [](const Setup& s) { return shaw_formula(s, true); });
  check_all_modes(
      "shaw", [](int64_t K) { return "{clip: " + std::to_string(K) + ", values: false}"; },
      [](const Setup& s) { return shaw_formula(s, false); });
}

TEST_CASE("naive: shaw and huang_m4 with one table per head") {
  check_all_modes(
      "shaw", [](int64_t K) { return "{clip: " + std::to_string(K) + ", per_head: true}"; },
      [](const Setup& s) { return shaw_formula(s, true, true); });
  check_all_modes(
      "shaw",
      [](int64_t K) { return "{clip: " + std::to_string(K) + ", values: false, per_head: true}"; },
      [](const Setup& s) { return shaw_formula(s, false, true); });
  // ((q+a_h)·(k+a_h) - a_h·a_h)/√d with head h's own table a_h.
  check_all_modes(
      "huang_m4", [](int64_t K) { return "{clip: " + std::to_string(K) + ", per_head: true}"; },
      [](const Setup& s) {
        Formula f;
        f.score = [s](const NaiveHeads& x, PositionEncodingImpl& enc) -> ScoreFn {
          auto a = param(enc, "table");  // (L,H,R,d)
          REQUIRE(a.dim() == 4);
          return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
            const int64_t c = clip_offset(j - i, s.K) + s.K;
            double qa_ka = 0, aa = 0;
            for (int64_t m = 0; m < s.d; ++m) {
              const double am = el(a, s.layer, h, c, m);
              qa_ka += (el(x.q, b, h, i, m) + am) * (el(x.k, b, h, j, m) + am);
              aa += am * am;
            }
            return (qa_ka - aa) / std::sqrt(static_cast<double>(s.d));
          };
        };
        return f;
      });
}

TEST_CASE("naive: transformer_xl's content part is u·k_j/√d, and its term less that part is the "
          "position-only (q_i + v)·(R_{i-j} W_R)/√d that snapshots record") {
  Setup s;
  torch::manual_seed(77);
  auto dims = tiny_dims(s.H, s.d, false);
  MultiHeadAttention attn(dims.width, s.H, 0.0);
  attn->to(torch::kDouble);
  randomize(*attn, 0.5);
  auto enc = make_variant("transformer_xl", dims, "{}");
  randomize(*enc, 1.0);
  auto x = torch::randn({s.B, s.T, dims.width}, torch::kDouble);  // (B,T,D)
  AttentionContext ctx;
  ctx.layer = s.layer;
  ctx.length = s.T;
  AttentionRecord rec;
  {
    torch::NoGradGuard guard;
    attn->forward(x, ctx, {enc}, {}, &rec);
  }
  REQUIRE(rec.content_parts.size() == 1);
  REQUIRE(rec.content_parts[0].defined());
  NaiveHeads heads{naive_heads(x, attn->query, s.H), naive_heads(x, attn->key, s.H),
                   naive_heads(x, attn->value, s.H)};
  auto u = param(*enc, "u");  // (L,H,d)
  // The whole term by the formula, and u·k_j/√d alone.
  const ScoreFn whole = transformer_xl_formula(s, 10000.0).score(heads, *enc);
  const double rsd = 1.0 / std::sqrt(static_cast<double>(s.d));
  double worst_part = 0, worst_position = 0;
  const auto position = rec.terms[0] - rec.content_parts[0];  // (B,H,T,T)
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.H; ++h)
      for (int64_t i = 0; i < s.T; ++i)
        for (int64_t j = 0; j < s.T; ++j) {
          double uk = 0;
          for (int64_t m = 0; m < s.d; ++m) uk += el(u, s.layer, h, m) * el(heads.k, b, h, j, m);
          uk *= rsd;
          worst_part = std::max(worst_part, std::abs(el(rec.content_parts[0], b, h, 0, j) - uk));
          // whole = content q·k/√d + u·k/√d + position part.
          const double want = whole(b, h, i, j) - dot_qk(heads, b, h, i, j) * rsd - uk;
          worst_position = std::max(worst_position, std::abs(el(position, b, h, i, j) - want));
        }
  CHECK(worst_part < kNaiveTol);
  CHECK(worst_position < kNaiveTol);
  // Every other variant's term is positional as a whole.
  for (const auto& name : Registry::get().names()) {
    if (name == "transformer_xl") continue;
    CAPTURE(name);
    auto other = make_variant(name, dims, "{}");
    AttentionRecord r;
    torch::NoGradGuard guard;
    attn->forward(x, ctx, {other}, {}, &r);
    CHECK_FALSE(r.content_parts.at(0).defined());
  }
}

const bool kNaiveTransformerXl = naive_tests({"transformer_xl"});
TEST_CASE("naive: transformer_xl") {
  check_all_modes("transformer_xl", no_yaml,
                  [](const Setup& s) { return transformer_xl_formula(s, 10000.0); });
  check_all_modes(
      "transformer_xl", [](int64_t) { return "{base: 7.5}"; },
      [](const Setup& s) { return transformer_xl_formula(s, 7.5); });
}

const bool kNaiveHuangPresets = naive_tests({"huang_m1", "huang_m2", "huang_m3", "huang_m4"});
TEST_CASE("naive: huang presets m1..m4") {
  check_all_modes("huang_m1", clip_yaml,
                  [](const Setup& s) { return huang_formula(s, {"qk"}, "abs"); });
  check_all_modes("huang_m2", clip_yaml,
                  [](const Setup& s) { return huang_formula(s, {"qk"}, "signed"); });
  check_all_modes("huang_m3", clip_yaml,
                  [](const Setup& s) { return huang_formula(s, {"qka"}, "none"); });
  // m4 written as ((q+a)·(k+a) - a·a)/√d, the form verified against the author's code.
  check_all_modes("huang_m4", clip_yaml, [](const Setup& s) {
    Formula f;
    f.score = [s](const NaiveHeads& x, PositionEncodingImpl& enc) -> ScoreFn {
      auto a = param(enc, "table");  // (L,R,d)
      return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
        const int64_t c = clip_offset(j - i, s.K) + s.K;
        double qa_ka = 0, aa = 0;
        for (int64_t m = 0; m < s.d; ++m) {
          const double am = el(a, s.layer, c, m);
          qa_ka += (el(x.q, b, h, i, m) + am) * (el(x.k, b, h, j, m) + am);
          aa += am * am;
        }
        return (qa_ka - aa) / std::sqrt(static_cast<double>(s.d));
      };
    };
    return f;
  });
}

// huang_m3's, transformer_xl's and cope's terms can include the content product: without a
// snapshot record attention forms no content scores and the term is the whole score
// (position_encoding.h, can_include_content). The record path, checked against the naive loops,
// forms content and the term apart; both routes must give the same layer output and gradients,
// alone, before or after another encoding's bias, and in stacks where attention must fall back
// (shaw's values, a second includer), with the CPU kernels and with the tensor ops.
TEST_CASE("attention: a term that includes the content product, alone and stacked") {
  for (const auto& stack : std::vector<std::vector<std::string>>{{"huang_m3"},
                                                                 {"alibi", "huang_m3"},
                                                                 {"huang_m3", "tisa"},
                                                                 {"huang_m3", "shaw"},
                                                                 {"huang_m3", "huang_m4"},
                                                                 {"huang", "huang_m3"},
                                                                 {"transformer_xl"},
                                                                 {"alibi", "transformer_xl"},
                                                                 {"transformer_xl", "huang_m3"},
                                                                 {"shaw", "transformer_xl"},
                                                                 {"cope"},
                                                                 {"alibi", "cope"},
                                                                 {"cope", "tisa"},
                                                                 {"cope", "huang_m3"}}) {
    for (bool causal : {false, true}) {
      for (bool tensor_ops : {false, true}) {
        // cope's node and the skew kernels also as tensor ops (the route of other devices and
        // bfloat16).
        std::optional<relpos::detail::SkewTensorOpsScope> scope;
        if (tensor_ops) scope.emplace();
        CAPTURE(tensor_ops);
        CAPTURE(stack.size());
        CAPTURE(stack.front());
        CAPTURE(stack.back());
        CAPTURE(causal);
        torch::manual_seed(31);
        const int64_t B = 2, H = 2, d = 3, T = 7;
        auto dims = tiny_dims(H, d, causal);
        MultiHeadAttention attn(dims.width, H, 0.0);
        attn->to(torch::kDouble);
        randomize(*attn, 0.5);
        EncodingList encodings;
        for (const auto& type : stack) {
          const std::string yaml = type == "huang" ? "{terms: [ka, qka], clip: 2}" : "{clip: 2}";
          const bool no_clip = type == "alibi" || type == "tisa" || type == "transformer_xl";
          auto enc = make_variant(type, dims,
                                  no_clip          ? "{}"
                                  : type == "cope" ? "{n_pos: 4}"
                                                   : yaml);
          randomize(*enc, 0.7);
          encodings.push_back(enc);
        }
        auto x = torch::randn({B, T, dims.width}, torch::kDouble);  // (B,T,D)
        auto w = torch::randn({B, T, dims.width}, torch::kDouble);  // (B,T,D)
        AttentionContext ctx;
        ctx.length = T;
        ctx.causal = causal;
        std::vector<torch::Tensor> params;
        for (const auto& e : encodings)
          for (const auto& p : e->parameters()) params.push_back(p);
        for (const auto& p : attn->parameters()) params.push_back(p);
        auto route = [&](bool record) {
          auto xr = x.clone().requires_grad_(true);
          AttentionRecord rec;
          auto y = attn->forward(xr, ctx, encodings, {}, record ? &rec : nullptr);  // (B,T,D)
          auto inputs = params;
          inputs.push_back(xr);
          auto grads = torch::autograd::grad({(y * w).sum()}, inputs);
          grads.push_back(y.detach());
          return grads;
        };
        auto with_record = route(true), plain = route(false);
        REQUIRE(with_record.size() == plain.size());
        for (size_t i = 0; i < plain.size(); ++i) {
          CAPTURE(i);
          CHECK(max_abs_diff(plain[i], with_record[i]) < kNaiveTol);
        }
      }
    }
  }
}

const bool kNaiveHuang = naive_tests({"huang"});
TEST_CASE("naive: huang general mechanism, several term combinations") {
  struct Combo {
    std::set<std::string> terms;
    std::string yaml_terms, scale;
  };
  for (const Combo& c : std::vector<Combo>{{{"qk", "qa", "ka"}, "[qk, qa, ka]", "none"},
                                           {{"qk", "qka"}, "[qk, qka]", "abs"},
                                           {{"qk", "qa", "qka"}, "[qk, qa, qka]", "signed"},
                                           {{"qa", "ka"}, "[qa, ka]", "none"},
                                           {{"ka", "qka"}, "[ka, qka]", "none"},
                                           {{"qk", "ka"}, "[ka, qk]", "abs"}}) {
    check_all_modes(
        "huang",
        [&](int64_t K) {
          return "{terms: " + c.yaml_terms + ", scale_qk: " + c.scale +
                 ", clip: " + std::to_string(K) + "}";
        },
        [&](const Setup& s) { return huang_formula(s, c.terms, c.scale); });
  }
}

const bool kNaiveTisa = naive_tests({"tisa"});
TEST_CASE("naive: tisa") {
  check_all_modes("tisa", no_yaml, tisa_formula);
  check_all_modes(
      "tisa", [](int64_t) { return "{kernels: 2}"; }, tisa_formula);
}

const bool kNaiveT5 = naive_tests({"t5_bias"});
TEST_CASE("naive: t5_bias, default and small buckets so the log range is used") {
  check_all_modes("t5_bias", no_yaml, [](const Setup& s) { return t5_formula(s, 32, 128); });
  check_all_modes(
      "t5_bias", [](int64_t) { return "{buckets: 8, max_distance: 10}"; },
      [](const Setup& s) { return t5_formula(s, 8, 10); });
}

const bool kNaiveAlibi = naive_tests({"alibi"});
TEST_CASE("naive: alibi") {
  check_all_modes("alibi", no_yaml, alibi_formula);
  // The fixed slopes themselves, including head counts that are not powers of two.
  for (int64_t H : {1, 2, 3, 4, 5, 6, 8, 12}) {
    CAPTURE(H);
    auto enc = make_variant("alibi", tiny_dims(H, 4, false), "{}");
    auto slopes = enc->named_buffers()["slopes"].to(torch::kDouble);  // (H)
    CHECK(max_abs_diff(slopes, torch::tensor(hand_slopes(H), torch::kDouble)) < kNaiveTol);
  }
}

const bool kNaiveRope = naive_tests({"rope"});
TEST_CASE("naive: rope, full and partial rotary width") {
  check_all_modes("rope", no_yaml, [](const Setup& s) { return rope_formula(s, 0, 10000.0); });
  check_all_modes(
      "rope", [](int64_t) { return "{rotary_dim: 2, base: 100}"; },
      [](const Setup& s) { return rope_formula(s, 2, 100.0); });
}

TEST_CASE("naive: every registered variant is covered by this file or its sibling") {
  const auto names = Registry::get().names();
  for (const auto& name : names) {
    CAPTURE(name);
    CHECK_MESSAGE(naive_tested().count(name) == 1,
                  "no naive-loop test of this variant: add one here (README.md, \"Adding a "
                  "position encoding\")");
  }
  for (const auto& name : naive_tested()) {
    CAPTURE(name);
    CHECK(std::find(names.begin(), names.end(), name) != names.end());  // no stale name
  }
}
