#include "analysis/evaluation_noise.h"

#include <fmt/format.h>

#include <cmath>

#include "analysis/stats.h"

namespace relpos::analysis {
namespace {

double proportion_var(double p, double n) { return n > 0 ? p * (1 - p) / n : kNaN; }
double mean_var(double sd, double n) { return n > 0 ? sd * sd / n : kNaN; }

// The variance of metric `m` (no prefix) with value v, given the sampling statistics `get`
// returns (NaN when absent); `length` is "" or "@64" for per-length statistics.
template <class Get>
double metric_var(const std::string& m, double v, const Get& get, const std::string& length) {
  if (m == "accuracy") return proportion_var(v, get("items"));
  if (m == "em") return 1e4 * proportion_var(v / 100, get("items"));
  if (m == "loss") return mean_var(get("loss_sd"), get("items"));
  if (m == "ppl") return v * v * mean_var(get("loss_sd"), get("items"));
  if (m == "f1") return mean_var(get("f1_sd"), get("items"));
  if (m == "seq_accuracy") return proportion_var(v, get("seq_items" + length));
  return kNaN;
}

}  // namespace

std::map<std::string, double> evaluation_variances(const std::map<std::string, Series>& metrics) {
  std::map<std::string, double> out;
  for (const char* split : {"valid_", "test_"}) {
    const auto get = [&](const std::string& stat) {
      const auto it = metrics.find(split + stat);
      return it == metrics.end() || it->second.y.empty() ? kNaN : it->second.y.back();
    };
    for (const auto& [name, s] : metrics) {
      if (name.rfind(split, 0) != 0 || s.y.empty()) continue;
      std::string m = name.substr(std::string(split).size()), length;
      if (const size_t at = m.find('@'); at != std::string::npos) length = m.substr(at), m = m.substr(0, at);
      const double var = metric_var(m, s.y.back(), get, length);
      if (std::isfinite(var)) out[name] = var;
    }
  }
  return out;
}

std::map<std::string, double> evaluation_variances(const EvalTable& t) {
  std::map<std::string, double> out;
  for (size_t k = 0; k < t.length.size(); ++k) {
    const auto get = [&](const std::string& stat) {
      for (const auto& [name, v] : t.counts)
        if (name == stat && k < v.size()) return v[k];
      return kNaN;
    };
    // The counts a table holds: tokens / examples (the scored items), loss_sd, and the same for
    // the sliding window; `items` where the task's own metrics were used.
    const auto items = [&](bool sliding) {
      for (const char* c : {sliding ? "tokens_sliding" : "tokens", "examples", "items"})
        if (const double n = get(c); std::isfinite(n)) return n;
      return kNaN;
    };
    for (const auto& [name, v] : t.columns) {
      if (k >= v.size() || !std::isfinite(v[k])) continue;
      const bool sliding = name.find("_sliding") != std::string::npos;
      const std::string m = sliding ? name.substr(0, name.find("_sliding")) : name;
      const auto stat = [&](const std::string& s) {
        if (s == "items") return items(sliding);
        if (s == "loss_sd") return get(sliding ? "loss_sliding_sd" : "loss_sd");
        if (s.rfind("seq_items", 0) == 0) return items(false);
        return get(s);
      };
      const double var = metric_var(m, v[k], stat, "");
      if (std::isfinite(var)) out[fmt::format("{}@{:g}", name, t.length[k])] = var;
    }
  }
  return out;
}

}  // namespace relpos::analysis
