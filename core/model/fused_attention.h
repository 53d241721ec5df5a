// The fused attention path (model.attention_impl): softmax(q·kᵀ/√d + bias) v through LibTorch's
// scaled_dot_product_attention (flash, memory-efficient or CPU flash kernels; LibTorch >= 2.0),
// which never keeps the (B,H,T,T) probabilities for backward. LibTorch 1.13 (Debian's) has no
// such kernel: there relpos runs the eager path, and this file's fallback composes the same
// math from matmul and softmax so that tests can check the fused path's masking everywhere.
#pragma once

#include <torch/types.h>

#include <string>

namespace relpos {

// Whether this build's LibTorch has scaled_dot_product_attention (chosen at compile time).
bool fused_attention_available();

// One line for `relpos bench` and the docs: "fused (scaled_dot_product_attention, LibTorch
// 2.11.0)" or "eager only (LibTorch 1.13.1 has no scaled_dot_product_attention)".
std::string fused_attention_status();

// z = softmax(q·kᵀ/√d + bias, over the keys visible) v, (B,H,T,d), with q, k, v (B,H,T,d).
// bias: the position encodings' summed score terms, (1|B,H,T,T), or undefined for none.
// Visible keys: all, or j <= i when `causal`, and only where key_mask (B,T) is true when it is
// defined. A query that sees no key gets z = 0 (as the eager path's row of zeros gives), with
// finite gradients. Dropout on the probabilities with chance `dropout_p` (0 outside training).
torch::Tensor fused_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, const torch::Tensor& bias, bool causal,
                              const torch::Tensor& key_mask, double dropout_p);

}  // namespace relpos
