// The kernel, decay and contextual variants (deberta, kerple_log, kerple_power, fire, xpos and
// cope) against naive loops written here from each paper's formula (docs/variants.md, and the header of core/position/<variant>.cpp for the
// conventions the papers leave open): one attention layer plus the variant, float64,
// bidirectional and causal, through tests/naive_variant_check.h. Learned values are read from
// the variant's parameters; clipping, buckets, kernels, rotations, decays and contextual
// positions are recomputed here.
#include <doctest/doctest.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/model/attention.h"
#include "tests/naive_attention.h"
#include "tests/naive_variant_check.h"
#include "tests/variant_helpers.h"

using namespace relpos;
using namespace relpos::test;

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// ---- deberta ---------------------------------------------------------------------------------

// The paper's δ(a, b) for clip distance k: 0 for a - b <= -k, 2k - 1 for a - b >= k, a - b + k
// otherwise.
int64_t paper_delta(int64_t a, int64_t b, int64_t k) {
  const int64_t s = a - b;
  if (s <= -k) return 0;
  if (s >= k) return 2 * k - 1;
  return s + k;
}

// DeBERTa v2's log bucket of the offset s = a - b (bucket span k, max distance M), as its row.
int64_t log_delta(int64_t a, int64_t b, int64_t k, int64_t M) {
  const int64_t s = a - b, mid = k / 2;
  const double sign = s < 0 ? -1.0 : (s > 0 ? 1.0 : 0.0);
  const double abs_pos = (s < mid && s > -mid) ? mid - 1.0 : std::abs(static_cast<double>(s));
  const double log_pos =
      std::ceil(std::log(abs_pos / mid) / std::log((M - 1.0) / mid) * (mid - 1.0)) + mid;
  const double bucket = abs_pos <= mid ? static_cast<double>(s) : log_pos * sign;
  return std::min<int64_t>(2 * k - 1, std::max<int64_t>(0, static_cast<int64_t>(bucket) + k));
}

struct DebertaCase {
  bool shared = false, per_layer = false, log = false;
  int64_t max_distance = 512;
};

// e = (q_i·k_j + q_i·K^r_{δ(i,j)} + k_j·Q^r_{δ(j,i)}) / √(3d), K^r = P W_{K,r}, Q^r = P W_{Q,r}
// (or the layer's W_K, W_Q with their biases when shared).
Formula deberta_formula(const Setup& s, const DebertaCase& c) {
  Formula f;
  f.score_with_layer = [s, c](const NaiveHeads& x, PositionEncodingImpl& enc,
                              const MultiHeadAttentionImpl& attn) -> ScoreFn {
    auto P = param(enc, "table");  // (Lt,2K,D)
    const int64_t tl = c.per_layer ? s.layer : 0;
    REQUIRE(P.size(0) == (c.per_layer ? 2 : 1));
    torch::Tensor wq, wk, bq, bk;  // (Hd,D), (Hd)
    if (c.shared) {
      wq = attn.query->weight.detach();
      wk = attn.key->weight.detach();
      bq = attn.query->bias.detach();
      bk = attn.key->bias.detach();
    } else {
      wq = param(enc, "w_q_r")[s.layer];
      wk = param(enc, "w_k_r")[s.layer];
    }
    const int64_t D = P.size(2);
    // Channel m of head h of row `row` of P W (+ b).
    auto project = [=](const torch::Tensor& w, const torch::Tensor& bias, int64_t row, int64_t h,
                       int64_t m) {
      double v = c.shared ? el(bias, h * s.d + m) : 0.0;
      for (int64_t n = 0; n < D; ++n) v += el(P, tl, row, n) * el(w, h * s.d + m, n);
      return v;
    };
    auto delta = [=](int64_t a, int64_t b) {
      return c.log ? log_delta(a, b, s.K, c.max_distance) : paper_delta(a, b, s.K);
    };
    return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
      double e = 0;
      for (int64_t m = 0; m < s.d; ++m) {
        const double q = el(x.q, b, h, i, m), k = el(x.k, b, h, j, m);
        e += q * k + q * project(wk, bk, delta(i, j), h, m) + k * project(wq, bq, delta(j, i), h, m);
      }
      return e / std::sqrt(3.0 * s.d);
    };
  };
  return f;
}

std::string deberta_yaml(int64_t K, const DebertaCase& c) {
  return "{clip: " + std::to_string(K) + ", share_projections: " + (c.shared ? "true" : "false") +
         ", table_per_layer: " + (c.per_layer ? "true" : "false") +
         ", bucketing: " + (c.log ? "log" : "clip") +
         ", max_distance: " + std::to_string(c.max_distance) + "}";
}

