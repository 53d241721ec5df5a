#include "core/config/fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "core/util/text_util.h"

namespace relpos {

SourceLocation SourceMap::find(const std::string& path) const {
  std::string p = path;
  while (true) {
    auto it = locs_.find(p);
    if (it != locs_.end()) return it->second;
    auto dot = p.rfind('.');
    if (dot == std::string::npos) break;
    p = p.substr(0, dot);
  }
  auto it = locs_.find("");
  if (it != locs_.end()) return it->second;
  return {};
}

std::optional<SourceLocation> SourceMap::exact(const std::string& path) const {
  auto it = locs_.find(path);
  if (it == locs_.end()) return std::nullopt;
  return it->second;
}

std::string SourceMap::describe(const std::string& path) const {
  SourceLocation loc = find(path);
  if (loc.file.empty()) return "<defaults>";
  if (loc.line <= 0) return loc.file;
  return fmt::format("{}:{}:{}", loc.file, loc.line, loc.column);
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string suggested_key(const std::string& path, const std::vector<std::string>& known) {
  const size_t dot = path.rfind('.');
  const std::string last = dot == std::string::npos ? path : path.substr(dot + 1);
  const std::string name = closest_name(last, known);
  if (name.empty()) return "";
  return dot == std::string::npos ? name : path.substr(0, dot + 1) + name;
}

std::string join_names(const std::vector<std::string>& names, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? sep : "") + names[i];
  return s;
}

void config_fail(const SourceMap* src, const std::string& path, const std::string& problem,
                 const std::string& got, const std::string& expected,
                 const std::vector<std::string>& known, const std::string& suggestion) {
  std::string where = src ? src->describe(path) : "<config>";
  std::string msg = fmt::format("{}: {}: {}", where, path.empty() ? "<root>" : path, problem);
  std::vector<std::string> parts;
  if (!got.empty()) parts.push_back("got " + got);
  if (!expected.empty()) parts.push_back("expected " + expected);
  if (!known.empty()) parts.push_back("known: " + join_names(known));
  if (!parts.empty()) msg += " (" + join_names(parts, "; ") + ")";
  if (!suggestion.empty()) msg += "; did you mean " + suggestion + "?";
  // A position variant's keys appear in base.yaml only as comments: point to where they are.
  const bool variant_key = path.rfind("position.", 0) == 0 && path != "position.type" &&
                           path.find('.', 9) != std::string::npos;
  throw ConfigError(msg, variant_key
                             ? "docs/variants.md lists every position variant's keys and "
                               "defaults; `relpos list` lists the variants"
                             : "see configs/base.yaml for every key and its default");
}

namespace {
thread_local std::vector<ConfigError>* g_collected = nullptr;
}  // namespace

ConfigErrorCollector::ConfigErrorCollector() : outer_(g_collected) { g_collected = &errors_; }
ConfigErrorCollector::~ConfigErrorCollector() { g_collected = outer_; }

bool ConfigErrorCollector::collect(const ConfigError& e) {
  if (!g_collected) return false;
  g_collected->push_back(e);
  return true;
}

int ConfigErrorCollector::active_count() {
  return g_collected ? static_cast<int>(g_collected->size()) : 0;
}

void ConfigErrorCollector::throw_if_any() const {
  if (errors_.empty()) return;
  if (errors_.size() == 1) throw errors_.front();
  std::string msg = fmt::format("{} problems in the config:", errors_.size());
  for (size_t i = 0; i < errors_.size(); ++i)
    msg += fmt::format("\n  {}. {}", i + 1, errors_[i].what());
  throw ConfigError(msg, errors_.front().hint());
}

std::string describe_node(const YAML::Node& node) {
  if (!node.IsDefined()) return "nothing";
  if (node.IsNull()) return "an empty value";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return fmt::format("a list of {} items", node.size());
  if (node.IsMap()) return "a map";
  return "an unknown node";
}

namespace {

void expect_scalar(const YAML::Node& n, const std::string& path, const SourceMap* src,
                   const char* expected) {
  if (!n.IsScalar()) config_fail(src, path, "wrong type", describe_node(n), expected);
}

// A string value that is not UTF-8 would not survive the resolved config's YAML round trip
// (found by fuzz/fuzz_config.cpp): refuse it where it is read.
void check_utf8_value(const std::string& v, const std::string& path, const SourceMap* src) {
  const size_t bad = utf8_error_offset(v);
  if (bad != std::string::npos)
    config_fail(src, path, "invalid UTF-8",
                fmt::format("byte 0x{:02X} at byte {} of the value",
                            static_cast<unsigned char>(v[bad]), bad),
                "UTF-8 text");
}

bool parse_int(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  size_t pos = 0;
  try {
    long long v = std::stoll(s, &pos, 10);
    if (pos != s.size()) return false;
    out = v;
    return true;
  } catch (...) {
    return false;
  }
}

bool parse_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  size_t pos = 0;
  try {
    double v = std::stod(s, &pos);
    if (pos != s.size() || !std::isfinite(v)) return false;
    out = v;
    return true;
  } catch (...) {
    return false;
  }
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> items;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, ',')) {
    auto b = cur.find_first_not_of(" \t");
    auto e = cur.find_last_not_of(" \t");
    items.push_back(b == std::string::npos ? "" : cur.substr(b, e - b + 1));
  }
  return items;
}

