// The general mechanism of Huang et al. 2020 ("Improve Transformer Models with Better Relative
// Position Embeddings"), of which huang_m1..huang_m4 are presets. See huang.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/position/position_encoding.h"

namespace relpos {

struct HuangSpec {
  std::vector<std::string> terms;  // subset of {qk, qa, ka, qka}
  std::string scale_qk = "none";   // none | abs | signed: learned scalar per distance on qk
  int64_t clip = 64;               // K
  bool per_head = false;           // one table a per head instead of one shared by the heads
};

// Checks a spec (terms known and non-empty, no duplicates, clip >= 1); fails through `check`.
void validate_huang_spec(const HuangSpec& spec, const ParamCheck& check);

std::shared_ptr<PositionEncodingImpl> make_huang(const ModelDims& dims, const HuangSpec& spec,
                                                 bool direct, const std::string& type);

// Registers a preset: a fixed choice of terms and scaling whose only parameter is `clip`
// (and `per_head` when per_head_option is true).
void register_huang_preset(Registry& r, const std::string& name, const std::string& summary,
                           bool provisional, std::vector<std::string> terms,
                           std::string scale_qk, bool per_head_option = false);

}  // namespace relpos
