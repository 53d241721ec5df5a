// The statistics behind verdicts (analysis/evidence_stats.h) and the invariance baseline
// (analysis/invariance_baseline.h), against independent references: Holm's adjustment worked
// by hand; the crossed bootstrap's Monte Carlo variance against its exact formula and against a
// matrix built from known effects; partial correlation against the textbook formula from the
// three pairwise r; the random-table baseline against a Monte Carlo written here with plain
// loops; a Toeplitz P·Pᵀ at 1.
#include <doctest/doctest.h>
#include <torch/types.h>

#include <cmath>
#include <random>

#include "analysis/evidence_stats.h"
#include "analysis/invariance.h"
#include "analysis/invariance_baseline.h"
#include "analysis/stats.h"

using namespace relpos::analysis;

TEST_CASE("holm_adjust: step-down adjusted p-values worked by hand, NaN left out of m") {
  // Sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> max 0.06).
  const auto adj = holm_adjust({0.01, 0.04, 0.03, 0.005});
  CHECK(adj[0] == doctest::Approx(0.03));
  CHECK(adj[1] == doctest::Approx(0.06));
  CHECK(adj[2] == doctest::Approx(0.06));
  CHECK(adj[3] == doctest::Approx(0.02));
  const auto with_nan = holm_adjust({0.2, std::nan(""), 0.6});  // m = 2
  CHECK(with_nan[0] == doctest::Approx(0.4));
  CHECK(std::isnan(with_nan[1]));
  CHECK(with_nan[2] == doctest::Approx(0.6));
  CHECK(holm_adjust({0.7, 0.9})[0] == doctest::Approx(1.0));  // capped at 1
}

TEST_CASE("noisy_paired_test: without evaluation noise it is the paired t test; with it, wider") {
  const std::vector<double> d{0.04, 0.07, 0.05, 0.09, 0.03};
  const auto plain = noisy_paired_test(d, {});
  // By hand: mean 0.056, squared deviations summing to 0.00232, sd = sqrt(0.00232 / 4).
  CHECK(plain.mean == doctest::Approx(0.056));
  CHECK(plain.sd == doctest::Approx(std::sqrt(0.00232 / 4)));
  CHECK(plain.df == doctest::Approx(4));
  CHECK(plain.t == doctest::Approx(0.056 / (plain.sd / std::sqrt(5.0))));
  const auto noisy = noisy_paired_test(d, std::vector<double>(5, 0.001));
  CHECK(noisy.se == doctest::Approx(std::sqrt(plain.sd * plain.sd / 5 + 0.001)));
  CHECK(noisy.hi - noisy.lo > plain.hi - plain.lo);
  CHECK(noisy.p_two > plain.p_two);
  // The margin shifts the null, not the reported mean.
  const auto shifted = noisy_paired_test(d, {}, -0.05);
  CHECK(shifted.mean == doctest::Approx(0.056));
  CHECK(shifted.t == doctest::Approx((0.056 + 0.05) / (plain.sd / std::sqrt(5.0))));
}

TEST_CASE("power: the smallest detectable effect falls with seeds; noise of the set is a floor") {
  const double sd = 0.02;
  double last = INFINITY;
  for (size_t n = 2; n <= 30; ++n) {
    const double m = minimal_detectable_effect(sd, n, 0.0);
    CHECK(m < last);
    last = m;
  }
  // seeds_needed is the first n whose effect reaches the target.
  const size_t n = seeds_needed(sd, 0.0, 0.02);
  REQUIRE(n > 2);
  CHECK(minimal_detectable_effect(sd, n, 0.0) <= 0.02);
  CHECK(minimal_detectable_effect(sd, n - 1, 0.0) > 0.02);
  // Evaluation noise alone above the target: no number of seeds detects it.
  CHECK(seeds_needed(sd, 1e-3, 0.02) == 0);  // (1.645 + 0.842) x 0.032 > 0.02 for any n
}

TEST_CASE("crossed bootstrap: its Monte Carlo variance agrees with the exact formula") {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g(0.0, 1.0);
  const size_t n = 5, N = 40;
  std::vector<double> seed(n), ex(N);
  for (auto& v : seed) v = 0.3 * g(rng);
  for (auto& v : ex) v = g(rng);
  std::vector<std::vector<double>> D(n, std::vector<double>(N));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < N; ++j) D[i][j] = 1.0 + seed[i] + ex[j] + 0.5 * g(rng);
  const double exact = crossed_bootstrap_variance(D);
  const double mc = crossed_bootstrap(D, 20000, 11);
  // The Monte Carlo variance of 20,000 replicates is within a few percent (sd ~ sqrt(2/B)).
  CHECK(mc == doctest::Approx(exact).epsilon(0.05));

  // Known effects and no interaction: S_a / n + S_b / N, from the effects themselves.
  const std::vector<double> a{-0.2, 0.1, 0.3, -0.2}, b{0.5, -0.5, 1.0, -1.0, 0.0};
  std::vector<std::vector<double>> E(a.size(), std::vector<double>(b.size()));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < b.size(); ++j) E[i][j] = 2.0 + a[i] + b[j];
  double sa = 0, sb = 0;
  for (double v : a) sa += v * v;
  for (double v : b) sb += v * v;
  sa /= a.size();
  sb /= b.size();
  CHECK(crossed_bootstrap_variance(E) == doctest::Approx(sa / a.size() + sb / b.size()));
}

