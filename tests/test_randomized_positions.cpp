// Randomized positional encodings (position.randomized_max, Ruoss et al. 2023): the drawn
// positions are sorted, distinct, in range, uniform over subsets and a pure function of
// (seed, step, row); the encodings that read absolute positions use them (learned, sinusoidal:
// the rows added equal the table at the drawn positions, written here by loops; rope, xpos: the
// rotation at the drawn positions); without them the model computes what it computed before;
// training with them is reproducible across a resume.
#include <doctest/doctest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/train/randomized_positions.h"
#include "core/util/errors.h"
#include "tests/naive_attention.h"
#include "tests/small_model.h"
#include "tests/tiny_run.h"
#include "tests/variant_helpers.h"

using namespace relpos;
using namespace relpos::test;

TEST_CASE("randomized positions: sorted, distinct, in range, deterministic in (seed, step)") {
  const int64_t B = 16, T = 12, N = 40;
  const auto p = randomized_positions(7, 3, B, T, N);  // (B,T)
  REQUIRE(p.sizes() == torch::IntArrayRef({B, T}));
  REQUIRE((p.scalar_type() == torch::kLong));
  auto P = p.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    CAPTURE(b);
    CHECK(P[b][0] >= 0);
    CHECK(P[b][T - 1] < N);
    for (int64_t t = 1; t < T; ++t) CHECK(P[b][t] > P[b][t - 1]);  // sorted and distinct
  }
  CHECK(torch::equal(p, randomized_positions(7, 3, B, T, N)));      // same seed and step
  CHECK_FALSE(torch::equal(p, randomized_positions(7, 4, B, T, N)));  // another step
  CHECK_FALSE(torch::equal(p, randomized_positions(8, 3, B, T, N)));  // another seed
  CHECK_FALSE(torch::equal(p[0], p[1]));                               // rows differ
  // A row depends on its index only, not on the batch size: the rows of a global batch split
  // over data-parallel ranks are the rows one process draws.
  CHECK(torch::equal(randomized_positions(7, 3, 4, T, N), p.narrow(0, 0, 4)));
  // T = N: every position.
  CHECK(torch::equal(randomized_positions(1, 0, 2, 5, 5)[1], torch::arange(5, torch::kLong)));
  // A sequence longer than the range is a config error.
  try {
    randomized_positions(1, 0, 1, 9, 8);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("position.randomized_max: a training sequence has 9 tokens "
                                     "but positions are drawn from 0..7 (8 positions)") !=
          std::string::npos);
  }
}

TEST_CASE("randomized positions: every position is kept with probability T/N") {
  // Over 4000 rows each of the N positions is in a row with probability T/N = 0.25: the count
  // is binomial(4000, 0.25), sd ≈ 27; 6 sd allowed. The first and last positions catch an
  // off-by-one at the ends of the range.
  const int64_t rows = 4000, T = 5, N = 20;
  std::vector<int64_t> count(N, 0);
  for (int64_t step = 0; step < rows / 100; ++step) {
    auto p = randomized_positions(3, step, 100, T, N);
    auto P = p.accessor<int64_t, 2>();
    for (int64_t b = 0; b < 100; ++b)
      for (int64_t t = 0; t < T; ++t) ++count[P[b][t]];
  }
  for (int64_t n = 0; n < N; ++n) {
    CAPTURE(n);
    CHECK(std::abs(static_cast<double>(count[n]) - rows * 0.25) < 6 * 27.4);
  }
}

namespace {

// Positions (B,T) drawn for a test: sorted, distinct, up to N-1.
torch::Tensor drawn(int64_t B, int64_t T, int64_t N) { return randomized_positions(5, 1, B, T, N); }

}  // namespace

TEST_CASE("randomized positions: learned and sinusoidal add their rows at the drawn positions") {
  const int64_t B = 3, T = 6, N = 30, E = 8;
  auto dims = tiny_dims(2, 4, false);  // E = 8
  const auto pos = drawn(B, T, N);
  auto P = pos.accessor<int64_t, 2>();
  auto x = torch::randn({B, T, E}, torch::kDouble);  // (B,T,E)

  auto learned = make_variant("learned", dims, "{max_len: 30}");
  randomize(*learned, 1.0);
  auto table = learned->named_parameters()["table"].detach();  // (M,E)
  auto y = learned->embed_at(x, pos);                           // (B,T,E)
  double worst = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < E; ++e)
        worst = std::max(worst, std::abs(el(y, b, t, e) - el(x, b, t, e) - el(table, P[b][t], e)));
  CHECK(worst < 1e-12);
  // Past the table: the same error as the offset path.
  CHECK_THROWS_AS(learned->embed_at(x, pos + 10), ConfigError);

  auto sinusoidal = make_variant("sinusoidal", dims, "{base: 100, scale: 0.5}");
  auto z = sinusoidal->embed_at(x, pos);  // (B,T,E)
  worst = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t m = 0; m < E / 2; ++m) {
        const double ang = P[b][t] / std::pow(100.0, 2.0 * m / E);
        worst = std::max(worst, std::abs(el(z, b, t, 2 * m) - el(x, b, t, 2 * m) -
                                         0.5 * std::sin(ang)));
        worst = std::max(worst, std::abs(el(z, b, t, 2 * m + 1) - el(x, b, t, 2 * m + 1) -
                                         0.5 * std::cos(ang)));
      }
  CHECK(worst < 1e-12);
}

