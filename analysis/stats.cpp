#include "analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace relpos::analysis {
namespace {}

double mean(const std::vector<double>& x) {
  if (x.empty()) return kNaN;
  return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

double sample_std(const std::vector<double>& x) {
  if (x.size() < 2) return kNaN;
  const double m = mean(x);
  double ss = 0.0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

namespace {
bool all_finite(const std::vector<double>& x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}
}  // namespace

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return kNaN;
  if (!all_finite(x) || !all_finite(y)) return kNaN;
  const double mx = mean(x), my = mean(y);
  double sxy = 0.0, sxx = 0.0, syy = 0.0;
  for (size_t k = 0; k < x.size(); ++k) {
    sxy += (x[k] - mx) * (y[k] - my);
    sxx += (x[k] - mx) * (x[k] - mx);
    syy += (y[k] - my) * (y[k] - my);
  }
  // A constant vector has no correlation with anything. The test is relative, so rounding
  // noise in a vector of equal values is not read as variation.
  const auto flat = [](double ss, const std::vector<double>& v) {
    double sq = 0.0;
    for (double e : v) sq += e * e;
    return !(ss > 1e-20 * sq);
  };
  if (flat(sxx, x) || flat(syy, y)) return kNaN;
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (size_t k = 0; k < order.size();) {
    size_t end = k + 1;
    while (end < order.size() && x[order[end]] == x[order[k]]) ++end;
    const double avg = 0.5 * static_cast<double>(k + 1 + end);  // mean of ranks k+1..end
    for (size_t m = k; m < end; ++m) r[order[m]] = avg;
    k = end;
  }
  return r;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return kNaN;
  if (!all_finite(x) || !all_finite(y)) return kNaN;  // NaN has no rank
  return pearson(ranks(x), ranks(y));
}

double pearson_of_series(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() < kMinCorrelationPoints ? kNaN : pearson(x, y);
}

double spearman_of_series(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() < kMinCorrelationPoints ? kNaN : spearman(x, y);
}

double interpolate(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  if (xs.empty() || xs.size() != ys.size() || x < xs.front() || x > xs.back()) return kNaN;
  const auto it = std::upper_bound(xs.begin(), xs.end(), x);
  const size_t k = static_cast<size_t>(it - xs.begin()) - 1;  // last index with xs[k] <= x
  if (xs[k] == x || k + 1 >= xs.size()) return ys[k];
  const double t = (x - xs[k]) / (xs[k + 1] - xs[k]);
  return ys[k] + t * (ys[k + 1] - ys[k]);
}

void drop_nan_pairs(std::vector<double>& x, std::vector<double>& y) {
  std::vector<double> xo, yo;
  for (size_t k = 0; k < x.size() && k < y.size(); ++k)
    if (!std::isnan(x[k]) && !std::isnan(y[k])) {
      xo.push_back(x[k]);
      yo.push_back(y[k]);
    }
  x = std::move(xo);
  y = std::move(yo);
}

}  // namespace relpos::analysis
