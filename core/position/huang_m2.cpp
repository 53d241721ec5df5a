// huang_m2 — Huang et al. 2020, method 2 (PROVISIONAL: reconstructed from secondary
// descriptions of the paper, not from its code).
// Formula: e_ij = s_{c(j-i)} · q_i·k_j/√d, one learned scalar per signed clipped distance,
// initialised to 1. Hook: score term (3), via huang.cpp with terms {qk} and scale_qk: signed.
// Parameters: 2K+1 per layer. Param: clip (K).
#include "core/position/huang.h"

namespace relpos {
void register_huang_m2(Registry& r) {
  register_huang_preset(r, "huang_m2",
                        "learned scalar per signed distance times q·k (Huang 2020 m2)", true,
                        {"qk"}, "signed");
}
}  // namespace relpos
