// The `position:` section of a config, and the parameters of one position-encoding variant as
// read from `position.<name>:`. Each variant declares its own parameter struct (fields through
// visit(), defaults in the members) in its file in core/position/.
//
// The config layer knows the section's shape; which variants exist and what parameters each
// takes is the position registry's (core/position/position_registry.h). The registry therefore defines
// the functions declared at the end of this file: the config layer includes nothing above it,
// and a config still rejects an unknown variant or parameter while it is read.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config/fields.h"

namespace relpos {

struct VariantParams {
  virtual ~VariantParams() = default;
  virtual void read(const YAML::Node& node, const std::string& path, const SourceMap* src) = 0;
  virtual void write(YAML::Emitter& out) const = 0;
  virtual std::shared_ptr<VariantParams> clone() const = 0;
};

// CRTP helper: a params struct `struct ShawParams : ParamsOf<ShawParams> { ... visit ... }`.
template <class Derived>
struct ParamsOf : VariantParams, ConfigSection {
  void read(const YAML::Node& node, const std::string& path, const SourceMap* src) override {
    read_value(node, path, src, static_cast<Derived&>(*this));
  }
  void write(YAML::Emitter& out) const override {
    write_value(out, static_cast<const Derived&>(*this));
  }
  std::shared_ptr<VariantParams> clone() const override {
    return std::make_shared<Derived>(static_cast<const Derived&>(*this));
  }
};

// A variant without parameters.
struct NoParams : ParamsOf<NoParams> {
  template <class V>
  void visit(V&) {}
};

// The encoding of a config that names none: the baseline variant (defined by its file in
// core/position/).
extern const char* const kDefaultPositionType;

// The `position:` section: which encodings are stacked, and the parameters of each.
struct PositionConfig {
  // One or more registry names, applied in this order. In YAML: a name, a list of names, or
  // names joined with '+' ("learned+tisa").
  std::vector<std::string> types = {kDefaultPositionType};
  // "fast": relative terms from the (2K+1) distinct relative vectors, then a gather.
  // "direct": the reference [T,T,d] form (as in Hugging Face); slower, more memory; for tests.
  std::string relative_impl = "fast";
  // Randomized positions (Ruoss et al. 2023): N > 0 draws the positions of every training
  // sequence as an ordered random subset of 0..N-1 for the encodings that read absolute
  // positions (VariantInfo::absolute_positions); evaluation uses 0..T-1. 0 = off.
  int64_t randomized_max = 0;
  // Parameters of every variant that appears in `types` or has a section of its own.
  std::map<std::string, std::shared_ptr<const VariantParams>> params;

  bool has(const std::string& type) const;
  // Parameters of `type` (defaults when the config gave none). Throws when unknown.
  const VariantParams& params_of(const std::string& type) const;
};

// Defined in core/position/position_registry.cpp.
void read_value(const YAML::Node& n, const std::string& path, const SourceMap* src,
                PositionConfig& v);
void write_value(YAML::Emitter& out, const PositionConfig& v);
struct Config;
// The position checks of validate(): each variant's own rules against the rest of the config,
// and the stacking rule. Defined in core/position/position_registry.cpp.
void validate_position(const Config& c, const SourceMap* src);

}  // namespace relpos
