// `relpos bench`: forward+backward step time and peak memory of every variant at several
// lengths, each configuration in a child process of its own, with ratios to `none` measured in
// the same invocation and the direct [T,T,d] path of the relative variants beside the fast one.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace relpos {

struct BenchCase {
  std::string variant;  // position.type (a registry name or a stack such as learned+tisa)
  // position.relative_impl (fast | direct), then "/" and model.attention_impl when the bench
  // sets it (--attention): "fast", "direct", "fast/eager", "fast/fused", "direct/eager"
  std::string impl;
  int64_t length = 0;   // T
};

// The parts of BenchCase::impl: position.relative_impl, and model.attention_impl ("" when the
// config's own is used).
std::string relative_impl_of(const std::string& impl);
std::string attention_impl_of(const std::string& impl);
// `relative_impl` on the attention path of `impl`: ("fast", "direct/fused") -> "fast/fused".
std::string on_same_attention(const std::string& relative_impl, const std::string& impl);

// One configuration after all its repeats (medians over the repeats that succeeded).
struct CaseSummary {
  BenchCase key;
  int runs = 0;             // repeats that succeeded
  int failures = 0;         // repeats that failed
  std::string error;        // the last failure, "" when every repeat succeeded
  double step_ms = 0;       // median step wall time
  double cpu_ms = 0;        // median process CPU time per step
  double tokens_per_s = 0;
  double peak_mb = 0;       // peak RSS (ru_maxrss of the child)
  double base_mb = 0;       // RSS before the first step (libraries, model, batch)
  double step_mb = 0;       // peak_mb - base_mb: what the steps themselves added
  double cuda_peak_mb = -1; // CUDA caching allocator peak (GPU runs), else -1
  // Ratios to `none` at the same T, computed per repeat and then the median; NaN when `none`
  // failed at this T.
  double time_ratio = 0, peak_ratio = 0, step_mb_ratio = 0;
  double cuda_ratio = 0;    // cuda_peak_mb over none's (GPU runs; NaN on CPU)
  // --paired: log(step time / baseline's step time) of every paired round of every repeat
  // (StepOptions::paired), and what the caller makes of them: the geometric mean ratio and its
  // 95% interval (the command fills these in: the t quantile lives in the analysis layer).
  std::vector<double> paired_log_ratios;
  double paired_ratio = std::numeric_limits<double>::quiet_NaN();
  double paired_lo = std::numeric_limits<double>::quiet_NaN();
  double paired_hi = std::numeric_limits<double>::quiet_NaN();
  bool gpu() const { return cuda_peak_mb >= 0; }
  nlohmann::ordered_json child;  // the last successful child's own report
  bool ok() const { return runs > 0; }
};

// Growth with T, from a least-squares line through (log T, log y) over the lengths that ran.
struct GrowthFit {
  std::string variant, impl;
  double time_exponent = 0;     // step_ms ∝ T^p
  double memory_exponent = 0;   // step_mb ∝ T^p (on a GPU: cuda_peak_mb ∝ T^p)
  int points = 0;
};

struct BenchPlan {
  std::vector<std::string> variants;  // `none` is added first when missing (ratios need it)
  std::vector<int64_t> lengths;
  std::vector<std::string> direct;    // variants also measured with relative_impl=direct
  // model.attention_impl values every case is measured with (--attention); empty: the config's
  std::vector<std::string> attention;
  int repeats = 1;                    // every configuration this many times, interleaved
  int paired = 0;                     // paired rounds against `none` in each child (StepOptions)
  int timeout_s = 0;                  // per child; 0 = none
  double max_memory_mb = 0;           // per child address-space limit; 0 = none
  std::string program;                // the relpos executable
  std::vector<std::string> child_args;  // `bench --child` and the options shared by all cases
  std::vector<std::string> extra_env;
};

// The configurations of a plan, in the order they run within one repeat.
std::vector<BenchCase> plan_cases(const BenchPlan& plan);

// The variants of `variants` whose relative_impl selects between two code paths
// (VariantInfo::direct_path): the direct column is measured for them. has_direct_path() of a
// stack: core/position/position_registry.h.
std::vector<std::string> default_direct_variants(const std::vector<std::string>& variants);

// Runs every case `repeats` times (cases interleaved within a repeat), each in a child process.
// `progress` is called after every child. A child that fails is recorded, never thrown.
std::vector<CaseSummary> run_bench(
    const BenchPlan& plan,
    const std::function<void(const BenchCase&, int done, int total, const std::string& line)>&
        progress);

// Slope of the least-squares line through (log x, log y); NaN with fewer than two points.
double loglog_slope(const std::vector<double>& x, const std::vector<double>& y);

std::vector<GrowthFit> growth_fits(const std::vector<CaseSummary>& cases);

// The `RELPOS_BENCH_RESULT {json}` line a child prints, and its parsing.
extern const char* const kResultTag;

}  // namespace relpos
