// PositionConfig (core/config/position_config.h): the stack of variants and their parameters,
// read from and written to YAML. Declared in the config layer, defined here, where the registry
// knows every variant's parameter struct (docs/architecture.md, "Layers").
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/position/position_registry.h"
#include "core/util/text_util.h"

namespace relpos {

bool PositionConfig::has(const std::string& type) const {
  return std::find(types.begin(), types.end(), type) != types.end();
}

const VariantParams& PositionConfig::params_of(const std::string& type) const {
  auto it = params.find(type);
  if (it != params.end()) return *it->second;
  // Defaults for a variant the config did not describe.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<VariantParams>> defaults;
  std::lock_guard<std::mutex> lock(mutex);
  auto d = defaults.find(type);
  if (d == defaults.end())
    d = defaults.emplace(type, Registry::get().at(type).make_params()).first;
  return *d->second;
}

namespace {

std::vector<std::string> split_plus(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find('+', start);
    std::string item = s.substr(start, p == std::string::npos ? std::string::npos : p - start);
    auto b = item.find_first_not_of(" \t");
    auto e = item.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? "" : item.substr(b, e - b + 1));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

}  // namespace

void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                PositionConfig& v) {
  if (n.IsNull()) return;
  if (!n.IsMap()) config_fail(src, path, "wrong type", describe_node(n), "a map of keys");
  const Registry& reg = Registry::get();
  std::vector<std::string> known = {"type", "relative_impl"};
  for (const auto& name : reg.names()) known.push_back(name);
  known.push_back("randomized_max");

  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string kpath = join_path(path, key);
    // A copy of the handle: `it->second` lives in a temporary proxy that dies with the statement.
    const YAML::Node val = it->second;
    if (key == "type") {
      std::vector<std::string> names;
      if (val.IsSequence()) {
        for (const auto& item : val) {
          if (!item.IsScalar())
            config_fail(src, kpath, "wrong type", describe_node(item), "a variant name");
          for (const auto& s : split_plus(item.Scalar())) names.push_back(s);
        }
      } else if (val.IsScalar()) {
        names = split_plus(val.Scalar());
      } else {
        config_fail(src, kpath, "wrong type", describe_node(val),
                    "a variant name, a list of names, or names joined with '+'");
      }
      if (names.empty())
        config_fail(src, kpath, "no position variant given", "", "at least one name",
                    reg.names());
      for (const auto& name : names) {
        reg.at(name, kpath, src);
        if (std::count(names.begin(), names.end(), name) > 1)
          config_fail(src, kpath, "variant listed twice", "'" + name + "'",
                      "each variant at most once");
      }
      v.types = names;
    } else if (key == "relative_impl") {
      read_value(val, kpath, src, v.relative_impl);
      if (v.relative_impl != "fast" && v.relative_impl != "direct")
        config_fail(src, kpath, "unknown value", "'" + v.relative_impl + "'", "fast | direct");
    } else if (key == "randomized_max") {
      read_value(val, kpath, src, v.randomized_max);
    } else {
      const VariantInfo* info = reg.find(key);
      if (!info)
        config_fail(src, kpath, "unknown key (not a position variant or setting)", "", "",
                    known, suggested_key(kpath, known));
      auto params = info->make_params();
      params->read(val, kpath, src);
      v.params[key] = params;
    }
  }
  for (const auto& t : v.types)
    if (!v.params.count(t)) v.params[t] = reg.at(t).make_params();
}

void write_value(YAML::Emitter& out, const PositionConfig& v) {
  out << YAML::BeginMap;
  out << YAML::Key << "type" << YAML::Value;
  write_value(out, join_names(v.types, "+"));
  out << YAML::Key << "relative_impl" << YAML::Value << v.relative_impl;
  // Written only when on, so that the configs of runs without it read as before.
  if (v.randomized_max != 0)
    out << YAML::Key << "randomized_max" << YAML::Value << v.randomized_max;
  // Every variant with parameters given, plus the defaults of stacked types without a section
  // (a config built in code), so the written config always states what was used.
  std::map<std::string, const VariantParams*> all;
  for (const auto& [name, params] : v.params) all[name] = params.get();
  for (const auto& t : v.types)
    if (!all.count(t)) all[t] = &v.params_of(t);
  for (const auto& [name, params] : all) {
    out << YAML::Key << name << YAML::Value;
    params->write(out);
  }
  out << YAML::EndMap;
}

}  // namespace relpos
