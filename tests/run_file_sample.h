// A run file with every kind of content, built from closed-form values so tests can check what
// they read back (L=2 layers, H=3 heads, T=5 tokens).
#pragma once

#include <torch/types.h>

#include <map>
#include <string>
#include <vector>

#include "core/io/run_file.h"

namespace relpos::test {

constexpr int64_t kL = 2, kH = 3, kT = 5;

inline RunAttributes sample_attributes() {
  RunAttributes a;
  a.config_yaml = "model:\n  layers: 2\n  heads: 3\nnote: \"α→β\"\n";
  a.position_types = "learned+tisa";
  a.seed = 1234;
  a.torch_version = "1.13.0";
  a.git_commit = "0123abcd";
  a.created = "2024-01-02T03:04:05Z";
  return a;
}

// Softmax rows of a ramp that depends on the step: (L,H,T,T), every row sums to 1.
inline torch::Tensor sample_attention(int64_t step) {
  auto logits = torch::arange(kL * kH * kT * kT, torch::kFloat32).reshape({kL, kH, kT, kT});
  return torch::softmax(logits * 0.1 * static_cast<double>(step + 1), -1);  // (L,H,T,T)
}
inline torch::Tensor sample_tisa_scores(int64_t step) {
  return torch::arange(kL * kH * kT * kT, torch::kFloat32).reshape({kL, kH, kT, kT}) * 0.01 -
         0.5 * static_cast<double>(step);  // (L,H,T,T)
}
inline torch::Tensor sample_learned_scores() { return torch::full({1, kH, kT, kT}, 0.25); }
inline torch::Tensor sample_distances() { return torch::arange(-5, 6, torch::kFloat32); }
inline torch::Tensor sample_tisa_a(int64_t step) {
  return torch::arange(kL * kH * 5, torch::kFloat32).reshape({kL, kH, 5}) * 0.5 +
         static_cast<double>(step);  // (L,H,S)
}
// float32 like every /position tensor (docs/hdf5-schema.md), bucket indices included.
inline torch::Tensor sample_buckets() { return torch::arange(11, torch::kFloat32).fmod(4); }
inline torch::Tensor sample_tokens() {
  return torch::arange(10, torch::kInt64).reshape({2, 5}) + 3;
}
inline torch::Tensor sample_key_mask() {
  return torch::tensor({1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, torch::kBool).reshape({2, 5});
}
inline const char* kQueryWeight = "transformer.blocks.0.attention.query.weight";
inline torch::Tensor sample_query_weight() {
  return torch::arange(16, torch::kFloat32).reshape({4, 4}) * 0.125;
}
inline torch::Tensor sample_bias() { return -torch::arange(7, torch::kFloat32); }

inline void write_sample_snapshot(RunFileWriter& w, int64_t step) {
  std::map<std::string, std::vector<NamedTensor>> position;
  position["tisa"] = {{"distances", sample_distances(), {"distance"}},
                      {"a", sample_tisa_a(step), {"layer", "head", "kernel"}}};
  position["t5_bias"] = {{"buckets", sample_buckets(), {"distance"}}};
  w.write_snapshot(step, sample_attention(step),
                   {{"tisa", sample_tisa_scores(step), {"layer", "head", "query", "key"}},
                    {"learned", sample_learned_scores(), {}}},
                   position);
}

// Metrics: loss at 0,10,20 = 2.5,2.0,1.75; accuracy at 10,20 = 0.5,0.625. Probe, snapshots 0
// and 10, weights at 10, eval "extrapolation".
inline void write_sample_run(RunFileWriter& w) {
  w.append_metric("loss", 0, 2.5);
  w.append_metric("loss", 10, 2.0);
  w.append_metric("accuracy", 10, 0.5);
  w.append_metric("loss", 20, 1.75);
  w.append_metric("accuracy", 20, 0.625);
  w.write_probe(sample_tokens(), sample_key_mask());
  write_sample_snapshot(w, 0);
  write_sample_snapshot(w, 10);
  w.write_weights({{kQueryWeight, sample_query_weight(), {"output", "input"}},
                   {"lm_head.bias", sample_bias(), {}}},
                  10);
  w.write_eval("extrapolation",
               {{"length", torch::tensor({5, 10, 20}, torch::kInt64), {}},
                {"loss", torch::tensor({1.5, 2.25, 3.125}, torch::kFloat64), {}}},
               {{"metric", "loss"}, {"note", "α"}});
}

}  // namespace relpos::test
