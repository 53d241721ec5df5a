#include "analysis/distributions.h"
#include "analysis/stats.h"

#include <cmath>
#include <limits>

namespace relpos::analysis {
namespace {

// The continued fraction of A&S 26.5.8 for I_x(a, b), which converges fast for
// x < (a + 1)/(a + b + 2); modified Lentz evaluation.
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-16;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::abs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    // Even step: d_{2m} = m (b − m) x / ((a + 2m − 1)(a + 2m)).
    const double even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
    d = 1.0 + even * d;
    c = 1.0 + even / c;
    if (std::abs(d) < tiny) d = tiny;
    if (std::abs(c) < tiny) c = tiny;
    d = 1.0 / d;
    h *= d * c;
    // Odd step: d_{2m+1} = −(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
    const double odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
    d = 1.0 + odd * d;
    c = 1.0 + odd / c;
    if (std::abs(d) < tiny) d = tiny;
    if (std::abs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double step = d * c;
    h *= step;
    if (std::abs(step - 1.0) < eps) break;
  }
  return h;
}

// The p in (0, 1) quantile of a continuous increasing cdf, by bisection: slower than Newton's
// method but it cannot diverge in the heavy tails of t with one degree of freedom.
template <typename Cdf>
double invert(Cdf cdf, double p) {
  if (!(p > 0.0 && p < 1.0)) return kNaN;
  double lo = -1.0, hi = 1.0;
  while (cdf(lo) > p) lo *= 2.0;
  while (cdf(hi) < p) hi *= 2.0;
  for (int k = 0; k < 200 && hi - lo > 1e-15 * std::max(1.0, std::abs(lo)); ++k) {
    const double mid = 0.5 * (lo + hi);
    (cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (!(a > 0.0 && b > 0.0) || !(x >= 0.0 && x <= 1.0)) return kNaN;
  if (x == 0.0 || x == 1.0) return x;
  // x^a (1 − x)^b / (a B(a, b)), in logarithms.
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  // The fraction converges for x below the mean; above it, I_x(a, b) = 1 − I_{1−x}(b, a).
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
  return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

double student_t_cdf(double t, double df) {
  if (std::isnan(t) || !(df > 0.0)) return kNaN;
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // A&S 26.7.1: P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2).
  const double tail = 0.5 * incomplete_beta(0.5 * df, 0.5, df / (df + t * t));
  return t > 0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(df > 0.0)) return kNaN;
  return invert([df](double t) { return student_t_cdf(t, df); }, p);
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double normal_quantile(double p) { return invert(normal_cdf, p); }

}  // namespace relpos::analysis
