// Small statistics on plain vectors: mean, sample standard deviation, Pearson and Spearman
// correlation, linear interpolation of a series. Undefined results are NaN, never an exception:
// a correlation of fewer than two points, of a constant vector or of a vector holding a NaN or
// an infinity is NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace relpos::analysis {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Two points always correlate perfectly (±1), which reads as a finding: correlations between
// measured series (invariance against the metric over snapshots or runs) need at least three.
constexpr size_t kMinCorrelationPoints = 3;
// Tables print no statistic (correlation, its interval or p) over fewer points than this: over
// three snapshots a Spearman ρ of ±1 is one chance in three, yet printed it reads as a finding.
// Such cells say "n<5" (kFewPointsText), and the table's note says why.
constexpr size_t kMinReportedPoints = 5;
inline constexpr const char* kFewPointsText = "n<5";
// pearson() and spearman() of pairs, NaN for fewer than kMinCorrelationPoints.
double pearson_of_series(const std::vector<double>& x, const std::vector<double>& y);
double spearman_of_series(const std::vector<double>& x, const std::vector<double>& y);

double mean(const std::vector<double>& x);
// Sample standard deviation (divides by n − 1); NaN for n < 2.
double sample_std(const std::vector<double>& x);
double pearson(const std::vector<double>& x, const std::vector<double>& y);
// Ranks 1..n, ties get the mean of the ranks they span.
std::vector<double> ranks(const std::vector<double>& x);
// Pearson correlation of the ranks.
double spearman(const std::vector<double>& x, const std::vector<double>& y);
// The value of the piecewise-linear series (xs sorted ascending) at x; NaN outside [xs.front(),
// xs.back()]. Equal xs take the later value.
double interpolate(const std::vector<double>& xs, const std::vector<double>& ys, double x);
// Drops pairs where either value is NaN.
void drop_nan_pairs(std::vector<double>& x, std::vector<double>& y);

}  // namespace relpos::analysis
