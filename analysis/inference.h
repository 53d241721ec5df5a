// Confidence intervals and tests for numbers pooled over seeds (docs/analysis.md, "Statistics"):
//
//   mean_ci        n, mean, sample std and the two-sided Student-t interval of the mean
//   paired_test    differences d_k = a_k − b_k of runs matched by seed: mean difference with its
//                  t interval, the paired t-test (two- and one-sided p), Cohen's d_z = mean/sd,
//                  and the exact sign-flip (permutation) test, which assumes only that each d_k
//                  is symmetric about 0 under the null hypothesis (enumerated for n <= 20)
//   wilson_ci      a proportion's interval (an accuracy over k scored tokens or examples)
//   pearson_test   Pearson's r with its t-test (n − 2 degrees of freedom) and Fisher-z interval
//
// Undefined quantities are NaN: no interval for n < 2, no correlation test for n < 3 (no
// interval for n < 4). tests/reference/make_stats_golden.py checks every function against scipy.
#pragma once

#include <cstddef>
#include <vector>

namespace relpos::analysis {

// The seeds below which an interval is shown but a claim is not judged (claims.h).
constexpr size_t kMinSeedsForVerdict = 5;
// Sign-flip tests enumerate all 2^n sign patterns up to this n; above it they are NaN and the
// t-test (whose normal approximation is then good) stands alone.
constexpr size_t kMaxExactSignFlip = 20;

struct MeanCI {
  size_t n = 0;
  double mean = 0, sd = 0;  // sd: sample standard deviation (n − 1); NaN for n < 2
  double lo = 0, hi = 0;    // NaN for n < 2
  double half() const { return 0.5 * (hi - lo); }
};
// NaN values are left out (a variant not applicable at a length).
MeanCI mean_ci(const std::vector<double>& x, double level = 0.95);

struct PairedTest {
  size_t n = 0;                          // pairs
  double mean = 0, sd = 0;               // of the differences
  double lo = 0, hi = 0;                 // t interval of the mean difference
  double t = 0, df = 0;
  double p_two = 0, p_greater = 0, p_less = 0;  // H1: mean ≠ 0, > 0, < 0
  double cohen_dz = 0;                          // mean / sd; NaN when sd = 0
  // Exact sign-flip p-values: the share of the 2^n sign patterns whose mean difference is at
  // least (greater), at most (less) or at least as far from 0 (two-sided) as the observed.
  double flip_greater = 0, flip_less = 0, flip_two = 0;
};
// d: the paired differences a_k − b_k (NaN entries left out). `shift` is subtracted first, so
// that the tests are of H0: mean = shift (a non-inferiority margin); the reported mean and
// interval are of d itself.
PairedTest paired_test(const std::vector<double>& d, double level = 0.95, double shift = 0.0);

struct ProportionCI {
  double p = 0, lo = 0, hi = 0;
};
// Wilson's score interval for k successes in n trials; NaN for n = 0.
ProportionCI wilson_ci(double k, double n, double level = 0.95);

struct CorrelationTest {
  size_t n = 0;
  double r = 0, lo = 0, hi = 0;  // Fisher-z interval (n >= 4)
  double t = 0, p_two = 0, p_greater = 0, p_less = 0;
};
// Pairs with a NaN are left out.
CorrelationTest pearson_test(const std::vector<double>& x, const std::vector<double>& y,
                             double level = 0.95);

}  // namespace relpos::analysis
