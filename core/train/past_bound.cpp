#include "core/train/past_bound.h"

#include <yaml-cpp/yaml.h>

#include "core/io/run_paths.h"
#include "core/position/position_registry.h"
#include "core/util/text_util.h"

namespace relpos {

std::vector<PastBoundEvaluation> past_bound_settings(const std::string& dir) {
  YAML::Node position;
  try {
    position = YAML::LoadFile(run_config_path(dir))["position"];
  } catch (const YAML::Exception&) {
    return {};
  }
  if (!position || !position.IsMap() || !position["type"] || !position["type"].IsScalar())
    return {};
  std::vector<PastBoundEvaluation> out;
  for (const auto& t : split_on(position["type"].Scalar(), '+')) {
    const VariantInfo* v = Registry::get().find(trim(t));
    if (!v) continue;
    const YAML::Node params = position[v->name];
    for (const auto& [key, value] : v->eval_keys) {
      if (value.empty()) continue;
      const bool already = params && params.IsMap() && params[key] && params[key].IsScalar() &&
                           params[key].Scalar() == value;
      if (already) continue;
      out.push_back({"position." + v->name + "." + key + "=" + value,
                     v->past_label.empty() ? value : v->past_label});
    }
  }
  return out;
}

std::map<std::string, std::pair<std::string, std::vector<std::string>>> past_bound_evaluations(
    const std::vector<std::string>& dirs) {
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& d : dirs)
    for (const auto& e : past_bound_settings(d)) {
      auto& [label, runs] = out[e.setting];
      label = e.label;
      runs.push_back(d);
    }
  return out;
}

}  // namespace relpos
