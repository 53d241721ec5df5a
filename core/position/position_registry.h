// The variant registry: name -> (description, capabilities, parameter parser, validator,
// factory). Every variant is registered in one explicit function, build_position_registry() in
// registry.cpp. Adding a variant: one file in core/position/, one line in
// build_position_registry(), a naive-loop test (tests/test_variants_naive.cpp for the first
// variants, tests/test_variants_naive_kernels.cpp for the later ones), one overlay
// configs/position/<name>.yaml, and its HDF5 datasets in docs/hdf5-schema.md (README.md,
// "Adding a position encoding").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config/position_config.h"

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

// Where a variant's trainable parameters live.
enum class ParamScope {
  None,      // no trainable parameters
  Model,     // one set for the whole model (an input table; a bias shared by the layers)
  PerLayer,  // one set per layer (one in all with model.share_layers)
};

struct VariantInfo {
  std::string name;
  std::string summary;       // one line for `relpos list`
  bool provisional = false;  // reconstructed from secondary sources

  // ---- Capabilities: what bench, eval, analysis and the tests ask instead of listing names.
  // The defaults describe a parameter-free encoding with one code path.
  // True when the scores depend on positions only through j - i (attention unchanged when all
  // positions are shifted); false for absolute encodings.
  bool translation_invariant = true;
  ParamScope parameters = ParamScope::None;
  // position.relative_impl chooses between the fast relative terms and the direct [T,T,d]
  // reference path (relative_ops.h): bench measures both, tests compare them.
  bool direct_path = false;
  // Stands for "no position information": bench's ratios are to it, and it is never stacked.
  bool baseline = false;
  // The parameter that bounds the sequence length (a table's rows), which bench sets to each
  // length it measures; "" when the encoding has no such bound.
  std::string length_key;
  // Parameters a trained run may be evaluated with (`relpos eval --set position.<name>.KEY=V`):
  // KEY -> the value that lets the encoding run past its length bound ("" when none does).
  std::map<std::string, std::string> eval_keys;
  // The word that names a run evaluated with those values in a table row ("learned (clamped)");
  // "" when no eval key has such a value.
  std::string past_label;
  // The datasets export_tensors() writes (docs/hdf5-schema.md); empty: not stated.
  std::vector<std::string> exports;
  // What a reader of a table comparing encoder (bidirectional) runs must know about this
  // variant, printed under such tables when one of their runs uses it; "" when nothing.
  std::string encoder_note;
  bool learnable() const { return parameters != ParamScope::None; }

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
  // The name of the baseline variant (VariantInfo::baseline).
  std::string baseline() const;

 private:
  friend class ScopedVariant;
  static Registry& instance();
  void remove(const std::string& name);
  std::vector<VariantInfo> variants_;
};

// Adds `info` to the registry for as long as it lives: a test's throw-away variant then goes
// through the same machinery (config, model, snapshots, bench plans, eval settings) as a
// registered one. Not thread-safe; for tests.
class ScopedVariant {
 public:
  explicit ScopedVariant(VariantInfo info);
  ~ScopedVariant();
  ScopedVariant(const ScopedVariant&) = delete;
  ScopedVariant& operator=(const ScopedVariant&) = delete;

 private:
  std::string name_;
};

// True when `type` (a name, or a stack such as learned+shaw) has a part with a direct path.
bool has_direct_path(const std::string& type);

// The settings `relpos eval --set` may change: eval.*, device, threads, cpu_allocator,
// precision, and position.<name>.<key> for every registered variant's eval_keys.
std::vector<std::string> eval_settings();

// Constructs the encoding `type` with its parameters from `cfg`.
std::shared_ptr<PositionEncodingImpl> make_position_encoding(const std::string& type,
                                                             const ModelDims& dims,
                                                             const PositionConfig& cfg);

// Every variant's encoder_note that is not empty (variant -> note), for the analysis.
std::map<std::string, std::string> encoder_notes();

}  // namespace relpos
