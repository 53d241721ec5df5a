#include "analysis/evidence_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "analysis/distributions.h"
#include "analysis/stats.h"

namespace relpos::analysis {

std::vector<double> holm_adjust(const std::vector<double>& p) {
  std::vector<size_t> order;
  for (size_t i = 0; i < p.size(); ++i)
    if (std::isfinite(p[i])) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> out(p.size(), kNaN);
  const double m = static_cast<double>(order.size());
  double running = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    running = std::max(running, std::min(1.0, (m - static_cast<double>(k)) * p[order[k]]));
    out[order[k]] = running;
  }
  return out;
}

namespace {

// t quantile, or the normal one when the degrees of freedom are infinite.
double quantile(double p, double df) {
  return std::isfinite(df) ? student_t_quantile(p, df) : normal_quantile(p);
}

double cdf(double t, double df) { return std::isfinite(df) ? student_t_cdf(t, df) : normal_cdf(t); }

}  // namespace

double minimal_detectable_effect(double sd, size_t n, double eval_var, double alpha, double power) {
  if (n < 2 || !std::isfinite(sd)) return kNaN;
  const double nn = static_cast<double>(n);
  const double df = sd > 0 ? nn - 1 : INFINITY;
  const double se = std::sqrt(sd * sd / nn + std::max(eval_var, 0.0));
  return (quantile(1 - alpha, df) + quantile(power, df)) * se;
}

size_t seeds_needed(double sd, double eval_var, double target, size_t cap) {
  if (!(target > 0) || !std::isfinite(sd)) return 0;
  for (size_t n = 2; n <= cap; ++n)
    if (minimal_detectable_effect(sd, n, eval_var) <= target) return n;
  return 0;
}

NoisyPairedTest noisy_paired_test(const std::vector<double>& d_in,
                                  const std::vector<double>& eval_var_in, double shift) {
  std::vector<double> d, ev;
  for (size_t k = 0; k < d_in.size(); ++k) {
    if (std::isnan(d_in[k])) continue;
    d.push_back(d_in[k]);
    const double v = k < eval_var_in.size() ? eval_var_in[k] : 0.0;
    ev.push_back(std::isfinite(v) ? std::max(v, 0.0) : 0.0);
  }
  NoisyPairedTest r;
  r.n = d.size();
  r.mean = mean(d);
  r.sd = sample_std(d);
  r.eval_var = ev.empty() ? 0.0 : mean(ev);
  r.se = r.df = r.lo = r.hi = r.t = r.p_greater = r.p_less = r.p_two = r.mde = kNaN;
  if (r.n < 2) return r;
  const double nn = static_cast<double>(r.n);
  const double seed_part = r.sd * r.sd / nn;
  r.se = std::sqrt(seed_part + r.eval_var);
  // Welch–Satterthwaite: the evaluation part is known (infinite degrees of freedom).
  r.df = seed_part > 0 ? (r.se * r.se) * (r.se * r.se) / (seed_part * seed_part / (nn - 1))
                       : INFINITY;
  r.mde = minimal_detectable_effect(r.sd, r.n, r.eval_var);
  if (!(r.se > 0)) {
    // No spread at all: the data decide exactly.
    const double m = r.mean - shift;
    r.lo = r.hi = r.mean;
    r.t = m > 0 ? INFINITY : m < 0 ? -INFINITY : kNaN;
    r.p_greater = m > 0 ? 0.0 : 1.0;
    r.p_less = m < 0 ? 0.0 : 1.0;
    r.p_two = m != 0 ? 0.0 : 1.0;
    return r;
  }
  const double half = quantile(0.975, r.df) * r.se;
  r.lo = r.mean - half;
  r.hi = r.mean + half;
  r.t = (r.mean - shift) / r.se;
  r.p_less = cdf(r.t, r.df);
  r.p_greater = cdf(-r.t, r.df);
  r.p_two = std::min(1.0, 2.0 * std::min(r.p_less, r.p_greater));
  return r;
}

double crossed_bootstrap(const std::vector<std::vector<double>>& D, int draws, uint64_t rng_seed) {
  const size_t n = D.size(), N = n ? D.front().size() : 0;
  if (n == 0 || N == 0 || draws < 2) return kNaN;
  std::mt19937_64 rng(rng_seed);
  std::uniform_int_distribution<size_t> pick_seed(0, n - 1), pick_example(0, N - 1);
  std::vector<double> means;
  std::vector<size_t> rows(n), cols(N);
  for (int b = 0; b < draws; ++b) {
    for (auto& i : rows) i = pick_seed(rng);
    for (auto& j : cols) j = pick_example(rng);
    double sum = 0;
    for (size_t i : rows)
      for (size_t j : cols) sum += D[i][j];
    means.push_back(sum / static_cast<double>(n * N));
  }
  const double s = sample_std(means);
  return s * s;
}

