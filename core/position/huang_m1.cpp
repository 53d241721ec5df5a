// huang_m1 — Huang et al. 2020, method 1 (PROVISIONAL: reconstructed from secondary
// descriptions of the paper, not from its code).
// Formula: e_ij = s_{min(|j-i|,K)} · q_i·k_j/√d, one learned scalar per absolute distance,
// initialised to 1. Hook: score term (3), via the general mechanism in huang.cpp with
// terms {qk} and scale_qk: abs. Parameters: K+1 per layer. Param: clip (K).
#include "core/position/huang.h"

namespace relpos {
void register_huang_m1(Registry& r) {
  register_huang_preset(r, "huang_m1",
                        "learned scalar per absolute distance times q·k (Huang 2020 m1)", true,
                        {"qk"}, "abs");
}
}  // namespace relpos
