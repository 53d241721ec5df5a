// Tiny configs for property and gradient tests: base.yaml with a small model, no dropout, and
// variant parameters small enough that clipping and bucketing happen within a few tokens.
#pragma once

#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "core/config/config.h"
#include "core/model/model.h"
#include "tests/helpers.h"

namespace relpos::test {

// D=16, H=2 (d=8), L=2, T=8; clip K=3 for shaw/huang*/deberta, t5 with 8 buckets up to distance
// 12, learned table of 32 rows, general huang with every term and a signed qk scale, FIRE's
// threshold L at 2 (so that its normalizer max(L, i) varies within 8 tokens), CoPE with 4
// positions (so that they saturate).
inline Config small_config(const std::string& type, bool causal,
                           const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets = {
      "position.type=" + type,
      std::string("model.mode=") + (causal ? "decoder" : "encoder"),
      std::string("task.type=") + (causal ? "clm" : "mlm"),
      "model.width=16", "model.heads=2", "model.layers=2", "model.ff_width=32",
      "model.dropout=0", "model.attention_dropout=0", "model.init_std=0.2", "task.seq_len=8",
      "position.shaw.clip=3", "position.huang.clip=3", "position.huang_m1.clip=3",
      "position.huang_m2.clip=3", "position.huang_m3.clip=3", "position.huang_m4.clip=3",
      "position.huang.terms=qk,qa,ka,qka", "position.huang.scale_qk=signed",
      "position.t5_bias.buckets=8", "position.t5_bias.max_distance=12",
      "position.learned.max_len=32", "position.tisa.kernels=3", "position.deberta.clip=3",
      "position.fire.init_threshold=2", "position.cope.n_pos=4"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_config({config_path("base.yaml")}, sets).config;
}

// Adds N(0, std²) noise to every position parameter, so that variants whose parameters start
// at a neutral value (huang_m1/m2 scales of 1) actually depend on position in a test.
inline void perturb_position(torch::nn::Module& position, double std = 0.3) {
  torch::NoGradGuard guard;
  for (auto& p : position.parameters()) p.add_(torch::randn_like(p) * std);
}

// A seeded small model in eval mode with perturbed position parameters.
inline Model small_model(const Config& cfg, int64_t vocab = 40, uint64_t seed = 11) {
  torch::manual_seed(seed);
  Model m(cfg, vocab);
  perturb_position(*m->transformer->position);
  m->eval();
  return m;
}

}  // namespace relpos::test
