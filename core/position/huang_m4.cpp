// huang_m4 — Huang et al. 2020, method 4 (verified against the first author's code, which is
// Hugging Face's position_embedding_type="relative_key_query"). The two compute the same scores
// only when (1) nothing is clipped, K >= T - 1: Hugging Face's table has 2·max_position_embeddings
// - 1 rows and never clips, ours clips at `clip` (64 by default, 8 or 16 in the mini configs); and
// (2) our table is read reversed along the distance axis (see the sign convention below).
// Formula: e_ij = (q_i·k_j + q_i·a_{c(j-i)} + k_j·a_{c(j-i)}) / √d
//               = ((q_i + a)·(k_j + a) - a·a) / √d.
// Hook: score term (3), via huang.cpp with terms {qk, qa, ka}.
// Parameters: (2K+1)·d per layer, shared by heads as in the author's code; per_head: true gives
// each head its own table, H·(2K+1)·d per layer (the paper's Figure 4 shows one head's).
// Params: clip (K), per_head (default false).
// Sign convention: our table row is indexed by j - i; Hugging Face indexes by i - j, so its
// table is ours flipped along the distance axis.
#include "core/position/huang.h"

namespace relpos {
void register_huang_m4(Registry& r) {
  register_huang_preset(r, "huang_m4",
                        "q·k + q·a + k·a with relative vectors a (Huang 2020 m4, verified)", false,
                        {"qk", "qa", "ka"}, "none", /*per_head_option=*/true);
}
}  // namespace relpos
