#include "core/config/loader.h"
#include "core/config/labelled_override.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/util/text_util.h"

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
  } else if (node.IsSequence()) {
    // Elements as list[i] (the paths a list of sections reads them under: claims[0].id), so
    // that an error inside one names its own line.
    for (size_t i = 0; i < node.size(); ++i)
      record_locations(node[i], path + "[" + std::to_string(i) + "]", file, sources);
  }
}

// YAML aliases share nodes, so a few hundred bytes of nested anchors ("billion laughs") describe a
// tree of billions of nodes that every later walk would expand. No config comes near this bound
// (configs/base.yaml has about 150 nodes); counting stops at it, so the check itself is cheap.
constexpr int64_t kMaxConfigNodes = 100000;

int64_t count_nodes(const YAML::Node& node, int64_t budget) {
  int64_t n = 1;
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end() && n <= budget; ++it)
      n += count_nodes(it->first, budget - n) + count_nodes(it->second, budget - n);
  } else if (node.IsSequence()) {
    for (auto it = node.begin(); it != node.end() && n <= budget; ++it)
      n += count_nodes(*it, budget - n);
  }
  return n;
}

// `what`: the file, or the --set, for the message.
void reject_expansion_bomb(const YAML::Node& node, const std::string& what) {
  if (count_nodes(node, kMaxConfigNodes) > kMaxConfigNodes)
    throw ConfigError(fmt::format("{}: the YAML expands to more than {} values (aliases of "
                                  "anchors that refer to other anchors multiply); no relpos config "
                                  "needs that many",
                                  what, kMaxConfigNodes),
                      "write the values out, or use fewer nested aliases (*name)");
}

// YAML allows no duplicate keys, but yaml-cpp keeps both and the merge would take the last one
// silently; a repeated key is almost always a mistake (two `model:` sections), so it is an error.
void reject_duplicate_keys(const YAML::Node& node, const std::string& path,
                           const std::string& file) {
  if (node.IsSequence()) {
    for (const auto& item : node) reject_duplicate_keys(item, path, file);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Mark> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const YAML::Mark m = it->first.Mark();
    auto [prev, fresh] = seen.emplace(key, m);
    if (!fresh)
      throw ConfigError(fmt::format("{}:{}:{}: {}: duplicate key (first at line {})", file,
                                    m.line + 1, m.column + 1, join_path(path, key),
                                    prev->second.line + 1),
                        "keep one of the two; a key may appear once per map");
    reject_duplicate_keys(it->second, join_path(path, key), file);
  }
}

YAML::Node parse_file(const std::string& file) {
  // An ifstream opens a folder without complaint and reads nothing from it, which would pass
  // for an empty config.
  if (fs::is_directory(file))
    throw ConfigError(fmt::format("{}: is a folder, not a config file", file),
                      "give a .yaml file, for example configs/base.yaml");
  // Opening a FIFO blocks until a writer comes, and a device never ends (/dev/zero).
  std::error_code ec;
  const fs::file_type type = fs::status(file, ec).type();
  if (type != fs::file_type::regular && type != fs::file_type::not_found)
    throw ConfigError(fmt::format("{}: not a regular file ({}; expected a YAML config file)", file,
                                  file_kind(file)),
                      "give a .yaml file, for example configs/base.yaml");
  std::ifstream in(file);
  if (!in)
    throw ConfigError(fmt::format("{}: cannot open config file", file),
                      "check the path given to --config");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    YAML::Node node = YAML::Load(ss.str());
    reject_expansion_bomb(node, file);
    if (node.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!node.IsMap())
      throw ConfigError(fmt::format("{}: a config file must be a map of keys (got {})", file,
                                    describe_node(node)));
    reject_duplicate_keys(node, "", file);
    return node;
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}:{}: malformed YAML: {}", file, e.mark.line + 1,
                                  e.mark.column + 1, e.msg),
                      "check indentation, colons and brackets near that line");
  }
}

std::string where(const std::string& file, const YAML::Mark& m) {
  return m.line >= 0 ? fmt::format("{}:{}:{}", file, m.line + 1, m.column + 1) : file;
}

// `stack` holds the canonical paths of the files being read, outermost first.
void load_file(const std::string& file, LayeredYaml& out, std::vector<std::string>& stack) {
  stack.push_back(fs::weakly_canonical(fs::path(file)).string());
  YAML::Node node = parse_file(file);
  if (node["include"]) {
    YAML::Node inc = node["include"];
    std::vector<std::pair<std::string, YAML::Mark>> includes;
    if (inc.IsScalar()) {
      includes.emplace_back(inc.Scalar(), inc.Mark());
    } else if (inc.IsSequence()) {
      for (const auto& i : inc) {
        if (!i.IsScalar())
          throw ConfigError(fmt::format("{}: include: expected a list of file paths (got {})",
                                        where(file, i.Mark()), describe_node(i)));
        includes.emplace_back(i.Scalar(), i.Mark());
      }
    } else {
      throw ConfigError(fmt::format("{}: include: expected a file path or a list of them (got {})",
                                    where(file, inc.Mark()), describe_node(inc)));
    }
    const fs::path dir = fs::path(file).parent_path();
    for (const auto& [name, mark] : includes) {
      const std::string path = (dir / name).lexically_normal().string();
      const std::string canon = fs::weakly_canonical(fs::path(path)).string();
      if (std::find(stack.begin(), stack.end(), canon) != stack.end())
        throw ConfigError(fmt::format("{}: include cycle: {} -> {}", where(file, mark),
                                      join_names(stack, " -> "), canon),
                          "a file may not include itself, directly or through other files");
      if (!fs::is_regular_file(path))
        throw ConfigError(fmt::format("{}: include: cannot open config file {}",
                                      where(file, mark), path),
                          "include paths are relative to the including file");
      load_file(path, out, stack);
    }
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
    // A copy of the handle: `it->second` lives in a temporary proxy that dies with the statement.
    const YAML::Node value = it->second;
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
  apply_override(layers, assignment, std::string());
}

void apply_override(LayeredYaml& layers, const std::string& assignment,
                    const std::string& given_origin) {
  const auto eq = assignment.find('=');
  const std::string origin =
      given_origin.empty() ? "command line (--set " + assignment + ")" : given_origin;
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
  reject_expansion_bomb(value, origin);

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
      // A map this override creates comes from it: an unknown section is blamed on the --set.
      layers.sources.set(path, {origin, 0, 0});
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
