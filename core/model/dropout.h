// Dropout on the CPU without LibTorch's element-by-element Bernoulli kernel, with the same draws.
//
// Tensor::bernoulli_(p) on the CPU (LibTorch built without MKL, as Debian's is; with MKL, on
// processors other than Intel's) takes one random64() of the default generator's mt19937 per
// element, in element order, and is true where its low 53 bits over 2^53 are below p. It does so
// through a serial tensor iterator, one engine call at a time: ~17% of a bench step on the CPU
// went to the attention-dropout mask. bernoulli_cpu makes the same draws from the same engine in
// blocks (the generator's state after it is the state after bernoulli_), so masks, trainings
// and committed results do not change; tests/test_dropout.cpp checks both against LibTorch.
#pragma once

#include <torch/nn/modules/dropout.h>
#include <torch/types.h>

#include <cstdint>

namespace relpos {

// out[i] = (uniform_i < p) for i < n, the uniforms drawn from the default CPU generator as
// Tensor::bernoulli_(p) draws them; 0 <= p <= 1. Holds the generator's lock while it draws.
void bernoulli_cpu(bool* out, int64_t n, double p);

// A bool tensor of `sizes`, true with chance p: bernoulli_cpu on the CPU, bernoulli_ elsewhere.
torch::Tensor bernoulli_mask(at::IntArrayRef sizes, double p, const torch::TensorOptions& options);

// torch::dropout(x, p, training), the same values and gradients (x·noise, noise = mask/(1-p))
// and the same draws, with the mask drawn by bernoulli_cpu for float and double CPU tensors.
torch::Tensor dropout(const torch::Tensor& x, double p, bool training);

// The module's p and training flag applied with dropout() above.
torch::Tensor dropout(const torch::Tensor& x, const torch::nn::Dropout& module);

}  // namespace relpos
