#include "analysis/invariance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/stats.h"
#include "core/util/errors.h"

namespace relpos::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_square(const Matrix& a) {
  if (a.rows != a.cols || a.rows < 1 || static_cast<int64_t>(a.data.size()) != a.rows * a.cols)
    throw Error(fmt::format("translation invariance needs a square non-empty matrix (got {}x{})",
                            a.rows, a.cols));
}

bool visible(Region region, int64_t i, int64_t j) { return region == Region::full || j <= i; }

}  // namespace

double Profile::at(int64_t r) const {
  if (offsets.empty() || r < offsets.front() || r > offsets.back()) return kNaN;
  return values[r - offsets.front()];
}

Profile diagonal_profile(const Matrix& a, Region region) {
  check_square(a);
  const int64_t T = a.rows;
  const int64_t r_max = region == Region::full ? T - 1 : 0;
  Profile g;
  for (int64_t r = -(T - 1); r <= r_max; ++r) {
    double sum = 0.0;
    int64_t n = 0;
    for (int64_t i = std::max<int64_t>(0, -r); i < T && i + r < T; ++i, ++n) sum += a(i, i + r);
    g.offsets.push_back(r);
    g.values.push_back(sum / static_cast<double>(n));
    g.counts.push_back(n);
  }
  return g;
}

Matrix toeplitz_projection(const Matrix& a, Region region) {
  const Profile g = diagonal_profile(a, region);
  Matrix p(a.rows, a.cols, 0.0);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j)
      if (visible(region, i, j)) p(i, j) = g.at(j - i);
  return p;
}

// invariance() with A's profile g already computed.
static double invariance_given(const Matrix& a, Region region, const Profile& g) {
  const int64_t T = a.rows;
  double sum = 0.0, squares = 0.0;
  int64_t n = 0;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      if (visible(region, i, j)) {
        // A diverged run's NaN or infinity would otherwise read as "perfectly invariant".
        if (!std::isfinite(a(i, j))) return kNaN;
        sum += a(i, j);
        squares += a(i, j) * a(i, j);
        ++n;
      }
  const double mu = sum / static_cast<double>(n);
  double residual = 0.0, total = 0.0;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      if (visible(region, i, j)) {
        const double d = a(i, j) - g.at(j - i);
        residual += d * d;
        total += (a(i, j) - mu) * (a(i, j) - mu);
      }
  // A constant matrix is trivially translation invariant; a uniform 1/T attention map leaves
  // rounding residue in both sums, hence the relative threshold instead of total == 0.
  if (!(total > kFlatTolerance * squares)) return 1.0;
  return std::clamp(1.0 - residual / total, 0.0, 1.0);
}

double invariance(const Matrix& a, Region region) {
  return invariance_given(a, region, diagonal_profile(a, region));
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

MatrixMetrics measure(const Matrix& a, Region region) {
  MatrixMetrics m;
  m.profile = diagonal_profile(a, region);
  m.invariance = invariance_given(a, region, m.profile);
  m.symmetry = symmetry(m.profile);
  m.monotonicity_left = monotonicity(m.profile, false);
  m.monotonicity_right = monotonicity(m.profile, true);
  return m;
}

}  // namespace relpos::analysis
