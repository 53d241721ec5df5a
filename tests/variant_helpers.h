// Helpers for tests that build one position encoding by name, outside a full model: parameters
// from a YAML snippet (parsed by the variant itself), float64 modules, random parameter values.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "core/position/position_encoding.h"
#include "core/position/position_registry.h"
#include "tests/tensor_compare.h"

namespace relpos::test {

inline double softplus(double x) { return std::log1p(std::exp(x)); }

// Tiny dimensions: H heads of width d, `param_layers` parameter sets.
inline ModelDims tiny_dims(int64_t H, int64_t d, bool causal, int64_t param_layers = 2) {
  ModelDims dims;
  dims.heads = H;
  dims.head_dim = d;
  dims.width = H * d;
  dims.embed_dim = H * d;
  dims.layers = param_layers;
  dims.param_layers = param_layers;
  dims.causal = causal;
  dims.init_std = 0.02;
  return dims;
}

// A PositionConfig with `type` alone, its parameters read from `yaml` (a map, "{}" for defaults).
inline PositionConfig single_config(const std::string& type, const std::string& yaml,
                                    const std::string& relative_impl = "fast") {
  PositionConfig cfg;
  cfg.types = {type};
  cfg.relative_impl = relative_impl;
  auto params = Registry::get().at(type).make_params();
  params->read(YAML::Load(yaml), "position." + type, nullptr);
  cfg.params[type] = params;
  return cfg;
}

// The encoding `type` built through the registry, converted to float64.
inline std::shared_ptr<PositionEncodingImpl> make_variant(
    const std::string& type, const ModelDims& dims, const std::string& yaml,
    const std::string& relative_impl = "fast") {
  auto enc = make_position_encoding(type, dims, single_config(type, yaml, relative_impl));
  enc->to(torch::kDouble);
  return enc;
}

// Every parameter of `m` drawn from N(0, std²), so no entry sits at its special init value
// (huang scales at 1, tables near 0) and mistakes in indexing show up.
inline void randomize(torch::nn::Module& m, double std) {
  torch::NoGradGuard guard;
  for (auto& p : m.parameters()) p.normal_(0.0, std);
}

// Copies every parameter of `from` into `to` (same structure).
inline void copy_parameters(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard guard;
  auto src = from.named_parameters();
  for (auto& p : to.named_parameters()) p.value().copy_(src[p.key()]);
}

// Clipped offset c(r) = max(-K, min(K, r)) (docs/variants.md).
inline int64_t clip_offset(int64_t r, int64_t K) { return r < -K ? -K : (r > K ? K : r); }

}  // namespace relpos::test
