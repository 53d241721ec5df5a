// The variant registry: name -> (description, parameter parser, validator, factory).
// Every variant is registered in one explicit function, register_all() in registry.cpp.
// Adding a variant: one file in core/position/, one line in register_all(), one test, one
// overlay configs/position/<name>.yaml, and its HDF5 datasets in docs/hdf5-schema.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/position/variant_params.h"

namespace relpos {

class PositionEncodingImpl;
struct ModelConfig;
struct Config;

// The model dimensions a position encoding is built for.
struct ModelDims {
  int64_t embed_dim = 0;     // E: width of the token embeddings (hook 1 adds at this width)
  int64_t width = 0;         // D
  int64_t heads = 0;         // H
  int64_t head_dim = 0;      // d
  int64_t layers = 0;        // L: blocks applied
  int64_t param_layers = 0;  // distinct parameter sets (1 when layers are shared)
  bool causal = false;
  double init_std = 0.02;     // std of normal initializations
};
ModelDims model_dims(const ModelConfig& m);

// Reports a problem with one parameter of a variant (throws ConfigError).
struct ParamCheck {
  const std::string& path;  // "position.<name>"
  const SourceMap* sources;
  [[noreturn]] void fail(const std::string& key, const std::string& problem,
                         const std::string& got, const std::string& expected) const;
};

struct VariantInfo {
  std::string name;
  std::string summary;       // one line for `relpos list`
  bool provisional = false;  // reconstructed from secondary sources
  // True when the scores depend on positions only through j - i (attention unchanged when all
  // positions are shifted); false for absolute encodings (learned, sinusoidal).
  bool translation_invariant = true;
  // True when the variant reads absolute position indices (hook 1, or q/k rotations), so that
  // position.randomized_max can draw them at random in training (learned, sinusoidal, rope, xpos).
  bool absolute_positions = false;
  std::function<std::shared_ptr<VariantParams>()> make_params;
  // Cross-field rules of this variant against the rest of the config (may be empty).
  std::function<void(const VariantParams&, const Config&, const ParamCheck&)> validate;
  std::function<std::shared_ptr<PositionEncodingImpl>(const ModelDims&, const VariantParams&,
                                                      const PositionConfig&)>
      make;
};

class Registry {
 public:
  // The registry with every built-in variant (built once).
  static const Registry& get();

  void add(VariantInfo info);  // throws on a duplicate name
  const VariantInfo* find(const std::string& name) const;
  // Like find(), but an unknown name throws ConfigError at `path` listing the known names.
  const VariantInfo& at(const std::string& name, const std::string& path = "position.type",
                        const SourceMap* sources = nullptr) const;
  std::vector<std::string> names() const;

 private:
  std::vector<VariantInfo> variants_;
};

// Constructs the encoding `type` with its parameters from `cfg`.
std::shared_ptr<PositionEncodingImpl> make_position_encoding(const std::string& type,
                                                             const ModelDims& dims,
                                                             const PositionConfig& cfg);

}  // namespace relpos
