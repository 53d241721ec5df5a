#include "analysis/inference.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "analysis/distributions.h"
#include "analysis/stats.h"

namespace relpos::analysis {
namespace {

std::vector<double> without_nan(const std::vector<double>& x) {
  std::vector<double> out;
  for (double v : x)
    if (!std::isnan(v)) out.push_back(v);
  return out;
}

// The two-sided quantile of a level: 0.975 for 0.95.
double upper(double level) { return 1.0 - 0.5 * (1.0 - level); }

// Sign-flip p-values of H0 "each d_k is symmetric about 0": every pattern of signs is equally
// likely, so the p-value is the share of the 2^n patterns whose sum is as extreme as observed.
void sign_flip(const std::vector<double>& d, PairedTest& r) {
  const size_t n = d.size();
  if (n == 0 || n > kMaxExactSignFlip) {
    r.flip_greater = r.flip_less = r.flip_two = kNaN;
    return;
  }
  double observed = 0, scale = 0;
  for (double v : d) observed += v, scale += std::abs(v);
  // Sums equal to the observed one up to rounding count as "as extreme" (ties belong to the
  // p-value): a sign pattern that reorders the same terms must not fall on the wrong side.
  const double tol = 1e-12 * std::max(scale, 1e-300);
  uint64_t greater = 0, less = 0, two = 0;
  const uint64_t patterns = uint64_t{1} << n;
  for (uint64_t mask = 0; mask < patterns; ++mask) {
    double s = 0;
    for (size_t k = 0; k < n; ++k) s += (mask >> k & 1) ? -d[k] : d[k];
    greater += s >= observed - tol;
    less += s <= observed + tol;
    two += std::abs(s) >= std::abs(observed) - tol;
  }
  const double total = static_cast<double>(patterns);
  r.flip_greater = static_cast<double>(greater) / total;
  r.flip_less = static_cast<double>(less) / total;
  r.flip_two = static_cast<double>(two) / total;
}

}  // namespace

MeanCI mean_ci(const std::vector<double>& x, double level) {
  const std::vector<double> v = without_nan(x);
  MeanCI c;
  c.n = v.size();
  c.mean = mean(v);
  c.sd = sample_std(v);
  c.lo = c.hi = kNaN;
  if (c.n >= 2) {
    const double half = student_t_quantile(upper(level), static_cast<double>(c.n - 1)) * c.sd /
                        std::sqrt(static_cast<double>(c.n));
    c.lo = c.mean - half;
    c.hi = c.mean + half;
  }
  return c;
}

PairedTest paired_test(const std::vector<double>& d_in, double level, double shift) {
  const std::vector<double> d = without_nan(d_in);
  PairedTest r;
  const MeanCI c = mean_ci(d, level);
  r.n = c.n;
  r.mean = c.mean;
  r.sd = c.sd;
  r.lo = c.lo;
  r.hi = c.hi;
  r.df = c.n >= 2 ? static_cast<double>(c.n - 1) : kNaN;
  std::vector<double> shifted;
  for (double v : d) shifted.push_back(v - shift);
  sign_flip(shifted, r);
  r.t = r.p_two = r.p_greater = r.p_less = r.cohen_dz = kNaN;
  if (c.n < 2) return r;
  const double m = c.mean - shift;
  double largest = 0;
  for (double v : d) largest = std::max(largest, std::abs(v));
  if (!(c.sd > 1e-14 * largest)) {
    // Every difference the same: the t statistic is infinite (or 0/0 at the null value).
    r.t = m > 0 ? INFINITY : m < 0 ? -INFINITY : kNaN;
    r.p_greater = m > 0 ? 0.0 : 1.0;
    r.p_less = m < 0 ? 0.0 : 1.0;
    r.p_two = m != 0 ? 0.0 : 1.0;
    return r;
  }
  r.cohen_dz = c.mean / c.sd;
  r.t = m / (c.sd / std::sqrt(static_cast<double>(c.n)));
  r.p_less = student_t_cdf(r.t, r.df);
  r.p_greater = student_t_cdf(-r.t, r.df);
  r.p_two = std::min(1.0, 2.0 * std::min(r.p_less, r.p_greater));
  return r;
}

ProportionCI wilson_ci(double k, double n, double level) {
  if (!(n > 0) || k < 0 || k > n) return {kNaN, kNaN, kNaN};
  const double z = normal_quantile(upper(level)), p = k / n, z2n = z * z / n;
  const double centre = (p + 0.5 * z2n) / (1.0 + z2n);
  const double half = z / (1.0 + z2n) * std::sqrt(p * (1.0 - p) / n + 0.25 * z2n / n);
  return {p, centre - half, centre + half};
}

CorrelationTest pearson_test(const std::vector<double>& x_in, const std::vector<double>& y_in,
                             double level) {
  std::vector<double> x = x_in, y = y_in;
  drop_nan_pairs(x, y);
  CorrelationTest c;
  c.n = x.size();
  c.r = c.lo = c.hi = c.t = c.p_two = c.p_greater = c.p_less = kNaN;
  if (c.n < 3) return c;
  c.r = pearson(x, y);
  if (std::isnan(c.r)) return c;
  const double df = static_cast<double>(c.n - 2);
  c.t = std::abs(c.r) >= 1.0 ? std::copysign(INFINITY, c.r)
                             : c.r * std::sqrt(df / (1.0 - c.r * c.r));
  c.p_less = student_t_cdf(c.t, df);
  c.p_greater = student_t_cdf(-c.t, df);
  c.p_two = std::min(1.0, 2.0 * std::min(c.p_less, c.p_greater));
  if (c.n >= 4) {
    const double z = std::atanh(std::clamp(c.r, -1.0, 1.0));
    const double half = normal_quantile(upper(level)) / std::sqrt(static_cast<double>(c.n - 3));
    c.lo = std::tanh(z - half);
    c.hi = std::tanh(z + half);
  }
  return c;
}

}  // namespace relpos::analysis
