// Translation-invariance metrics of one T×T matrix A (docs/analysis.md has every formula).
//
//   Π(A)          the Toeplitz matrix whose diagonal at offset r = j − i holds g(r)
//   g(r)          the mean of A's diagonal at offset r (the relative-position profile)
//   invariance    1 − ‖A − Π(A)‖²_F / ‖A − mean(A)‖²_F, in [0, 1]; 1 for a constant A
//   symmetry      Pearson correlation of g(r) and g(−r) over r ≥ 1
//   monotonicity  Spearman correlation of g(r) with |r|, separately for r < 0 and r > 0
//
// Region::lower restricts every sum and mean to the visible entries j ≤ i of a causal
// attention map: the masked upper triangle (all zeros, or −∞ before the softmax) says nothing
// about position, so it is neither part of Π(A) nor of the denominator. Only offsets r ≤ 0
// exist there, so symmetry and right-hand monotonicity are undefined (NaN).
//
// A Mask restricts the sums to any set of entries (a padded probe's real pairs, snapshot.h);
// the Region forms are the masks of the full matrix and of the lower triangle. Offsets with no
// entry in the mask at either end of the profile are dropped.
//
// Plain data in, plain numbers out: no files, no tensors.
#pragma once

#include <cstdint>
#include <vector>

namespace relpos::analysis {

// A dense row-major matrix of doubles.
struct Matrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> data;

  Matrix() = default;
  Matrix(int64_t r, int64_t c, double fill = 0.0) : rows(r), cols(c), data(r * c, fill) {}
  double& operator()(int64_t i, int64_t j) { return data[i * cols + j]; }
  double operator()(int64_t i, int64_t j) const { return data[i * cols + j]; }
};

enum class Region {
  full,   // every entry (bidirectional attention, absolute-table Gram matrices)
  lower,  // entries with j <= i only (causal attention)
};

// g(r) for r = offsets.front() .. offsets.back() (consecutive); count[k] entries averaged.
struct Profile {
  std::vector<int64_t> offsets;
  std::vector<double> values;
  std::vector<int64_t> counts;
  // g(r), or NaN when r is not in the profile.
  double at(int64_t r) const;
};

struct MatrixMetrics {
  double invariance = 0.0;
  double symmetry = 0.0;            // NaN when undefined
  double monotonicity_left = 0.0;   // r < 0; NaN when undefined
  double monotonicity_right = 0.0;  // r > 0; NaN when undefined
  Profile profile;
};

// Relative tolerance of the zero-denominator rule: ‖A − mean‖² <= kFlatTolerance · ‖A‖².
inline constexpr double kFlatTolerance = 1e-12;

// Row-major T×T, nonzero where an entry is measured.
using Mask = std::vector<uint8_t>;
Mask region_mask(int64_t T, Region region);

Profile diagonal_profile(const Matrix& a, Region region = Region::full);
Profile diagonal_profile(const Matrix& a, const Mask& mask);
// Π(A); entries outside the region are 0.
Matrix toeplitz_projection(const Matrix& a, Region region = Region::full);
Matrix toeplitz_projection(const Matrix& a, const Mask& mask);
double invariance(const Matrix& a, Region region = Region::full);
double invariance(const Matrix& a, const Mask& mask);
double symmetry(const Profile& g);
// Spearman correlation of g(r) with |r| over the offsets r < 0 (left) or r > 0 (right).
double monotonicity(const Profile& g, bool right);
MatrixMetrics measure(const Matrix& a, Region region = Region::full);
MatrixMetrics measure(const Matrix& a, const Mask& mask);

}  // namespace relpos::analysis
