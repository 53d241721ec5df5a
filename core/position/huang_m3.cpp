// huang_m3 — Huang et al. 2020, method 3 (PROVISIONAL: reconstructed from secondary
// descriptions of the paper, not from its code).
// Formula: e_ij = Σ_m q_im k_jm a_{c(j-i),m} / √d, the three-way product of query, key and
// relative vector (replaces q·k). Hook: score term (3), via huang.cpp with terms {qka}; outside
// snapshots the term is the whole score and attention forms no q·k (can_include_content).
// Parameters: (2K+1)·d per layer, shared by heads; a starts at 1 + noise. Param: clip (K).
#include "core/position/huang.h"

namespace relpos {
void register_huang_m3(Registry& r) {
  register_huang_preset(r, "huang_m3",
                        "three-way product q⊙k⊙a per clipped distance (Huang 2020 m3)", true,
                        {"qka"}, "none");
}
}  // namespace relpos