// ---- kerple ----------------------------------------------------------------------------------

// log: -a·log(1 + b|r|), a = softplus(α), b = softplus(β); power: -a·|r|^b, b = 2σ(β).
Formula kerple_formula(const Setup& s, bool power) {
  Formula f;
  f.score = [s, power](const NaiveHeads& x, PositionEncodingImpl& enc) -> ScoreFn {
    auto alpha = param(enc, "alpha"), beta = param(enc, "beta");  // (L,H)
    auto content = content_score(x);
    return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
      const double a = test::softplus(el(alpha, s.layer, h)),
                   r = std::abs(static_cast<double>(j - i));
      const double bias =
          power ? -a * (r == 0 ? 0.0 : std::pow(r, 2.0 * sigmoid(el(beta, s.layer, h))))
                : -a * std::log(1.0 + test::softplus(el(beta, s.layer, h)) * r);
      return content(b, h, i, j) + bias;
    };
  };
  return f;
}

// ---- fire ------------------------------------------------------------------------------------

// f_h(x) = Σ_w w2_hw·relu(w1_w·x + b1_w), x = ψ(i - j)/ψ(max(L, i)) for j <= i and
// -ψ(j - i)/ψ(max(L, T-1-t_i)) for j > i, ψ(x) = log(c·x + 1), c = softplus(γ), L = |λ|,
// normalizers floored at 1; i the absolute position offset + t_i.
Formula fire_formula(const Setup& s) {
  Formula f;
  f.score = [s](const NaiveHeads& x, PositionEncodingImpl& enc) -> ScoreFn {
    auto w1 = param(enc, "w1"), b1 = param(enc, "b1");  // (L,W)
    auto w2 = param(enc, "w2");                         // (L,H,W)
    const double c = test::softplus(el(param(enc, "c_raw"), s.layer));
    const double L = std::abs(el(param(enc, "threshold_raw"), s.layer));
    auto content = content_score(x);
    const int64_t W = w1.size(1), T = x.q.size(2);
    return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
      auto psi = [c](double v) { return std::log(c * v + 1.0); };
      double in;
      if (j <= i) {
        in = psi(static_cast<double>(i - j)) /
             psi(std::max({L, static_cast<double>(s.offset + i), 1.0}));
      } else {
        in = -psi(static_cast<double>(j - i)) /
             psi(std::max({L, static_cast<double>(T - 1 - i), 1.0}));
      }
      double out = 0;
      for (int64_t w = 0; w < W; ++w)
        out += el(w2, s.layer, h, w) * std::max(0.0, el(w1, s.layer, w) * in + el(b1, s.layer, w));
      return content(b, h, i, j) + out;
    };
  };
  return f;
}

// ---- xpos ------------------------------------------------------------------------------------

// Pair m at absolute position p rotated by p·base^(-2m/rd) and scaled by ζ_m^{sign·p/γ},
// ζ_m = (2m/rd + ζ₀)/(1 + ζ₀): sign +1 for queries, -1 for keys (no centring: the paper's form).
torch::Tensor naive_xpos(const torch::Tensor& x, int64_t offset, int64_t rd, double base,
                         double gamma, double zeta0, double sign) {
  auto y = x.clone();  // (B,H,T,d)
  auto Y = y.accessor<double, 4>();
  for (int64_t b = 0; b < x.size(0); ++b)
    for (int64_t h = 0; h < x.size(1); ++h)
      for (int64_t t = 0; t < x.size(2); ++t)
        for (int64_t m = 0; m < rd / 2; ++m) {
          const double p = static_cast<double>(offset + t);
          const double ang = p * std::pow(base, -2.0 * m / rd);
          const double zeta = (2.0 * m / rd + zeta0) / (1.0 + zeta0);
          const double sc = std::pow(zeta, sign * p / gamma);
          const double x0 = el(x, b, h, t, 2 * m), x1 = el(x, b, h, t, 2 * m + 1);
          Y[b][h][t][2 * m] = sc * (x0 * std::cos(ang) - x1 * std::sin(ang));
          Y[b][h][t][2 * m + 1] = sc * (x0 * std::sin(ang) + x1 * std::cos(ang));
        }
  return y;
}