TEST_CASE("partial correlation: the textbook formula from the three pairwise r") {
  const std::vector<double> x{1, 2, 3, 4, 5, 6, 7}, y{2, 1, 4, 3, 7, 5, 6}, z{1, 1, 2, 3, 3, 4, 6};
  const double rxy = pearson(x, y), rxz = pearson(x, z), ryz = pearson(y, z);
  const double expected = (rxy - rxz * ryz) / std::sqrt((1 - rxz * rxz) * (1 - ryz * ryz));
  CHECK(partial_correlation(x, y, z) == doctest::Approx(expected));
  CHECK(partial_correlation(x, y, {}) == doctest::Approx(rxy));
}

TEST_CASE("cluster bootstrap correlation: whole clusters are resampled, p and interval agree") {
  // Strongly related within every cluster: a positive r, interval and p well away from 0.
  std::vector<double> x, y;
  std::vector<int64_t> c;
  for (int64_t s = 0; s < 6; ++s)
    for (int k = 0; k < 3; ++k) {
      x.push_back(k + 0.1 * s);
      y.push_back(2.0 * k + 0.3 * ((s * 5 + k) % 3));
      c.push_back(s);
    }
  const auto r = cluster_bootstrap_correlation(x, y, {}, c, 2000, 3);
  CHECK(r.clusters == 6);
  CHECK(r.n == 18);
  CHECK(r.r == doctest::Approx(pearson(x, y)));
  CHECK(r.lo > 0.8);
  CHECK(r.p_two < 0.01);
  // The same points as one cluster: nothing to resample.
  const auto one = cluster_bootstrap_correlation(x, y, {}, std::vector<int64_t>(18, 0), 100, 3);
  CHECK(std::isnan(one.lo));
}

TEST_CASE("invariance baseline: random tables score their own Monte Carlo mean, corrected to 0") {
  // An independent Monte Carlo: plain loops over the Π(A) definition (diagonal means).
  const int64_t n = 12, E = 8;
  const auto invariance_loop = [&](const torch::Tensor& p) {
    const auto a = p.matmul(p.t());  // (n,n)
    const auto acc = a.accessor<double, 2>();
    double mean = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) mean += acc[i][j];
    mean /= n * n;
    std::vector<double> diag(2 * n - 1, 0.0), count(2 * n - 1, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) diag[j - i + n - 1] += acc[i][j], count[j - i + n - 1] += 1;
    double resid = 0, total = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double t = diag[j - i + n - 1] / count[j - i + n - 1];
        resid += (acc[i][j] - t) * (acc[i][j] - t);
        total += (acc[i][j] - mean) * (acc[i][j] - mean);
      }
    return 1 - resid / total;
  };
  torch::manual_seed(99);
  double sum = 0, corrected = 0;
  const int draws = 400;
  const InvarianceBaseline b = random_gram_baseline(n, E, 400);
  for (int k = 0; k < draws; ++k) {
    const double v = invariance_loop(torch::randn({n, E}, torch::kFloat64) * 0.02);
    sum += v;
    corrected += corrected_invariance(v, b.mean);
  }
  // Two independent Monte Carlo means of the same expectation (sd of one score ~0.1).
  CHECK(sum / draws == doctest::Approx(b.mean).epsilon(0.03));
  CHECK(std::abs(corrected / draws) < 0.05);
  CHECK(b.lo < b.mean);
  CHECK(b.mean < b.hi);
  CHECK(b.draws == 400);
  // Deterministic: the same shape gives the same numbers.
  CHECK(random_gram_baseline(n, E, 400).mean == b.mean);
}

TEST_CASE("invariance baseline: an exactly Toeplitz P·Pᵀ (sinusoidal) is corrected to 1") {
  // PE(i)·PE(j) = Σ_m cos((i − j) ω_m): a function of i − j only.
  const int64_t n = 32, E = 16;
  auto pe = torch::zeros({n, E}, torch::kFloat64);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t m = 0; m < E / 2; ++m) {
      const double w = std::pow(10000.0, -2.0 * m / E);
      pe[i][2 * m] = std::sin(i * w);
      pe[i][2 * m + 1] = std::cos(i * w);
    }
  const auto gram = pe.matmul(pe.t());
  Matrix a(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) a(i, j) = gram[i][j].item<double>();
  const double inv = invariance(a, Region::full);
  CHECK(inv == doctest::Approx(1.0));
  const InvarianceBaseline b = random_gram_baseline(n, E, 50);
  CHECK(b.mean > 0.2);  // a random table of this shape is far from 0 ...
  CHECK(corrected_invariance(inv, b.mean) == doctest::Approx(1.0));  // ... the corrected score is 1
  CHECK(std::isnan(corrected_invariance(0.5, 1.0)));
}
