// The value side of attention with dropout on the probabilities, lean on memory: z = drop(P)·v.
#pragma once

#include <torch/types.h>

#include <utility>

namespace relpos {

// Returns z = drop(probs)·v (B,H,T,d) and drop(probs) (B,H,T,T) for the value hooks, where
// drop zeroes each probability with chance p and scales the rest by 1/(1-p) when `training`
// (identity otherwise). For backward it keeps only probs (which softmax keeps anyway) and a
// one-byte mask, and recomputes drop(probs) for the gradient of v; torch::dropout followed by
// matmul would keep a float mask and the dropped copy: two more (B,H,T,T) floats per layer.
std::pair<torch::Tensor, torch::Tensor> attend_values(const torch::Tensor& probs,
                                                      const torch::Tensor& v, double p,
                                                      bool training);

}  // namespace relpos
