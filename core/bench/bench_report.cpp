#include "core/bench/bench_report.h"

#include <fmt/format.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <thread>

#include "core/util/cpu_block_cache.h"
#include "core/util/system.h"
#include "core/util/threads.h"

namespace relpos {
namespace {

std::string num(double x, const char* f = "{:.2f}") {
  return std::isnan(x) ? std::string("-") : fmt::format(fmt::runtime(f), x);
}

nlohmann::ordered_json json_num(double x) {
  return std::isnan(x) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(x);
}

const CaseSummary* find(const std::vector<CaseSummary>& cases, const std::string& v,
                        const std::string& impl, int64_t T) {
  for (const auto& c : cases)
    if (c.key.variant == v && c.key.impl == impl && c.key.length == T) return &c;
  return nullptr;
}

// Cases measured on a GPU report the CUDA allocator's peak; the table and fits then use it.
bool gpu_run(const std::vector<CaseSummary>& cases) {
  return std::any_of(cases.begin(), cases.end(), [](const CaseSummary& c) { return c.ok() && c.gpu(); });
}

// "1.07 [1.05, 1.09]": a paired ratio and its interval; "" when the case has none.
std::string paired_cell(const CaseSummary& c) {
  if (std::isnan(c.paired_ratio)) return "";
  return fmt::format("  {:.3f} [{:.3f}, {:.3f}] n={}", c.paired_ratio, c.paired_lo, c.paired_hi,
                     c.paired_log_ratios.size());
}

}  // namespace

namespace {

// The main table: one row per case, the lengths separated by a blank line, and its legend.
std::string case_rows(const std::vector<CaseSummary>& cases, bool gpu, bool paired) {
  std::string out;
  if (gpu)
    out += fmt::format("{:<15} {:<12} {:>5} {:>10} {:>6} {:>9} {:>9} {:>8} {:>6} {:>8}\n", "variant",
                       "impl", "T", "ms/step", "xnone", "cpu ms", "tok/s", "GPU MB", "xnone",
                       "host MB");
  else
    out += fmt::format("{:<15} {:<12} {:>5} {:>10} {:>6} {:>9} {:>9} {:>8} {:>6} {:>8} {:>6}\n",
                       "variant", "impl", "T", "ms/step", "xnone", "cpu ms", "tok/s", "peak MB",
                       "xnone", "step MB", "xnone");
  if (paired) out.insert(out.size() - 1, "  paired xnone [95% CI]");
  int64_t last_T = -1;
  for (const auto& c : cases) {
    if (last_T >= 0 && c.key.length != last_T) out += "\n";
    last_T = c.key.length;
    if (!c.ok()) {
      out += fmt::format("{:<15} {:<12} {:>5} FAILED ({} of {} runs): {}\n", c.key.variant,
                         c.key.impl, c.key.length, c.failures, c.failures + c.runs, c.error);
      continue;
    }
    const std::string failed = c.failures ? fmt::format("  ({} failed runs)", c.failures) : "";
    if (gpu)
      out += fmt::format("{:<15} {:<12} {:>5} {:>10} {:>6} {:>9} {:>9} {:>8} {:>6} {:>8}{}\n",
                         c.key.variant, c.key.impl, c.key.length, num(c.step_ms, "{:.1f}"),
                         num(c.time_ratio), num(c.cpu_ms, "{:.1f}"), num(c.tokens_per_s, "{:.0f}"),
                         num(c.cuda_peak_mb, "{:.0f}"), num(c.cuda_ratio), num(c.peak_mb, "{:.0f}"),
                         paired_cell(c) + failed);
    else
      out += fmt::format("{:<15} {:<12} {:>5} {:>10} {:>6} {:>9} {:>9} {:>8} {:>6} {:>8} {:>6}{}\n",
                         c.key.variant, c.key.impl, c.key.length, num(c.step_ms, "{:.1f}"),
                         num(c.time_ratio), num(c.cpu_ms, "{:.1f}"), num(c.tokens_per_s, "{:.0f}"),
                         num(c.peak_mb, "{:.0f}"), num(c.peak_ratio), num(c.step_mb, "{:.0f}"),
                         num(c.step_mb_ratio), paired_cell(c) + failed);
  }
  // With --paired the child takes every peak before its paired rounds build the second model.
  const std::string host_peak =
      paired ? "the child's VmHWM before its paired rounds" : "ru_maxrss of the child";
  out += gpu ? fmt::format(
                   "xnone: ratio to `none` at the same T, per repeat, then the median. "
                   "GPU MB: peak bytes allocated by the CUDA caching allocator{}; host "
                   "MB: {}.\n",
                   paired ? " before the paired rounds" : "", host_peak)
             : fmt::format(
                   "xnone: ratio to `none` at the same T, per repeat, then the median. "
                   "peak MB: {}; step MB: peak minus the RSS before the first step.\n",
                   host_peak);
  if (paired)
    out +=
        "paired xnone: step time over none's, both models in one process, one step of each "
        "per round, alternating which goes first; geometric mean over the rounds (n, all "
        "repeats) with its 95% t-interval.\n";

  return out;
}

// The relative variants' direct [T,T,d] path beside their fast one, at each length.
std::string direct_rows(const std::vector<CaseSummary>& cases, bool gpu) {
  std::string out;
  std::string direct;
  for (const auto& c : cases) {
    if (relative_impl_of(c.key.impl) != "direct" || !c.ok()) continue;
    const std::string att = attention_impl_of(c.key.impl);
    const CaseSummary* f =
        find(cases, c.key.variant, on_same_attention("fast", c.key.impl), c.key.length);
    if (!f || !f->ok()) continue;
    const std::string name = att.empty() ? c.key.variant : c.key.variant + " (" + att + ")";
    if (gpu) {
      direct += fmt::format("{:<15} {:>5} {:>10} {:>10} {:>7} {:>9} {:>9} {:>7}\n", name,
                            c.key.length, num(f->step_ms, "{:.1f}"), num(c.step_ms, "{:.1f}"),
                            num(c.step_ms / f->step_ms), num(f->cuda_peak_mb, "{:.0f}"),
                            num(c.cuda_peak_mb, "{:.0f}"), num(c.cuda_peak_mb / f->cuda_peak_mb));
      continue;
    }
    direct += fmt::format("{:<15} {:>5} {:>10} {:>10} {:>7} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7}\n",
                          name, c.key.length, num(f->step_ms, "{:.1f}"),
                          num(c.step_ms, "{:.1f}"), num(c.step_ms / f->step_ms),
                          num(f->peak_mb, "{:.0f}"), num(c.peak_mb, "{:.0f}"),
                          num(c.peak_mb / f->peak_mb), num(f->step_mb, "{:.0f}"),
                          num(c.step_mb, "{:.0f}"), num(c.step_mb / f->step_mb));
  }
  if (!direct.empty() && gpu) {
    out += fmt::format("\nfast vs direct [T,T,d] path (GPU MB)\n{:<15} {:>5} {:>10} {:>10} {:>7} "
                       "{:>9} {:>9} {:>7}\n",
                       "variant", "T", "fast ms", "direct ms", "d/f", "fast MB", "direct MB", "d/f");
    out += direct;
  } else if (!direct.empty()) {
    out += fmt::format("\nfast vs direct [T,T,d] path\n{:<15} {:>5} {:>10} {:>10} {:>7} {:>9} "
                       "{:>9} {:>7} {:>9} {:>9} {:>7}\n",
                       "variant", "T", "fast ms", "direct ms", "d/f", "fast pk", "direct pk",
                       "d/f", "fast stp", "direct stp", "d/f");
    out += direct;
  }

  return out;
}

// The log-log slopes of time and memory against T.
std::string growth_rows(const std::vector<GrowthFit>& fits, bool gpu) {
  std::string out;
  bool any_fit = false;
  for (const auto& f : fits) any_fit = any_fit || f.points >= 2;
  if (any_fit) {
    out += fmt::format("\ngrowth with T (least-squares slope on log-log)\n{:<15} {:<12} {:>6} "
                       "{:>10} {:>12}\n",
                       "variant", "impl", "points", "time ~T^p", gpu ? "GPU MB ~T^p" : "step MB ~T^p");
    for (const auto& f : fits)
      if (f.points >= 2)
        out += fmt::format("{:<15} {:<12} {:>6} {:>10} {:>12}\n", f.variant, f.impl, f.points,
                           num(f.time_exponent), num(f.memory_exponent));
  }
  return out;
}

}  // namespace

std::string bench_table(const std::vector<CaseSummary>& cases, const std::vector<GrowthFit>& fits) {
  const bool paired = std::any_of(cases.begin(), cases.end(),
                                  [](const CaseSummary& c) { return !std::isnan(c.paired_ratio); });
  // A GPU run's memory is the GPU's (the CUDA caching allocator's peak); the host's RSS is
  // shown beside it. A CPU run shows the child's peak RSS and what its steps added.
  const bool gpu = gpu_run(cases);
  return case_rows(cases, gpu, paired) + direct_rows(cases, gpu) + growth_rows(fits, gpu);
}

nlohmann::ordered_json bench_json(nlohmann::ordered_json doc,
                                  const std::vector<CaseSummary>& cases,
                                  const std::vector<GrowthFit>& fits) {
  auto& arr = doc["cases"] = nlohmann::ordered_json::array();
  for (const auto& c : cases) {
    nlohmann::ordered_json j;
    j["variant"] = c.key.variant;
    j["impl"] = c.key.impl;
    j["length"] = c.key.length;
    j["status"] = c.ok() ? "ok" : "failed";
    j["runs"] = c.runs;
    j["failures"] = c.failures;
    if (!c.error.empty()) j["error"] = c.error;
    if (c.ok()) {
      j["step_ms"] = c.step_ms;
      j["cpu_ms"] = c.cpu_ms;
      j["tokens_per_s"] = c.tokens_per_s;
      j["peak_rss_mb"] = c.peak_mb;
      j["base_rss_mb"] = c.base_mb;
      j["step_mb"] = c.step_mb;
      j["cuda_peak_mb"] = json_num(c.cuda_peak_mb);
      j["cuda_peak_ratio_vs_none"] = json_num(c.cuda_ratio);
      j["time_ratio_vs_none"] = json_num(c.time_ratio);
      j["peak_ratio_vs_none"] = json_num(c.peak_ratio);
      j["step_mb_ratio_vs_none"] = json_num(c.step_mb_ratio);
      if (!c.paired_log_ratios.empty())
        j["paired_vs_none"] = {{"n", c.paired_log_ratios.size()},
                               {"ratio", json_num(c.paired_ratio)},
                               {"ci95", {json_num(c.paired_lo), json_num(c.paired_hi)}},
                               {"log_ratios", c.paired_log_ratios}};
      j["child"] = c.child;
    }
    arr.push_back(std::move(j));
  }
  // growth_fits fits the GPU's peak on a GPU run, the steps' RSS growth on a CPU run.
  const bool gpu = gpu_run(cases);
  auto& fa = doc["fits"] = nlohmann::ordered_json::array();
  for (const auto& f : fits)
    fa.push_back({{"variant", f.variant},
                  {"impl", f.impl},
                  {"points", f.points},
                  {"time_exponent", json_num(f.time_exponent)},
                  {gpu ? "cuda_peak_mb_exponent" : "step_mb_exponent", json_num(f.memory_exponent)}});
  return doc;
}

nlohmann::ordered_json machine_info() {
  nlohmann::ordered_json j;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  j["date"] = utc_timestamp();
  j["host"] = host;
  j["cpu"] = cpu_model().empty() ? "unknown" : cpu_model();
  j["hardware_threads"] = std::thread::hardware_concurrency();
  j["available_cpus"] = available_cpus();
  j["transparent_huge_pages"] = transparent_huge_pages_mode();
  j["git_commit"] = git_commit();
  j["libtorch"] = TORCH_VERSION;
  j["blas_library"] = blas_library();
  j["openblas_config"] = openblas_config();
  return j;
}

}  // namespace relpos
