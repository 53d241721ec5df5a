#include "core/config/loader.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace relpos {
namespace fs = std::filesystem;

namespace {

void record_locations(const YAML::Node& node, const std::string& path, const std::string& file,
                      SourceMap& sources) {
  const YAML::Mark m = node.Mark();
  if (m.line >= 0)
    sources.set(path, {file, m.line + 1, m.column + 1});
  else
    sources.set(path, {file, 0, 0});
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.Scalar();
      // The key's own mark points at the key, which is where a reader looks for it.
      const YAML::Mark km = it->first.Mark();
      const std::string child = join_path(path, key);
      record_locations(it->second, child, file, sources);
      if (km.line >= 0) sources.set(child, {file, km.line + 1, km.column + 1});
    }
  }
}

YAML::Node parse_file(const std::string& file) {
  std::ifstream in(file);
  if (!in)
    throw ConfigError(fmt::format("{}: cannot open config file", file),
                      "check the path given to --config");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    YAML::Node node = YAML::Load(ss.str());
    if (node.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!node.IsMap())
      throw ConfigError(fmt::format("{}: a config file must be a map of keys (got {})", file,
                                    describe_node(node)));
    return node;
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}:{}: malformed YAML: {}", file, e.mark.line + 1,
                                  e.mark.column + 1, e.msg),
                      "check indentation, colons and brackets near that line");
  }
}

void load_file(const std::string& file, LayeredYaml& out, std::vector<std::string>& stack) {
  const std::string canon = fs::weakly_canonical(fs::path(file)).string();
  for (const auto& s : stack)
    if (s == canon)
      throw ConfigError(fmt::format("{}: include cycle ({})", file, join_names(stack, " -> ")));
  stack.push_back(canon);
  YAML::Node node = parse_file(file);
  if (node["include"]) {
    YAML::Node inc = node["include"];
    std::vector<std::string> includes;
    if (inc.IsScalar()) {
      includes.push_back(inc.Scalar());
    } else if (inc.IsSequence()) {
      for (const auto& i : inc) {
        if (!i.IsScalar())
          throw ConfigError(fmt::format("{}:{}:{}: include: expected a list of file paths",
                                        file, i.Mark().line + 1, i.Mark().column + 1));
        includes.push_back(i.Scalar());
      }
    } else {
      throw ConfigError(fmt::format("{}:{}:{}: include: expected a file path or a list of them",
                                    file, inc.Mark().line + 1, inc.Mark().column + 1));
    }
    const fs::path dir = fs::path(file).parent_path();
    for (const auto& i : includes) load_file((dir / i).lexically_normal().string(), out, stack);
    node.remove("include");
  }
  merge_yaml(out.root, node, "", file, out.sources);
  out.files.push_back(file);
  stack.pop_back();
}

}  // namespace

void merge_yaml(YAML::Node& dst, const YAML::Node& src, const std::string& path,
                const std::string& file, SourceMap& sources) {
  for (auto it = src.begin(); it != src.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string child = join_path(path, key);
    const YAML::Node& value = it->second;
    YAML::Node existing = dst[key];
    if (value.IsMap() && existing.IsDefined() && existing.IsMap()) {
      merge_yaml(existing, value, child, file, sources);
      const YAML::Mark km = it->first.Mark();
      if (km.line >= 0) sources.set(child, {file, km.line + 1, km.column + 1});
    } else {
      dst[key] = YAML::Clone(value);
      record_locations(value, child, file, sources);
      const YAML::Mark km = it->first.Mark();
      if (km.line >= 0) sources.set(child, {file, km.line + 1, km.column + 1});
    }
  }
}

LayeredYaml load_layers(const std::vector<std::string>& files) {
  LayeredYaml out;
  out.root = YAML::Node(YAML::NodeType::Map);
  for (const auto& f : files) {
    std::vector<std::string> stack;
    load_file(f, out, stack);
  }
  return out;
}

void apply_override(LayeredYaml& layers, const std::string& assignment) {
  const auto eq = assignment.find('=');
  const std::string origin = "command line (--set " + assignment + ")";
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(fmt::format("{}: expected dotted.key=value", origin),
                      "for example --set model.layers=4");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  YAML::Node value;
  try {
    value = YAML::Load(text);
  } catch (const YAML::ParserException&) {
    value = YAML::Node(text);  // not YAML: take the text as a plain string
  }
  if (!value.IsDefined()) value = YAML::Node(YAML::NodeType::Null);

  // Walk/create the maps along the dotted path.
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw ConfigError(fmt::format("{}: empty key segment in '{}'", origin, key));
    parts.push_back(p);
  }
  // yaml-cpp nodes are handles: assigning through a copy writes into the shared tree.
  std::vector<YAML::Node> chain{layers.root};
  std::string path;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    path = join_path(path, parts[i]);
    YAML::Node next = chain.back()[parts[i]];
    if (next.IsDefined() && !next.IsNull() && !next.IsMap())
      throw ConfigError(fmt::format("{}: {} is {}, not a map, so it has no key '{}'", origin,
                                    path, describe_node(next), parts[i + 1]));
    if (!next.IsDefined() || next.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = chain.back()[parts[i]];
    }
    chain.push_back(next);
  }
  chain.back()[parts.back()] = value;
  layers.sources.set(key, {origin, 0, 0});
  // Keys below an overridden map now come from the command line too.
  if (value.IsMap()) {
    for (auto it = value.begin(); it != value.end(); ++it)
      layers.sources.set(join_path(key, it->first.Scalar()), {origin, 0, 0});
  }
}

}  // namespace relpos
