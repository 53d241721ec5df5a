// Declare-once config fields: every config struct lists its fields in one visit() method,
//   template <class V> void visit(V& v) { v("layers", layers, "number of transformer blocks"); }
// and the defaults live in the member initializers. YamlReader reads a YAML map through visit()
// and rejects any key visit() did not declare; YamlWriter writes the resolved values back.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/util/errors.h"

namespace relpos {

// Marker base for structs that have a visit() method.
struct ConfigSection {};

struct SourceLocation {
  std::string file;  // a path, or "command line"
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based; 0 when unknown
};

// Where each dotted key of a merged config came from (file, line, column).
class SourceMap {
 public:
  void set(const std::string& path, SourceLocation loc) { locs_[path] = std::move(loc); }
  // The location of `path`, or of its nearest recorded ancestor; empty file when none.
  SourceLocation find(const std::string& path) const;
  // The location of exactly `path` (no ancestor), if a file or --set gave it.
  std::optional<SourceLocation> exact(const std::string& path) const;
  // "file:line:col" (or "file", or "<defaults>" when the key came from no file).
  std::string describe(const std::string& path) const;

 private:
  std::map<std::string, SourceLocation> locs_;
};

std::string join_path(const std::string& parent, const std::string& key);
std::string join_names(const std::vector<std::string>& names, const std::string& sep = ", ");

// Builds "file:line:col: key.path: problem (got X; expected Y; known: a, b)" and throws ConfigError;
// with `suggestion` (closest_name's likely intended key or value), "; did you mean S?" after it.
[[noreturn]] void config_fail(const SourceMap* src, const std::string& path,
                              const std::string& problem, const std::string& got = {},
                              const std::string& expected = {},
                              const std::vector<std::string>& known = {},
                              const std::string& suggestion = {});
// The dotted key `path` most likely meant when its last part is not among `known` ("train.stpes"
// with the keys of train -> "train.steps"), or "".
std::string suggested_key(const std::string& path, const std::vector<std::string>& known);

// Collects the ConfigErrors of the fields read (and the rules checked) while it is alive on this
// thread, so that a config with several bad values reports them all at once. Nested collectors:
// the innermost collects.
class ConfigErrorCollector {
 public:
  ConfigErrorCollector();
  ~ConfigErrorCollector();
  ConfigErrorCollector(const ConfigErrorCollector&) = delete;
  ConfigErrorCollector& operator=(const ConfigErrorCollector&) = delete;
  // Adds `e` to the active collector; false when there is none (then the caller throws).
  static bool collect(const ConfigError& e);
  // Errors the active collector holds (0 without one).
  static int active_count();
  // One error: throws it as it was; several: one ConfigError listing them all, numbered.
  void throw_if_any() const;
  bool empty() const { return errors_.empty(); }

 private:
  std::vector<ConfigError> errors_;
  std::vector<ConfigError>* outer_;
};

// A short rendering of a YAML node for error messages.
std::string describe_node(const YAML::Node& node);

// ---- reading values -------------------------------------------------------------------------
void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src, int64_t& v);
void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src, double& v);
void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src, bool& v);
void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                std::string& v);
// Lists accept a YAML sequence or a comma-separated scalar ("64,128"), so --set works for them.
void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                std::vector<int64_t>& v);
void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                std::vector<double>& v);
void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                std::vector<std::string>& v);

// An optional number: absent or null (~) leaves it empty.
void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                std::optional<double>& v);

void write_value(YAML::Emitter& out, int64_t v);
void write_value(YAML::Emitter& out, double v);
void write_value(YAML::Emitter& out, bool v);
void write_value(YAML::Emitter& out, const std::string& v);
void write_value(YAML::Emitter& out, const std::vector<int64_t>& v);
void write_value(YAML::Emitter& out, const std::vector<double>& v);
void write_value(YAML::Emitter& out, const std::vector<std::string>& v);
void write_value(YAML::Emitter& out, const std::optional<double>& v);

class YamlReader;
// A list of sections (claims: [...]): each element a map read through its visit(); errors
// name the element, e.g. claims[2].comparisons[0].test, at the element's own line.
template <class T>
std::enable_if_t<std::is_base_of_v<ConfigSection, T>> read_value(const YAML::Node& n,
                                                                  const std::string& path,
                                                                  const SourceMap* src,
                                                                  std::vector<T>& v);
