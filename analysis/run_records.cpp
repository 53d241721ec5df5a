#include "analysis/run_records.h"

#include <fmt/format.h>

#include <cmath>

namespace relpos::analysis {
namespace {

void add_evaluation(RunRecord& rec, const EvalTable& t) {
  for (const auto& [name, v] : t.columns)
    for (size_t k = 0; k < t.length.size() && k < v.size(); ++k)
      rec.values[fmt::format("{}@{:g}", name, t.length[k])] = v[k];
}

}  // namespace

std::vector<RunRecord> run_records(const std::vector<RunResult>& runs) {
  std::vector<RunRecord> out;
  for (const auto& r : runs) {
    RunRecord rec{r.info.group, {}, r.info.seed};
    for (const auto& [m, s] : r.info.metrics)
      if ((m.rfind("valid_", 0) == 0 || m.rfind("test_", 0) == 0) && !s.y.empty())
        rec.values[m] = s.y.back();
    if (r.info.positional_parameters >= 0)
      rec.values["params"] = static_cast<double>(r.info.positional_parameters);
    for (const auto& [q, v] : r.invariance) {
      // First and last snapshots that measured the quantity.
      for (size_t k = 0; k < v.size(); ++k)
        if (std::isfinite(v[k])) {
          rec.values["inv_first:" + q] = v[k];
          break;
        }
      for (size_t k = v.size(); k-- > 0;)
        if (std::isfinite(v[k])) {
          rec.values["inv_last:" + q] = v[k];
          break;
        }
    }
    add_evaluation(rec, r.info.extrapolation);
    out.push_back(rec);
    for (const auto& [suffix, t] : r.info.extra_evaluations) {
      RunRecord extra{r.info.group + " (" + suffix + ")", {}, r.info.seed};
      add_evaluation(extra, t);
      out.push_back(std::move(extra));
    }
  }
  return out;
}

void add_difference(std::vector<RunRecord>& records, const std::string& name,
                    const std::string& to, const std::string& from) {
  for (auto& r : records) {
    const auto a = r.values.find(to), b = r.values.find(from);
    if (a != r.values.end() && b != r.values.end() && std::isfinite(a->second) &&
        std::isfinite(b->second))
      r.values[name] = a->second - b->second;
  }
}

}  // namespace relpos::analysis
