// Loading YAML config layers: files merged in order (maps merged key by key, everything else
// replaced), then `--set dotted.key=value` overrides. Remembers where every key came from so
// that errors can name file, line and column.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "core/config/fields.h"

namespace relpos {

struct LayeredYaml {
  YAML::Node root;     // the merged map
  SourceMap sources;   // dotted key -> where its final value came from
  std::vector<std::string> files;  // every file read, includes first, in order
};

// Reads `files` in order. A file may start with `include: [a.yaml, b.yaml]` (paths relative to
// the including file), which are merged before it. Missing files and malformed YAML throw
// ConfigError with the file (and line) named.
LayeredYaml load_layers(const std::vector<std::string>& files);

// Applies one "dotted.key=value" assignment; the value is parsed as YAML ("4", "[a, b]",
// "a,b" stays a string that list fields split on commas).
void apply_override(LayeredYaml& layers, const std::string& assignment);

// Deep-merges `src` into `dst` (maps key by key) and records locations from `file`.
void merge_yaml(YAML::Node& dst, const YAML::Node& src, const std::string& path,
                const std::string& file, SourceMap& sources);

}  // namespace relpos