double crossed_bootstrap_variance(const std::vector<std::vector<double>>& D) {
  const size_t n = D.size(), N = n ? D.front().size() : 0;
  if (n == 0 || N == 0) return kNaN;
  std::vector<double> row(n, 0.0), col(N, 0.0);
  double grand = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < N; ++j) row[i] += D[i][j], col[j] += D[i][j], grand += D[i][j];
  grand /= static_cast<double>(n * N);
  double sa = 0, sb = 0, sg = 0;
  for (size_t i = 0; i < n; ++i) {
    const double a = row[i] / static_cast<double>(N) - grand;
    sa += a * a;
  }
  for (size_t j = 0; j < N; ++j) {
    const double b = col[j] / static_cast<double>(n) - grand;
    sb += b * b;
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < N; ++j) {
      const double g = D[i][j] - row[i] / static_cast<double>(N) - col[j] / static_cast<double>(n) + grand;
      sg += g * g;
    }
  const double nn = static_cast<double>(n), NN = static_cast<double>(N);
  return (sa / nn) / nn + (sb / NN) / NN + (sg / (nn * NN)) / (nn * NN);
}

namespace {

// Residuals of v after the least-squares line on z.
std::vector<double> residuals(const std::vector<double>& v, const std::vector<double>& z) {
  const double mz = mean(z), mv = mean(v);
  double szz = 0, szv = 0;
  for (size_t k = 0; k < v.size(); ++k) szz += (z[k] - mz) * (z[k] - mz), szv += (z[k] - mz) * (v[k] - mv);
  const double slope = szz > 0 ? szv / szz : 0.0;
  std::vector<double> out;
  for (size_t k = 0; k < v.size(); ++k) out.push_back(v[k] - mv - slope * (z[k] - mz));
  return out;
}

}  // namespace

double partial_correlation(const std::vector<double>& x_in, const std::vector<double>& y_in,
                           const std::vector<double>& z_in) {
  const bool with_z = !z_in.empty();
  std::vector<double> x, y, z;
  for (size_t k = 0; k < x_in.size() && k < y_in.size(); ++k) {
    const double zk = with_z ? (k < z_in.size() ? z_in[k] : kNaN) : 0.0;
    if (std::isnan(x_in[k]) || std::isnan(y_in[k]) || std::isnan(zk)) continue;
    x.push_back(x_in[k]), y.push_back(y_in[k]), z.push_back(zk);
  }
  if (x.size() < (with_z ? 4u : 3u)) return kNaN;
  if (!with_z) return pearson(x, y);
  return pearson(residuals(x, z), residuals(y, z));
}

ClusterCorrelation cluster_bootstrap_correlation(const std::vector<double>& x,
                                                 const std::vector<double>& y,
                                                 const std::vector<double>& z,
                                                 const std::vector<int64_t>& cluster, int draws,
                                                 uint64_t rng_seed) {
  ClusterCorrelation c;
  std::map<int64_t, std::vector<size_t>> members;
  for (size_t k = 0; k < x.size() && k < cluster.size(); ++k) members[cluster[k]].push_back(k);
  c.n = x.size();
  c.clusters = members.size();
  c.r = partial_correlation(x, y, z);
  c.lo = c.hi = c.p_two = c.p_greater = kNaN;
  if (c.clusters < 2 || std::isnan(c.r)) return c;
  std::vector<std::vector<size_t>> groups;
  for (auto& [id, ks] : members) groups.push_back(ks);
  std::mt19937_64 rng(rng_seed);
  std::uniform_int_distribution<size_t> pick(0, groups.size() - 1);
  std::vector<double> rs;
  size_t at_most_0 = 0, at_least_0 = 0;
  for (int b = 0; b < draws; ++b) {
    std::vector<double> bx, by, bz;
    for (size_t g = 0; g < groups.size(); ++g)
      for (size_t k : groups[pick(rng)]) {
        bx.push_back(x[k]), by.push_back(y[k]);
        if (!z.empty()) bz.push_back(z[k]);
      }
    const double r = partial_correlation(bx, by, bz);
    if (std::isnan(r)) continue;  // a replicate without spread says nothing
    rs.push_back(r);
    at_most_0 += r <= 0;
    at_least_0 += r >= 0;
  }
  if (rs.size() < 20) return c;
  std::sort(rs.begin(), rs.end());
  const auto at = [&](double q) {
    const double pos = q * static_cast<double>(rs.size() - 1);
    const size_t i = static_cast<size_t>(pos);
    const double f = pos - static_cast<double>(i);
    return i + 1 < rs.size() ? rs[i] * (1 - f) + rs[i + 1] * f : rs.back();
  };
  c.lo = at(0.025);
  c.hi = at(0.975);
  const double B = static_cast<double>(rs.size());
  c.p_greater = (static_cast<double>(at_most_0) + 1) / (B + 1);
  c.p_two = std::min(1.0, 2.0 * std::min(c.p_greater, (static_cast<double>(at_least_0) + 1) / (B + 1)));
  return c;
}

}  // namespace relpos::analysis
