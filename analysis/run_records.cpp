#include "analysis/run_records.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>

#include "analysis/evaluation_noise.h"
#include "core/util/sampling_stats.h"

namespace relpos::analysis {
namespace {

void add_evaluation(RunRecord& rec, const EvalTable& t) {
  for (const auto& [name, v] : t.columns)
    for (size_t k = 0; k < t.length.size() && k < v.size(); ++k)
      rec.values[fmt::format("{}@{:g}", name, t.length[k])] = v[k];
  for (const auto& [key, var] : evaluation_variances(t)) rec.values["var:" + key] = var;
}

void add_invariance(RunRecord& rec, const RunResult& r) {
  for (const auto& [q, v] : r.invariance) {
    const auto b = r.baselines.find(q);
    const double base = b == r.baselines.end() ? kNaN : b->second.mean;
    if (std::isfinite(base)) rec.values["inv0:" + q] = base;
    // First and last snapshots that measured the quantity.
    for (size_t k = 0; k < v.size(); ++k)
      if (std::isfinite(v[k])) {
        rec.values["inv_first:" + q] = v[k];
        if (std::isfinite(base)) rec.values["invc_first:" + q] = corrected_invariance(v[k], base);
        break;
      }
    for (size_t k = v.size(); k-- > 0;)
      if (std::isfinite(v[k])) {
        rec.values["inv_last:" + q] = v[k];
        if (std::isfinite(base)) rec.values["invc_last:" + q] = corrected_invariance(v[k], base);
        break;
      }
  }
}

void flatten(const YAML::Node& n, const std::string& path, std::map<std::string, std::string>& out) {
  if (n.IsMap()) {
    for (const auto& kv : n)
      flatten(kv.second, path.empty() ? kv.first.Scalar() : path + "." + kv.first.Scalar(), out);
  } else if (n.IsScalar()) {
    out[path] = n.Scalar();
  } else if (n.IsSequence()) {
    std::string s;
    for (const auto& item : n) s += (s.empty() ? "" : ",") + (item.IsScalar() ? item.Scalar() : "…");
    out[path] = "[" + s + "]";
  }
}

}  // namespace

std::map<std::string, std::vector<std::string>> varied_settings(const std::vector<std::string>& yamls) {
  std::vector<std::map<std::string, std::string>> flat;
  std::set<std::string> keys;
  for (const auto& y : yamls) {
    std::map<std::string, std::string> f;
    try {
      flatten(YAML::Load(y), "", f);
    } catch (const YAML::Exception&) {
      // A config that does not parse contributes no settings (its run is reported elsewhere).
    }
    for (const auto& [k, v] : f) keys.insert(k);
    flat.push_back(std::move(f));
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& k : keys) {
    if (k == "position.type" || k == "seed" || k == "name" || k.rfind("claims", 0) == 0 ||
        k.rfind("provenance", 0) == 0)
      continue;
    std::set<std::string> values;
    std::vector<std::string> per_run;
    for (const auto& f : flat) {
      const auto it = f.find(k);
      per_run.push_back(it == f.end() ? "" : it->second);
      values.insert(per_run.back());
    }
    if (values.size() > 1) out[k] = per_run;
  }
  return out;
}

std::vector<RunRecord> run_records(const std::vector<RunResult>& runs, const std::string& stage) {
  std::vector<std::string> yamls;
  for (const auto& r : runs) yamls.push_back(r.info.config_yaml);
  const auto settings = varied_settings(yamls);
  std::vector<RunRecord> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunResult& r = runs[i];
    RunRecord rec{r.info.group, {}, r.info.seed, stage, {}};
    for (const auto& [k, values] : settings) rec.settings[k] = values[i];
    for (const auto& [m, s] : r.info.metrics)
      if ((m.rfind("valid_", 0) == 0 || m.rfind("test_", 0) == 0) && !s.y.empty() &&
          !is_sampling_statistic(m))
        rec.values[m] = s.y.back();
    for (const auto& [key, var] : evaluation_variances(r.info.metrics))
      rec.values["var:" + key] = var;
    if (r.info.positional_parameters >= 0)
      rec.values["params"] = static_cast<double>(r.info.positional_parameters);
    if (r.info.finished && std::isfinite(r.training_time_s)) rec.values["train_s"] = r.training_time_s;
    add_invariance(rec, r);
    add_evaluation(rec, r.info.extrapolation);
    out.push_back(rec);
    for (const auto& [suffix, t] : r.info.extra_evaluations) {
      RunRecord extra{r.info.group + " (" + suffix + ")", {}, r.info.seed, stage, rec.settings};
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
    if (a == r.values.end() || b == r.values.end() || !std::isfinite(a->second) ||
        !std::isfinite(b->second))
      continue;
    r.values[name] = a->second - b->second;
    const auto va = r.values.find("var:" + to), vb = r.values.find("var:" + from);
    if (va != r.values.end() && vb != r.values.end()) r.values["var:" + name] = va->second + vb->second;
  }
}

}  // namespace relpos::analysis
