// Translation-invariance metrics against hand-computed values and known expectations.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "analysis/invariance.h"
#include "analysis/stats.h"

using namespace relpos::analysis;

namespace {

Matrix matrix_from_rows(const std::vector<std::vector<double>>& rows) {
  Matrix m(static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size()));
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j) m(i, j) = rows[i][j];
  return m;
}

// A(i,j) = f(j - i).
template <class F>
Matrix toeplitz(int64_t T, F f) {
  Matrix m(T, T);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) m(i, j) = f(j - i);
  return m;
}

}  // namespace

TEST_CASE("a Toeplitz matrix has invariance 1, in both regions") {
  std::mt19937 rng(3);
  std::normal_distribution<double> normal;
  std::vector<double> diag(19);
  for (auto& v : diag) v = normal(rng);
  const Matrix a = toeplitz(10, [&](int64_t r) { return diag[r + 9]; });
  CHECK(invariance(a) == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(invariance(a, Region::lower) == doctest::Approx(1.0).epsilon(1e-12));
  const Profile g = diagonal_profile(a);
  REQUIRE(g.offsets.size() == 19);
  for (int64_t r = -9; r <= 9; ++r) CHECK(g.at(r) == doctest::Approx(diag[r + 9]));
}

// docs/analysis.md: a bidirectional map from a purely relative score still falls short of 1,
// because each row is normalised over the offsets it has. Expected values from
// scripts/alibi_invariance.py (numpy, written from the formulas, independent of this code).
TEST_CASE("bidirectional ALiBi attention (slope 1/16) scores 0.9217, 0.9390, 0.9569 at T = 16, 64, 128") {
  const std::vector<std::pair<int64_t, double>> expected = {{16, 0.9217}, {64, 0.9390}, {128, 0.9569}};
  for (const auto& [T, value] : expected) {
    Matrix a(T, T);
    for (int64_t i = 0; i < T; ++i) {
      double z = 0;
      for (int64_t j = 0; j < T; ++j) z += std::exp(-std::abs(static_cast<double>(j - i)) / 16.0);
      for (int64_t j = 0; j < T; ++j) a(i, j) = std::exp(-std::abs(static_cast<double>(j - i)) / 16.0) / z;
    }
    CHECK(invariance(a) == doctest::Approx(value).epsilon(1e-4));
    // The scores themselves are Toeplitz: invariance 1, and symmetric in r.
    const Matrix scores = toeplitz(T, [](int64_t r) { return -std::abs(static_cast<double>(r)) / 16.0; });
    CHECK(invariance(scores) == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(measure(scores).symmetry == doctest::Approx(1.0).epsilon(1e-12));
  }
}

TEST_CASE("hand-computed 3x3: a diagonal matrix diag(1,2,3)") {
  // g(0) = 2, every other diagonal is 0, so ||A - Pi(A)||^2 = (1-2)^2 + (3-2)^2 = 2.
  // mean(A) = 6/9 = 2/3, ||A - mean||^2 = sum a^2 - 9 (2/3)^2 = 14 - 4 = 10. Invariance 1 - 2/10.
  const Matrix a = matrix_from_rows({{1, 0, 0}, {0, 2, 0}, {0, 0, 3}});
  CHECK(invariance(a) == doctest::Approx(0.8));
  const Matrix p = toeplitz_projection(a);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) CHECK(p(i, j) == doctest::Approx(i == j ? 2.0 : 0.0));
}

TEST_CASE("hand-computed 3x3: diagonals with known spread") {
  // r=0: (4,4,4) mean 4, residual 0.    r=+1: (1,3) mean 2, residual 1+1 = 2.
  // r=-1: (2,2) mean 2, residual 0.     r=+-2: single entries 0, residual 0.
  // sum = 20, mean 20/9; sum a^2 = 66; ||A - mean||^2 = 66 - 400/9 = 194/9.
  // invariance = 1 - 2/(194/9) = 1 - 18/194 = 88/97.
  const Matrix a = matrix_from_rows({{4, 1, 0}, {2, 4, 3}, {0, 2, 4}});
  const MatrixMetrics m = measure(a);
  CHECK(m.invariance == doctest::Approx(88.0 / 97.0));
  CHECK(m.profile.offsets == std::vector<int64_t>{-2, -1, 0, 1, 2});
  CHECK(m.profile.counts == std::vector<int64_t>{1, 2, 3, 2, 1});
  const std::vector<double> g = {0, 2, 4, 2, 0};
  for (size_t k = 0; k < g.size(); ++k) CHECK(m.profile.values[k] == doctest::Approx(g[k]));
  // g(1), g(2) = (2, 0) and g(-1), g(-2) = (2, 0): symmetric; both sides fall with |r|.
  CHECK(m.symmetry == doctest::Approx(1.0));
  CHECK(m.monotonicity_left == doctest::Approx(-1.0));
  CHECK(m.monotonicity_right == doctest::Approx(-1.0));
}

TEST_CASE("hand-computed 3x3 causal: only j <= i counts") {
  // Visible: (0,0)=4 (1,0)=2 (1,1)=4 (2,0)=0 (2,1)=3 (2,2)=4; the upper triangle is junk.
  // r=0: (4,4,4) residual 0; r=-1: (2,3) mean 2.5, residual 0.25+0.25 = 0.5; r=-2: (0).
  // sum 17, mean 17/6; sum a^2 = 61; ||A - mean||^2 = 61 - 289/6 = 77/6.
  // invariance = 1 - 0.5/(77/6) = 1 - 3/77 = 74/77.
  const Matrix a = matrix_from_rows({{4, 99, -7}, {2, 4, 55}, {0, 3, 4}});
  const MatrixMetrics m = measure(a, Region::lower);
  CHECK(m.invariance == doctest::Approx(74.0 / 77.0));
  CHECK(m.profile.offsets == std::vector<int64_t>{-2, -1, 0});
  CHECK(m.profile.values[1] == doctest::Approx(2.5));
  CHECK(std::isnan(m.symmetry));  // no r > 0 in a causal map
  CHECK(std::isnan(m.monotonicity_right));
  CHECK(m.monotonicity_left == doctest::Approx(-1.0));  // g(-1)=2.5 > g(-2)=0
  const Matrix p = toeplitz_projection(a, Region::lower);
  CHECK(p(0, 1) == 0.0);
  CHECK(p(2, 1) == doctest::Approx(2.5));
}

TEST_CASE("a NaN or an infinity in the visible region makes invariance undefined") {
  // A diverged run must not read as "perfectly invariant" (the flat rule's total would be NaN).
  Matrix a(4, 4, 0.5);
  a(2, 1) = NAN;
  CHECK(std::isnan(invariance(a)));
  CHECK(std::isnan(invariance(a, Region::lower)));
  a(2, 1) = -INFINITY;
  CHECK(std::isnan(invariance(a)));
  // The masked upper triangle of a causal map is not looked at.
  Matrix c(4, 4, 1.0);
  c(0, 3) = NAN;
  CHECK(invariance(c, Region::lower) == 1.0);
}

TEST_CASE("constant matrices count as invariant") {
  CHECK(invariance(Matrix(5, 5, 0.0)) == 1.0);
  CHECK(invariance(Matrix(5, 5, -3.25)) == 1.0);
  // A uniform attention map stored in float32: 1/T has rounding residue in every sum.
  for (int64_t T : {3, 7, 37, 128}) {
    Matrix u(T, T, static_cast<double>(1.0f / static_cast<float>(T)));
    CHECK(invariance(u) == 1.0);
    // causal uniform over the visible prefix: row i holds 1/(i+1), which is not constant; it
    // is not Toeplitz either, so it must not be caught by the flat rule.
    Matrix c(T, T, 0.0);
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j <= i; ++j) c(i, j) = static_cast<float>(1.0 / (i + 1));
    if (T > 2) CHECK(invariance(c, Region::lower) < 1.0);
  }
}

