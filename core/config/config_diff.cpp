#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <map>

#include "core/config/config.h"
#include "core/util/errors.h"

namespace relpos {
namespace {

// dotted key -> scalar text; sequence elements as key[i]; an empty map or sequence as "{}"/"[]".
void flatten(const YAML::Node& n, const std::string& key, std::map<std::string, std::string>& out) {
  if (n.IsMap()) {
    if (n.size() == 0) out[key] = "{}";
    for (const auto& kv : n)
      flatten(kv.second, key.empty() ? kv.first.as<std::string>() : key + "." + kv.first.as<std::string>(),
              out);
  } else if (n.IsSequence()) {
    if (n.size() == 0) out[key] = "[]";
    for (size_t i = 0; i < n.size(); ++i) flatten(n[i], fmt::format("{}[{}]", key, i), out);
  } else if (n.IsNull()) {
    out[key] = "null";
  } else {
    out[key] = n.Scalar();
  }
}

std::map<std::string, std::string> flat(const std::string& text, const char* which) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("comparing configs: the {} config is not YAML: {}", which, e.what()));
  }
  std::map<std::string, std::string> out;
  flatten(root, "", out);
  return out;
}

bool ignored(const std::string& key, const std::vector<std::string>& ignore) {
  for (const auto& i : ignore)
    if (key == i || key.rfind(i + ".", 0) == 0 || key.rfind(i + "[", 0) == 0) return true;
  return false;
}

}  // namespace

std::vector<std::string> config_differences(const std::string& yaml_a, const std::string& yaml_b,
                                            const std::vector<std::string>& ignore) {
  const auto a = flat(yaml_a, "first"), b = flat(yaml_b, "second");
  std::map<std::string, std::pair<std::string, std::string>> diff;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    const std::string w = it == b.end() ? "(absent)" : it->second;
    if (v != w && !ignored(k, ignore)) diff[k] = {v, w};
  }
  for (const auto& [k, w] : b)
    if (!a.count(k) && !ignored(k, ignore)) diff[k] = {"(absent)", w};
  std::vector<std::string> out;
  for (const auto& [k, p] : diff) out.push_back(fmt::format("{}: {} -> {}", k, p.first, p.second));
  return out;
}

}  // namespace relpos