TEST_CASE("randomized positions: rope and xpos rotate (and scale) at the drawn positions") {
  const int64_t B = 2, H = 2, T = 5, d = 4, N = 50;
  const auto pos = drawn(B, T, N);
  auto P = pos.accessor<int64_t, 2>();
  for (const std::string type : {"rope", "xpos"}) {
    CAPTURE(type);
    auto enc = make_variant(type, tiny_dims(H, d, true), type == "xpos" ? "{scale_base: 8}" : "{}");
    auto q = torch::randn({B, H, T, d}, torch::kDouble), k = torch::randn({B, H, T, d}, torch::kDouble);
    auto q2 = q.clone(), k2 = k.clone();
    AttentionContext ctx;
    ctx.length = T;
    ctx.positions = pos;
    enc->transform_qk(q2, k2, ctx);
    // q_i·k_j at positions p_i, p_j: pair m contributes ζ_m^{(p_i-p_j)/γ}·((q0 k0 + q1 k1) cos φ
    // + (q1 k0 - q0 k1) sin φ), φ = (p_j - p_i)·θ_m (ζ = 1 for rope).
    auto S = torch::matmul(q2, k2.transpose(-1, -2));  // (B,H,T,T)
    double worst = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = 0; j < T; ++j) {
            double s = 0;
            for (int64_t m = 0; m < d / 2; ++m) {
              const double theta = std::pow(10000.0, -2.0 * m / d);
              const double phi = static_cast<double>(P[b][j] - P[b][i]) * theta;
              const double zeta = (2.0 * m / d + 0.4) / 1.4;
              const double decay =
                  type == "xpos" ? std::pow(zeta, static_cast<double>(P[b][i] - P[b][j]) / 8.0) : 1.0;
              const double q0 = el(q, b, h, i, 2 * m), q1 = el(q, b, h, i, 2 * m + 1);
              const double k0 = el(k, b, h, j, 2 * m), k1 = el(k, b, h, j, 2 * m + 1);
              s += decay * ((q0 * k0 + q1 * k1) * std::cos(phi) + (q1 * k0 - q0 * k1) * std::sin(phi));
            }
            worst = std::max(worst, std::abs(el(S, b, h, i, j) - s));
          }
    CHECK(worst < 1e-10);
  }
}

TEST_CASE("randomized positions: without them a model computes what positions 0..T-1 give") {
  // The evaluation path passes no positions; positions 0..T-1 given explicitly must give the
  // same outputs, and drawn positions other outputs (the encodings do read them).
  const auto tokens = torch::randint(0, 40, {2, 8}, torch::kLong);
  for (const std::string type : {"learned", "sinusoidal", "rope", "xpos", "learned+tisa"}) {
    CAPTURE(type);
    Model m = small_model(small_config(type, true), 40);
    torch::NoGradGuard guard;
    const auto plain = m->hidden(tokens);  // (B,T,D)
    ForwardOptions o;
    o.positions = torch::arange(8, torch::kLong).expand({2, 8}).contiguous();
    CHECK(max_abs_diff(m->hidden(tokens, o), plain) < 1e-6);
    o.positions = drawn(2, 8, 32);
    CHECK(max_abs_diff(m->hidden(tokens, o), plain) > 1e-3);
  }
  // A relative variant ignores them.
  Model m = small_model(small_config("alibi", true), 40);
  torch::NoGradGuard guard;
  ForwardOptions o;
  o.positions = drawn(2, 8, 32);
  CHECK(torch::equal(m->hidden(tokens, o), m->hidden(tokens)));
}

TEST_CASE("randomized positions: a training run with them is reproducible across a resume") {
  TempFolder tmp("randomized");
  const std::string cache = tmp.str("cache");
  auto sets = tiny_run(cache, 12);
  sets.push_back("train.checkpoint_every=3");
  auto with = sets;
  with.push_back("position.randomized_max=64");
  with.push_back("position.learned.max_len=64");
  const TrainResult a = train_here(with, tmp.str("a"));
  const TrainResult half = train_here(with, tmp.str("b"), /*stop_after=*/6);
  CHECK_FALSE(half.finished);
  TrainOptions o;
  o.out_dir = tmp.str("b");
  o.quiet = true;
  o.resume = true;
  const TrainResult b = train(load_run_config(tmp.str("b")), o);
  REQUIRE(a.finished);
  REQUIRE(b.finished);
  CHECK(a.valid == b.valid);
  // The same run without randomized positions learns something else.
  const TrainResult c = train_here(sets, tmp.str("c"));
  CHECK(a.valid != c.valid);
}