// For A with i.i.d. N(0, s^2) entries the residual after the grand mean splits into
// orthogonal projections: X = ||Pi(A) - mean||^2 ~ s^2 chi2(k - 1) on the k diagonals and
// Y = ||A - Pi(A)||^2 ~ s^2 chi2(N - k), independent, over N entries. invariance = X/(X+Y)
// ~ Beta((k-1)/2, (N-k)/2), so E = (k-1)/(N-1).
//   full n x n: N = n^2, k = 2n - 1  ->  E = (2n-2)/(n^2-1) = 2/(n+1)
//   causal:     N = n(n+1)/2, k = n   ->  E = (n-1)/(N-1)
// (Without the grand-mean correction the fraction would be (2n-1)/n^2.)
TEST_CASE("i.i.d. Gaussian matrices: the mean invariance matches the Beta expectation") {
  std::mt19937 rng(12345);
  std::normal_distribution<double> normal(0.5, 2.0);
  const int64_t n = 8, samples = 4000;
  for (Region region : {Region::full, Region::lower}) {
    const double N = region == Region::full ? n * n : n * (n + 1) / 2.0;
    const double k = region == Region::full ? 2 * n - 1 : n;
    const double alpha = (k - 1) / 2, beta = (N - k) / 2;
    const double expected = alpha / (alpha + beta);
    const double sd =
        std::sqrt(alpha * beta / ((alpha + beta) * (alpha + beta) * (alpha + beta + 1)));
    std::vector<double> values;
    for (int64_t s = 0; s < samples; ++s) {
      Matrix a(n, n);
      for (auto& v : a.data) v = normal(rng);
      values.push_back(invariance(a, region));
    }
    CAPTURE(expected);
    // 4.5 standard errors of the mean: a false failure about once in 10^5 seeds (fixed here).
    CHECK(std::abs(mean(values) - expected) < 4.5 * sd / std::sqrt(static_cast<double>(samples)));
    CHECK(sample_std(values) == doctest::Approx(sd).epsilon(0.08));
  }
}