// Items of a list field: a YAML sequence of scalars or one comma-separated scalar.
std::vector<std::string> list_items(const YAML::Node& n, const std::string& path,
                                    const SourceMap* src, const char* expected) {
  std::vector<std::string> items;
  if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar())
        config_fail(src, path, fmt::format("wrong type of item {}", i), describe_node(n[i]),
                    expected);
      items.push_back(n[i].Scalar());
    }
  } else if (n.IsScalar()) {
    if (!n.Scalar().empty()) items = split_commas(n.Scalar());
  } else if (!n.IsNull()) {
    config_fail(src, path, "wrong type", describe_node(n), expected);
  }
  return items;
}

}  // namespace

void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src, int64_t& v) {
  expect_scalar(n, path, src, "an integer");
  if (!parse_int(n.Scalar(), v))
    config_fail(src, path, "wrong type", "'" + n.Scalar() + "'", "an integer");
}

void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src, double& v) {
  expect_scalar(n, path, src, "a number");
  if (!parse_double(n.Scalar(), v))
    config_fail(src, path, "wrong type", "'" + n.Scalar() + "'", "a finite number");
}

void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src, bool& v) {
  expect_scalar(n, path, src, "true or false");
  // YAML's spellings of booleans, in any case (true, True, TRUE, yes, On, ...).
  std::string s = n.Scalar();
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "true" || s == "yes" || s == "on") {
    v = true;
  } else if (s == "false" || s == "no" || s == "off") {
    v = false;
  } else {
    config_fail(src, path, "wrong type", "'" + n.Scalar() + "'", "true or false");
  }
}

void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                std::string& v) {
  if (n.IsNull()) {
    v.clear();
    return;
  }
  expect_scalar(n, path, src, "a string");
  v = n.Scalar();
  check_utf8_value(v, path, src);
}

void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                std::vector<int64_t>& v) {
  v.clear();
  for (const auto& item : list_items(n, path, src, "a list of integers")) {
    int64_t x;
    if (!parse_int(item, x))
      config_fail(src, path, "wrong type", "'" + item + "'", "a list of integers");
    v.push_back(x);
  }
}

void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                std::vector<double>& v) {
  v.clear();
  for (const auto& item : list_items(n, path, src, "a list of numbers")) {
    double x;
    if (!parse_double(item, x))
      config_fail(src, path, "wrong type", "'" + item + "'", "a list of numbers");
    v.push_back(x);
  }
}

void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                std::vector<std::string>& v) {
  v = list_items(n, path, src, "a list of strings");
  for (size_t i = 0; i < v.size(); ++i) check_utf8_value(v[i], fmt::format("{}[{}]", path, i), src);
}

void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                std::optional<double>& v) {
  if (n.IsNull()) {
    v.reset();
    return;
  }
  double x = 0;
  read_value(n, path, src, x);
  v = x;
}

void write_value(YAML::Emitter& out, const std::optional<double>& v) {
  if (v)
    write_value(out, *v);
  else
    out << YAML::Null;
}

SourceMap element_sources(const SourceMap* src, const std::string& list_path,
                          const std::string& element_path, const YAML::Node& element) {
  SourceMap out = src ? *src : SourceMap();
  const SourceLocation list = src ? src->find(list_path) : SourceLocation{};
  const YAML::Mark mark = element.Mark();
  // Elements parsed from a file carry their line; those of a --set value do not (-1).
  if (!list.file.empty() && list.file != "command line" && mark.line >= 0)
    out.set(element_path, {list.file, mark.line + 1, mark.column + 1});
  return out;
}

void write_value(YAML::Emitter& out, int64_t v) { out << v; }
void write_value(YAML::Emitter& out, double v) {
  // Shortest text that reads back to the same double.
  out << fmt::format("{}", v);
}
void write_value(YAML::Emitter& out, bool v) { out << (v ? "true" : "false"); }
void write_value(YAML::Emitter& out, const std::string& v) {
  if (v.empty())
    out << YAML::DoubleQuoted << "";
  else
    out << v;
}
void write_value(YAML::Emitter& out, const std::vector<int64_t>& v) {
  out << YAML::Flow << YAML::BeginSeq;
  for (auto x : v) out << x;
  out << YAML::EndSeq;
}
void write_value(YAML::Emitter& out, const std::vector<double>& v) {
  out << YAML::Flow << YAML::BeginSeq;
  for (auto x : v) out << fmt::format("{}", x);
  out << YAML::EndSeq;
}
void write_value(YAML::Emitter& out, const std::vector<std::string>& v) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const auto& x : v) out << x;
  out << YAML::EndSeq;
}

YamlReader::YamlReader(YAML::Node node, std::string path, const SourceMap* src)
    : node_(std::move(node)), path_(std::move(path)), src_(src) {}

void YamlReader::choice(const char* key, std::string& value,
                        const std::vector<std::string>& allowed, const char* help) {
  (*this)(key, value, help);
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
    config_fail(src_, join_path(path_, key), "unknown value", "'" + value + "'",
                "one of " + join_names(allowed, " | "), {},
                closest_name(value, allowed).empty() ? ""
                                                     : "'" + closest_name(value, allowed) + "'");
}

void YamlReader::finish() const {
  if (!node_.IsDefined() || !node_.IsMap()) return;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string key = it->first.Scalar();
    if (std::find(declared_.begin(), declared_.end(), key) != declared_.end()) continue;
    try {
      config_fail(src_, join_path(path_, key), "unknown key", "", "", declared_,
                  suggested_key(join_path(path_, key), declared_));
    } catch (const ConfigError& e) {
      if (!ConfigErrorCollector::collect(e)) throw;
    }
  }
}

}  // namespace relpos
