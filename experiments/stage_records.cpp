#include "experiments/stage_records.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "analysis/run_records.h"
#include "analysis/run_source.h"
#include "core/position/position_encoding.h"
#include "core/position/position_registry.h"

namespace relpos {

std::vector<analysis::RunRecord> stage_records(const analysis::ExperimentResult& result,
                                               const std::string& stage) {
  return analysis::run_records(result.runs, stage);
}

void merge_by_run(std::vector<analysis::RunRecord>& to, const std::vector<analysis::RunRecord>& from,
                  const std::string& prefix, const std::vector<std::string>& keys) {
  for (auto& r : to)
    for (const auto& f : from) {
      if (f.group != r.group || f.seed != r.seed || f.settings != r.settings) continue;
      for (const auto& k : keys)
        if (const auto it = f.values.find(k); it != f.values.end()) r.values[prefix + k] = it->second;
    }
}

namespace {

// The rows of the run's length-bound tables: variant -> rows (learned: position.learned.max_len).
std::map<std::string, int64_t> bounded_tables(const analysis::RunInfo& info) {
  std::map<std::string, int64_t> out;
  std::stringstream types(info.position_types);
  for (std::string t; std::getline(types, t, '+');) {
    const VariantInfo* v = Registry::get().find(t);
    if (!v || v->length_key.empty()) continue;
    const std::string rows = analysis::yaml_value(info.config_yaml, "position." + t + "." + v->length_key);
    if (!rows.empty()) out[t] = std::stoll(rows);
  }
  return out;
}

}  // namespace

void mark_untrained_rows(std::vector<analysis::RunRecord>& records,
                         const analysis::ExperimentResult& finetune,
                         const analysis::ExperimentResult& pre) {
  for (const auto& ft : finetune.runs)
    for (const auto& p : pre.runs) {
      if (p.info.group != ft.info.group || p.info.seed != ft.info.seed) continue;
      double untrained = 0;
      for (const auto& [variant, rows] : bounded_tables(ft.info)) {
        const int64_t read = std::min(rows, ft.info.train_length);
        const int64_t trained = std::min(rows, p.info.train_length);
        untrained = std::max(untrained, static_cast<double>(std::max<int64_t>(0, read - trained)));
      }
      for (auto& r : records)
        if (r.group == ft.info.group && r.seed == ft.info.seed) r.values["untrained_rows"] = untrained;
    }
}

void add_paper_size_params(std::vector<analysis::RunRecord>& records,
                           const std::vector<ClaimConfig>& claims, const std::string& config_file,
                           const std::vector<std::string>& sets) {
  const auto claim = std::find_if(claims.begin(), claims.end(),
                                  [](const ClaimConfig& c) { return !c.paper_size.empty(); });
  if (claim == claims.end()) return;
  std::vector<std::string> overrides = sets;
  overrides.insert(overrides.end(), claim->paper_size.begin(), claim->paper_size.end());
  const Config paper = load_config({config_file}, overrides).config;
  const ModelDims dims = model_dims(paper.model);
  std::map<std::string, double> by_group;
  for (auto& r : records) {
    if (!by_group.count(r.group)) {
      int64_t n = 0;
      std::stringstream types(r.group);
      for (std::string t; std::getline(types, t, '+');)
        n += make_position_encoding(t, dims, paper.position)->parameter_count();
      by_group[r.group] = static_cast<double>(n);
    }
    r.values["params@paper"] = by_group[r.group];
  }
}

}  // namespace relpos