Formula xpos_formula(const Setup& s, int64_t rotary_dim, double base, double gamma, double zeta0) {
  Formula f;
  const int64_t rd = rotary_dim > 0 ? rotary_dim : s.d;
  f.transform = [s, rd, base, gamma, zeta0](NaiveHeads& x) {
    x.q = naive_xpos(x.q, s.offset, rd, base, gamma, zeta0, 1.0);
    x.k = naive_xpos(x.k, s.offset, rd, base, gamma, zeta0, -1.0);
  };
  f.score = [](const NaiveHeads& x, PositionEncodingImpl&) { return content_score(x); };
  return f;
}

// ---- cope ------------------------------------------------------------------------------------

// g_it = σ(q_i·k_t/√d); p_ij = Σ_{t=j..i} g_it (j <= i), Σ_{t=i..j} g_it (j > i, encoders),
// min(p, n-1); e_ij = content + q_i·((1-w)E[⌊p⌋] + w E[⌈p⌉]), w = p - ⌊p⌋, E the table (keys
// after the query: table_after).
Formula cope_formula(const Setup& s) {
  Formula f;
  f.score = [s](const NaiveHeads& x, PositionEncodingImpl& enc) -> ScoreFn {
    auto E = param(enc, "table");  // (L,n,d)
    auto Ea = s.causal ? torch::Tensor() : param(enc, "table_after");
    if (s.causal) REQUIRE(enc.named_parameters().find("table_after") == nullptr);
    auto content = content_score(x);
    const int64_t n = E.size(1);
    return [=](int64_t b, int64_t h, int64_t i, int64_t j) {
      if (s.causal && j > i) return content(b, h, i, j);  // masked: no position at all
      double p = 0;
      for (int64_t t = std::min(i, j); t <= std::max(i, j); ++t) p += sigmoid(content(b, h, i, t));
      p = std::min(p, static_cast<double>(n - 1));
      const double lo = std::floor(p), w = p - lo;
      const auto lo_i = static_cast<int64_t>(lo), hi_i = static_cast<int64_t>(std::ceil(p));
      const torch::Tensor& table = j <= i ? E : Ea;
      double term = 0;
      for (int64_t m = 0; m < s.d; ++m)
        term += el(x.q, b, h, i, m) *
                ((1 - w) * el(table, s.layer, lo_i, m) + w * el(table, s.layer, hi_i, m));
      return content(b, h, i, j) + term;
    };
  };
  return f;
}

}  // namespace

const bool kNaiveKernels =
    naive_tests({"deberta", "kerple_log", "kerple_power", "fire", "xpos", "cope"});

TEST_CASE("naive: deberta, clipped and log-bucketed, own or the layer's projections") {
  for (const DebertaCase& c :
       std::vector<DebertaCase>{{false, false, false}, {true, false, false}, {false, true, false},
                                {true, true, false}}) {
    CAPTURE(c.shared);
    CAPTURE(c.per_layer);
    check_all_modes(
        "deberta", [c](int64_t K) { return deberta_yaml(K, c); },
        [c](const Setup& s) { return deberta_formula(s, c); });
  }
  // Log buckets: a bucket span of 4 (exact up to |s| = 2) and a short maximum distance, so that
  // the log range and the last bucket are reached within 9 tokens.
  for (bool causal : {false, true})
    for (int64_t M : {5, 7}) {
      Setup s;
      s.causal = causal;
      s.T = 9;
      s.K = 4;
      const DebertaCase c{false, false, true, M};
      check_variant("deberta", deberta_yaml(4, c), s, deberta_formula(s, c));
    }
}

TEST_CASE("naive: deberta log buckets at hand-checked offsets") {
  // Bucket span 8 (m = 4), max distance 16: |s| <= 4 exact, then m + ceil(log(|s|/4)/log(15/4)·3).
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {0, 8}, {3, 11}, {4, 12}, {5, 13}, {8, 14}, {15, 15}, {40, 15}, {-5, 3}, {-15, 1}, {-40, 0}};
  // The variant's own rows, as exported for r = j - i in [-40, 40]: c2p reads δ(i,j), the
  // offset i - j = -r; p2c reads δ(j,i), the offset j - i = r.
  auto enc = make_variant("deberta", tiny_dims(2, 4, false),
                          "{clip: 8, bucketing: log, max_distance: 16}");
  ExportOptions o;
  o.radius = 40;
  torch::Tensor c2p, p2c;
  for (const auto& t : enc->export_tensors(o)) {
    if (t.name == "c2p_rows") c2p = t.value;
    if (t.name == "p2c_rows") p2c = t.value;
  }
  REQUIRE(c2p.defined());
  REQUIRE(p2c.defined());
  for (const auto& [offset, row] : expected) {
    CAPTURE(offset);
    CHECK(log_delta(offset, 0, 8, 16) == row);
    CHECK(c2p[40 - offset].item<double>() == static_cast<double>(row));
    CHECK(p2c[40 + offset].item<double>() == static_cast<double>(row));
  }
}