TEST_CASE("symmetry and monotonicity of known profiles") {
  // symmetric, not monotone: g(r) = cos(|r|)
  const Matrix c =
      toeplitz(9, [](int64_t r) { return std::cos(static_cast<double>(std::abs(r))); });
  CHECK(measure(c).symmetry == doctest::Approx(1.0));
  // decaying: g = exp(-|r|/3)  -> monotonicity -1 on both sides
  const auto d = measure(toeplitz(9, [](int64_t r) { return std::exp(-std::abs(r) / 3.0); }));
  CHECK(d.symmetry == doctest::Approx(1.0));
  CHECK(d.monotonicity_left == doctest::Approx(-1.0));
  CHECK(d.monotonicity_right == doctest::Approx(-1.0));
  // growing on the left, falling on the right; antisymmetric g(r) = r
  const auto e = measure(toeplitz(9, [](int64_t r) { return static_cast<double>(r); }));
  CHECK(e.symmetry == doctest::Approx(-1.0));
  CHECK(e.monotonicity_left == doctest::Approx(-1.0));  // r = -1..-8: g falls as |r| grows
  CHECK(e.monotonicity_right == doctest::Approx(1.0));
}

TEST_CASE("correlation helpers on hand numbers") {
  // x = (1,2,3), y = (2,4,7): sxy = 5, sxx = 2, syy = 114/9.
  CHECK(pearson({1, 2, 3}, {2, 4, 7}) == doctest::Approx(5.0 / std::sqrt(2.0 * 114.0 / 9.0)));
  CHECK(ranks({10, 20, 20, 30}) == std::vector<double>{1, 2.5, 2.5, 4});
  CHECK(spearman({1, 2, 3, 4}, {1, 8, 27, 64}) == doctest::Approx(1.0));
  CHECK(std::isnan(pearson({1, 1, 1}, {1, 2, 3})));
  CHECK(std::isnan(pearson({1}, {2})));
  // A NaN has no rank and no product: the correlation is undefined, not a made-up number.
  CHECK(std::isnan(pearson({1, 2, NAN, 4}, {1, 2, 3, 4})));
  CHECK(std::isnan(spearman({1, 2, NAN, 4}, {1, 2, 3, 4})));
  CHECK(std::isnan(spearman({1, 2, 3}, {1, INFINITY, 3})));
  // Two measured pairs always correlate ±1: the series versions need three.
  CHECK(pearson({1, 2}, {5, 3}) == doctest::Approx(-1.0));
  CHECK(std::isnan(pearson_of_series({1, 2}, {5, 3})));
  CHECK(std::isnan(spearman_of_series({1, 2}, {5, 3})));
  CHECK(spearman_of_series({1, 2, 3}, {5, 3, 4}) == doctest::Approx(-0.5));
  CHECK(sample_std({1, 2, 3, 4}) == doctest::Approx(std::sqrt(5.0 / 3.0)));
  CHECK(interpolate({0, 10, 20}, {1, 2, 4}, 15) == doctest::Approx(3.0));
  CHECK(interpolate({0, 10, 20}, {1, 2, 4}, 20) == doctest::Approx(4.0));
  CHECK(std::isnan(interpolate({0, 10}, {1, 2}, 11)));
}