template <class T>
std::enable_if_t<std::is_base_of_v<ConfigSection, T>> write_value(YAML::Emitter& out,
                                                                   const std::vector<T>& v);
template <class T>
std::enable_if_t<std::is_base_of_v<ConfigSection, T>> read_value(const YAML::Node& n,
                                                                  const std::string& path,
                                                                  const SourceMap* src, T& v);
template <class T>
std::enable_if_t<std::is_base_of_v<ConfigSection, T>> write_value(YAML::Emitter& out,
                                                                   const T& v);

// Reads the fields declared by visit() from one YAML map.
class YamlReader {
 public:
  YamlReader(YAML::Node node, std::string path, const SourceMap* src);

  template <class T>
  void operator()(const char* key, T& value, const char* /*help*/ = "") {
    declared_.push_back(key);
    if (!node_.IsDefined() || node_.IsNull()) return;
    YAML::Node child = node_[key];
    if (!child.IsDefined()) return;
    try {
      read_value(child, join_path(path_, key), src_, value);
    } catch (const ConfigError& e) {
      if (!ConfigErrorCollector::collect(e)) throw;  // with a collector: read the next key
    }
  }

  // A string restricted to a fixed set of names.
  void choice(const char* key, std::string& value, const std::vector<std::string>& allowed,
              const char* help = "");

  // Throws for any key of the map that no field declared.
  void finish() const;

  const std::string& path() const { return path_; }
  const SourceMap* sources() const { return src_; }
  const YAML::Node& node() const { return node_; }

 private:
  YAML::Node node_;
  std::string path_;
  const SourceMap* src_;
  std::vector<std::string> declared_;
};

// Writes the fields declared by visit() as one YAML map.
class YamlWriter {
 public:
  explicit YamlWriter(YAML::Emitter& out) : out_(out) {}

  template <class T>
  void operator()(const char* key, const T& value, const char* /*help*/ = "") {
    out_ << YAML::Key << key << YAML::Value;
    write_value(out_, value);
  }
  void choice(const char* key, const std::string& value, const std::vector<std::string>&,
              const char* help = "") {
    (*this)(key, value, help);
  }

 private:
  YAML::Emitter& out_;
};

template <class T>
std::enable_if_t<std::is_base_of_v<ConfigSection, T>> read_value(const YAML::Node& n,
                                                                  const std::string& path,
                                                                  const SourceMap* src, T& v) {
  if (!n.IsNull() && !n.IsMap())
    config_fail(src, path, "wrong type", describe_node(n), "a map of keys");
  YamlReader reader(n, path, src);
  v.visit(reader);
  reader.finish();
}

template <class T>
std::enable_if_t<std::is_base_of_v<ConfigSection, T>> write_value(YAML::Emitter& out,
                                                                   const T& v) {
  out << YAML::BeginMap;
  YamlWriter writer(out);
  // visit() is written once for reading and writing; the writer never modifies the struct.
  const_cast<T&>(v).visit(writer);
  out << YAML::EndMap;
}

// The SourceMap of a list element: `src` plus the element's own line from its YAML mark, so that
// an error inside it names that line rather than the list's.
SourceMap element_sources(const SourceMap* src, const std::string& list_path,
                          const std::string& element_path, const YAML::Node& element);

template <class T>
std::enable_if_t<std::is_base_of_v<ConfigSection, T>> read_value(const YAML::Node& n,
                                                                  const std::string& path,
                                                                  const SourceMap* src,
                                                                  std::vector<T>& v) {
  v.clear();
  if (n.IsNull()) return;
  if (!n.IsSequence())
    config_fail(src, path, "wrong type", describe_node(n), "a list of maps");
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string element = fmt::format("{}[{}]", path, i);
    const SourceMap local = element_sources(src, path, element, n[i]);
    T item;
    read_value(n[i], element, &local, item);
    v.push_back(std::move(item));
  }
}

template <class T>
std::enable_if_t<std::is_base_of_v<ConfigSection, T>> write_value(YAML::Emitter& out,
                                                                   const std::vector<T>& v) {
  out << YAML::BeginSeq;
  for (const auto& item : v) write_value(out, item);
  out << YAML::EndSeq;
}

}  // namespace relpos