TEST_CASE("naive: kerple_log and kerple_power") {
  check_all_modes("kerple_log", [](int64_t) { return "{}"; },
                  [](const Setup& s) { return kerple_formula(s, false); });
  check_all_modes("kerple_power", [](int64_t) { return "{}"; },
                  [](const Setup& s) { return kerple_formula(s, true); });
}

TEST_CASE("naive: fire, default and narrow MLP") {
  check_all_modes("fire", [](int64_t) { return "{}"; }, fire_formula);
  check_all_modes("fire", [](int64_t) { return "{mlp_width: 3, init_threshold: 1}"; },
                  fire_formula);
}

TEST_CASE("naive: xpos, full and partial rotary width, fast decay") {
  check_all_modes("xpos", [](int64_t) { return "{}"; },
                  [](const Setup& s) { return xpos_formula(s, 0, 10000.0, 512.0, 0.4); });
  check_all_modes(
      "xpos", [](int64_t) { return "{rotary_dim: 2, base: 100, scale_base: 3, zeta_offset: 0.2}"; },
      [](const Setup& s) { return xpos_formula(s, 2, 100.0, 3.0, 0.2); });
}

TEST_CASE("naive: xpos blockwise causal attention hides the keys before the previous block") {
  // The paper's blockwise causal attention, block_size w: query i (absolute position o + i) sees
  // key j only when ⌊(o + j)/w⌋ >= ⌊(o + i)/w⌋ - 1. Recomputed here from that rule: the layer's
  // probabilities and output against the naive loop with the hidden keys left out of the
  // softmax, and its score term exactly -inf on the hidden keys and 0 elsewhere.
  struct Case {
    int64_t offset, w;
    bool term;   // the sequence reaches past the first block (else the layer adds no term)
    bool hides;  // some key is before its query's previous block
  };
  for (const Case& c : std::vector<Case>{{2, 3, true, true},
                                         {0, 2, true, true},
                                         {5, 2, true, true},
                                         {5, 4, true, false},
                                         {0, 7, false, false}}) {
    CAPTURE(c.offset);
    CAPTURE(c.w);
    Setup s;
    s.causal = true;
    s.offset = c.offset;
    auto hidden = [&](int64_t i, int64_t j) {
      return (c.offset + j) / c.w < (c.offset + i) / c.w - 1;  // positions >= 0: / is the floor
    };
    LayerRun run = run_layer("xpos", "{block_size: " + std::to_string(c.w) + "}", s);
    NaiveHeads& heads = run.heads;
    xpos_formula(s, 0, 10000.0, 512.0, 0.4).transform(heads);
    const ScoreFn content = content_score(heads);
    const ScoreFn score = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
      return hidden(i, j) ? -std::numeric_limits<double>::infinity() : content(b, h, i, j);
    };
    const NaiveResult naive = naive_attend(heads, *run.attn, true, score, ValueFn{});
    CHECK(max_abs_diff(run.rec.probs, naive.probs) < kNaiveTol);
    CHECK(max_abs_diff(run.y, naive.out) < kNaiveTol);
    CHECK(max_abs_diff(run.y_plain, naive.out) < kNaiveTol);

    REQUIRE(run.rec.terms.size() == 1);
    CHECK(run.rec.terms[0].defined() == c.term);
    if (!run.rec.terms[0].defined()) continue;
    const auto term = run.rec.terms[0].expand({s.B, s.H, s.T, s.T}).contiguous();  // (B,H,T,T)
    int64_t n_hidden = 0;
    for (int64_t i = 0; i < s.T; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        CAPTURE(i);
        CAPTURE(j);
        n_hidden += hidden(i, j);
        for (int64_t h = 0; h < s.H; ++h) {
          const double t = term[0][h][i][j].item<double>();
          if (hidden(i, j))
            CHECK(t == -std::numeric_limits<double>::infinity());
          else
            CHECK(t == 0.0);
        }
      }
    CHECK((n_hidden > 0) == c.hides);
  }
}

TEST_CASE("naive: cope, positions clamped and not") {
  check_all_modes("cope", [](int64_t) { return "{}"; }, cope_formula);
  check_all_modes("cope", [](int64_t) { return "{n_pos: 3}"; }, cope_formula);
}
