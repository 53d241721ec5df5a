#include "analysis/invariance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/stats.h"
#include "core/util/errors.h"

namespace relpos::analysis {
namespace {

void check_square(const Matrix& a) {
  if (a.rows != a.cols || a.rows < 1 || static_cast<int64_t>(a.data.size()) != a.rows * a.cols)
    throw Error(fmt::format("translation invariance needs a square non-empty matrix (got {}x{})",
                            a.rows, a.cols));
}

void check_mask(const Matrix& a, const Mask& mask) {
  check_square(a);
  if (static_cast<int64_t>(mask.size()) != a.rows * a.cols)
    throw Error(fmt::format("translation invariance: a mask of {} entries for a {}x{} matrix",
                            mask.size(), a.rows, a.cols));
}

// A's profile with `mask`, and the offsets' first and last index with entries (trimmed).
Profile masked_profile(const Matrix& a, const Mask& mask) {
  check_mask(a, mask);
  const int64_t T = a.rows;
  Profile g;
  for (int64_t r = -(T - 1); r <= T - 1; ++r) {
    double sum = 0.0;
    int64_t n = 0;
    for (int64_t i = std::max<int64_t>(0, -r); i < T && i + r < T; ++i)
      if (mask[i * T + i + r]) sum += a(i, i + r), ++n;
    g.offsets.push_back(r);
    g.values.push_back(n ? sum / static_cast<double>(n) : kNaN);
    g.counts.push_back(n);
  }
  // Offsets no entry reaches at either end (above the diagonal of a causal map, past the
  // longest real row of a padded probe) are not part of the profile.
  size_t first = 0, last = g.counts.size();
  while (first < last && g.counts[first] == 0) ++first;
  while (last > first && g.counts[last - 1] == 0) --last;
  g.values = std::vector<double>(g.values.begin() + first, g.values.begin() + last);
  g.offsets = std::vector<int64_t>(g.offsets.begin() + first, g.offsets.begin() + last);
  g.counts = std::vector<int64_t>(g.counts.begin() + first, g.counts.begin() + last);
  return g;
}

// invariance() with A's profile g already computed.
double invariance_given(const Matrix& a, const Mask& mask, const Profile& g) {
  const int64_t T = a.rows;
  double sum = 0.0, squares = 0.0;
  int64_t n = 0;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      if (mask[i * T + j]) {
        // A diverged run's NaN or infinity would otherwise read as "perfectly invariant".
        if (!std::isfinite(a(i, j))) return kNaN;
        sum += a(i, j);
        squares += a(i, j) * a(i, j);
        ++n;
      }
  if (n == 0) return kNaN;
  const double mu = sum / static_cast<double>(n);
  double residual = 0.0, total = 0.0;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      if (mask[i * T + j]) {
        const double d = a(i, j) - g.at(j - i);
        residual += d * d;
        total += (a(i, j) - mu) * (a(i, j) - mu);
      }
  // A constant matrix is trivially translation invariant; a uniform 1/T attention map leaves
  // rounding residue in both sums, hence the relative threshold instead of total == 0.
  if (!(total > kFlatTolerance * squares)) return 1.0;
  return std::clamp(1.0 - residual / total, 0.0, 1.0);
}

}  // namespace

Mask region_mask(int64_t T, Region region) {
  Mask m(static_cast<size_t>(T * T), 1);
  if (region == Region::lower)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = i + 1; j < T; ++j) m[i * T + j] = 0;
  return m;
}

double Profile::at(int64_t r) const {
  if (offsets.empty() || r < offsets.front() || r > offsets.back()) return kNaN;
  return values[r - offsets.front()];
}

Profile diagonal_profile(const Matrix& a, Region region) {
  check_square(a);
  return masked_profile(a, region_mask(a.rows, region));
}

Profile diagonal_profile(const Matrix& a, const Mask& mask) { return masked_profile(a, mask); }

Matrix toeplitz_projection(const Matrix& a, const Mask& mask) {
  const Profile g = masked_profile(a, mask);
  Matrix p(a.rows, a.cols, 0.0);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j)
      if (mask[i * a.cols + j]) p(i, j) = g.at(j - i);
  return p;
}

Matrix toeplitz_projection(const Matrix& a, Region region) {
  check_square(a);
  return toeplitz_projection(a, region_mask(a.rows, region));
}

double invariance(const Matrix& a, const Mask& mask) {
  return invariance_given(a, mask, masked_profile(a, mask));
}

double invariance(const Matrix& a, Region region) {
  check_square(a);
  return invariance(a, region_mask(a.rows, region));
}

double symmetry(const Profile& g) {
  std::vector<double> pos, neg;
  for (int64_t r = 1; g.offsets.size() && r <= g.offsets.back(); ++r) {
    const double left = g.at(-r);
    if (std::isnan(left)) break;
    pos.push_back(g.at(r));
    neg.push_back(left);
  }
  return pearson(pos, neg);
}

double monotonicity(const Profile& g, bool right) {
  std::vector<double> distance, value;
  for (size_t k = 0; k < g.offsets.size(); ++k) {
    const int64_t r = g.offsets[k];
    if (right ? r > 0 : r < 0) {
      distance.push_back(static_cast<double>(std::abs(r)));
      value.push_back(g.values[k]);
    }
  }
  return spearman(distance, value);
}

MatrixMetrics measure(const Matrix& a, const Mask& mask) {
  MatrixMetrics m;
  m.profile = masked_profile(a, mask);
  m.invariance = invariance_given(a, mask, m.profile);
  m.symmetry = symmetry(m.profile);
  m.monotonicity_left = monotonicity(m.profile, false);
  m.monotonicity_right = monotonicity(m.profile, true);
  return m;
}

MatrixMetrics measure(const Matrix& a, Region region) {
  check_square(a);
  return measure(a, region_mask(a.rows, region));
}

}  // namespace relpos::analysis
