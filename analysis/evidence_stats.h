// The statistics behind verdicts (docs/analysis.md, "Claims and verdicts"), on top of
// inference.h:
//
//   holm_adjust           Holm–Bonferroni adjusted p-values of a family of tests
//   noisy_paired_test     a paired comparison over seeds whose evaluation set is shared by every
//                         run: the seed variance of the differences plus the evaluation set's
//                         sampling variance (a bound from each run's per-item spread), t test,
//                         interval, and the smallest effect it detects
//   minimal_detectable_effect, seeds_needed   power: 80% at one-sided alpha 0.05
//   crossed_bootstrap, crossed_bootstrap_variance   seeds × evaluation examples resampled
//                         together (Monte Carlo), and that bootstrap's exact variance
//   partial_correlation, cluster_bootstrap_correlation   r of x and y (given z), with an
//                         interval from resampling whole clusters (seeds), not single runs
//
// Undefined quantities are NaN; nothing throws on data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace relpos::analysis {

// Holm's step-down adjustment: sort the m finite p-values ascending, p_(k) -> max over j <= k of
// min(1, (m − j + 1) p_(j)). NaN entries stay NaN and do not count in m.
std::vector<double> holm_adjust(const std::vector<double>& p);

struct NoisyPairedTest {
  size_t n = 0;               // pairs (seeds)
  double mean = 0;            // of the differences d_k
  double sd = 0;              // sample sd of the d_k (NaN for n < 2)
  double eval_var = 0;        // evaluation-set variance of the mean difference (0: none known)
  double se = 0, df = 0;      // sqrt(sd²/n + eval_var); Welch–Satterthwaite degrees of freedom
  double lo = 0, hi = 0;      // 95% interval of the mean difference
  double t = 0;               // (mean − shift) / se
  double p_greater = 0, p_less = 0, p_two = 0;  // H1: mean > shift, < shift, ≠ shift
  double mde = 0;             // smallest |mean − shift| detected with 80% power, alpha 0.05 one-sided
};

// d: paired differences (NaN entries left out, with their eval_var). eval_var[k]: the sampling
// variance of d_k from the evaluation set alone (var of a's value + var of b's value; empty:
// none known). The evaluation set is the same for every seed, so its error is shared rather
// than averaged away: the mean of eval_var is added to sd²/n whole (a bound: it is exact when
// the error is fully shared, and counts it twice when it is independent per seed).
NoisyPairedTest noisy_paired_test(const std::vector<double>& d,
                                  const std::vector<double>& eval_var, double shift = 0.0);

// (t_{1−alpha, df} + t_{power, df}) · sqrt(sd²/n + eval_var), df = n − 1 (normal quantiles when
// sd is 0); NaN for n < 2.
double minimal_detectable_effect(double sd, size_t n, double eval_var, double alpha = 0.05,
                                 double power = 0.8);
// The fewest seeds (2..cap) whose minimal detectable effect is at most `target`; 0 when none up
// to `cap` reaches it (the evaluation set's own noise is then too large: more examples are needed).
size_t seeds_needed(double sd, double eval_var, double target, size_t cap = 1000);

// D[s][x]: the value of seed s on evaluation example x (every row the same length).
// crossed_bootstrap: the variance over `draws` bootstrap replicates of the grand mean, each
// replicate resampling the seeds and, independently, the examples (one draw of examples for
// all seeds, since they share the evaluation set). Deterministic for a given rng_seed.
double crossed_bootstrap(const std::vector<std::vector<double>>& D, int draws, uint64_t rng_seed);
// That bootstrap's exact variance: with D = mu + a_s + b_x + g_sx (the two-way decomposition,
// every effect summing to 0), S_a/n + S_b/N + S_g/(nN), each S the mean square of its effect.
double crossed_bootstrap_variance(const std::vector<std::vector<double>>& D);

// Pearson r of the residuals of x and y after a least-squares line on z (z empty: plain r).
// Triples with a NaN are left out; NaN for fewer than 3 (4 with z) points or a constant.
double partial_correlation(const std::vector<double>& x, const std::vector<double>& y,
                           const std::vector<double>& z);

struct ClusterCorrelation {
  size_t n = 0, clusters = 0;
  double r = 0;             // partial_correlation of all the points
  double lo = 0, hi = 0;    // percentile 95% interval over cluster bootstrap replicates
  double p_two = 0;         // 2 · min(share of replicates <= 0, share >= 0), with +1 smoothing
  double p_greater = 0;     // share of replicates <= 0 (+1 smoothing)
};
// Replicates draw whole clusters (cluster[k]: the cluster id of point k) with replacement.
ClusterCorrelation cluster_bootstrap_correlation(const std::vector<double>& x,
                                                 const std::vector<double>& y,
                                                 const std::vector<double>& z,
                                                 const std::vector<int64_t>& cluster,
                                                 int draws = 4000, uint64_t rng_seed = 1);

}  // namespace relpos::analysis
