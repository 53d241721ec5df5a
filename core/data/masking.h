// BERT's masked-LM corruption (Devlin et al. 2019, 15% with 80/10/10).
#pragma once

#include <cstdint>
#include <vector>

#include "core/data/rng.h"

namespace relpos {

// Corrupts one row in place. Each non-special token (id >= 5) is selected independently with
// probability `p`; a row with non-special tokens but no selection gets one selected uniformly.
// A selected position gets target = its original id, and its token becomes [MASK] (80%), a
// uniformly drawn non-special id in [5, vocab) (10%), or stays (10%). Special tokens are never
// selected. `targets` is resized to the row and set to -100 at unselected positions.
void mask_row(std::vector<int64_t>& tokens, std::vector<int64_t>& targets, double p,
              int64_t vocab_size, Rng& rng);

}  // namespace relpos
