// The distribution functions behind the confidence intervals and tests of inference.h: the
// standard normal and Student's t (cumulative distribution and quantile), through the
// regularized incomplete beta function. Written from the textbook formulas (Abramowitz &
// Stegun 26.5.8 and 26.7.1; the continued fraction of 26.5.8 evaluated by the modified Lentz
// method); tests/reference/make_stats_golden.py checks them against scipy.
#pragma once

namespace relpos::analysis {

// I_x(a, b), the regularized incomplete beta function, for a, b > 0 and x in [0, 1].
double incomplete_beta(double a, double b, double x);

// P(T <= t) for Student's t with df > 0 degrees of freedom (df need not be an integer).
double student_t_cdf(double t, double df);
// The t with P(T <= t) = p, p in (0, 1); NaN outside.
double student_t_quantile(double p, double df);

double normal_cdf(double z);
double normal_quantile(double p);  // NaN outside (0, 1)

}  // namespace relpos::analysis
