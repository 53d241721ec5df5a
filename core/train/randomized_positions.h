// Randomized positional encodings (Ruoss et al. 2023, "Randomized Positional Encodings Boost
// Length Generalization of Transformers"): each training sequence of length T gets the positions
// of an ordered random subset of 0..N-1 (position.randomized_max = N), so an absolute or rotary
// encoding sees position indices up to N-1 while training at length T. Evaluation uses 0..T-1.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace relpos {

// (B,T) int64 on the CPU: row b holds T distinct positions of 0..N-1 in increasing order, each
// T-subset equally likely (selection sampling, Knuth's Algorithm S). A pure function of
// (seed, step, b), so that a resumed run draws the same positions, and the rows of a global
// batch split over data-parallel ranks are those of one process. Throws ConfigError if T > N.
torch::Tensor randomized_positions(int64_t seed, int64_t step, int64_t B, int64_t T, int64_t N);

}  // namespace relpos
