#include "analysis/invariance_baseline.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/types.h>

#include <cmath>
#include <mutex>
#include <tuple>

#include "analysis/invariance.h"
#include "analysis/snapshot.h"
#include "analysis/stats.h"

namespace relpos::analysis {

InvarianceBaseline random_gram_baseline(int64_t n, int64_t E, int64_t draws) {
  static std::mutex mutex;
  static std::map<std::tuple<int64_t, int64_t, int64_t>, InvarianceBaseline> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(n, E, draws);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  // A generator of its own: the baseline must not depend on, or disturb, anyone's random state.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(/*seed_in=*/20210601);
  std::vector<double> scores;
  for (int64_t k = 0; k < draws; ++k) {
    const auto p = torch::randn({n, E}, gen, torch::kFloat64);  // (n,E)
    scores.push_back(invariance(to_matrix(p.matmul(p.t())), Region::full));
  }
  InvarianceBaseline b;
  b.mean = mean(scores);
  const double half = draws > 1 ? 1.96 * sample_std(scores) / std::sqrt(static_cast<double>(draws)) : kNaN;
  b.lo = b.mean - half;
  b.hi = b.mean + half;
  b.draws = draws;
  b.how = fmt::format("mean over {} random {} × {} Gaussian tables", draws, n, E);
  cache.emplace(key, b);
  return b;
}

double corrected_invariance(double value, double baseline) {
  if (!std::isfinite(value) || !std::isfinite(baseline) || baseline >= 1) return kNaN;
  return (value - baseline) / (1 - baseline);
}

std::map<std::string, InvarianceBaseline> invariance_baselines(
    const std::map<std::string, std::vector<double>>& invariance, const std::vector<int64_t>& steps,
    const std::map<std::string, std::pair<int64_t, int64_t>>& gram_shapes) {
  std::map<std::string, InvarianceBaseline> out;
  for (const auto& [q, series] : invariance) {
    if (q.rfind("gram:", 0) == 0) {
      const auto it = gram_shapes.find(q.substr(5));
      if (it != gram_shapes.end() && it->second.first > 1 && it->second.second > 0)
        out[q] = random_gram_baseline(it->second.first, it->second.second);
    } else if (!steps.empty() && steps.front() == 0 && !series.empty() && std::isfinite(series.front())) {
      out[q] = {series.front(), series.front(), series.front(), 0, "step 0 of this run"};
    }
  }
  return out;
}

}  // namespace relpos::analysis
