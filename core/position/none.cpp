// none — no position information (NoPE baseline).
// Formula: e_ij = q_i·k_j/√d. Hooks: none. Parameters: none.
// Beyond the training length: nothing changes; an encoder cannot tell positions apart, a causal
// decoder can still infer them from the mask.
#include "core/position/position_encoding.h"

namespace relpos {
namespace {

class NoneImpl : public PositionEncodingImpl {
 public:
  std::string type() const override { return "none"; }
  // No score term, or one of positions only: the fused kernel takes it as its mask.
  FusedScores fused_scores() const override { return FusedScores::bias; }
};

}  // namespace

const char* const kDefaultPositionType = "none";

void register_none(Registry& r) {
  VariantInfo v;
  v.name = "none";
  v.summary = "no position encoding (NoPE): e = q·k/√d";
  v.baseline = true;
  v.make_params = [] { return std::make_shared<NoParams>(); };
  v.make = [](const ModelDims&, const VariantParams&, const PositionConfig&) {
    return std::make_shared<NoneImpl>();
  };
  r.add(std::move(v));
}

}  // namespace relpos
