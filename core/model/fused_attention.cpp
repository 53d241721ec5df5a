#include "core/model/fused_attention.h"

#include <torch/version.h>

#include <cmath>
#include <limits>

#if TORCH_VERSION_MAJOR >= 2
#include <ATen/Functions.h>
#define RELPOS_HAVE_SDPA 1
#else
#define RELPOS_HAVE_SDPA 0
#endif

namespace relpos {
namespace {

using torch::Tensor;

// attn_mask as scaled_dot_product_attention takes it: bool (true: takes part) or a float term
// added to the scores. LibTorch < 2.0: the same computation, composed.
Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
            double dropout_p, bool is_causal) {
#if RELPOS_HAVE_SDPA
  if (attn_mask.defined()) return at::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal);
  return at::scaled_dot_product_attention(q, k, v, {}, dropout_p, is_causal);
#else
  const double inv_sqrt_d = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto scores = torch::matmul(q * inv_sqrt_d, k.transpose(-1, -2));  // (B,H,T,T)
  const int64_t T = q.size(2), S = k.size(2);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (is_causal)
    scores = scores.masked_fill(torch::ones({T, S}, q.options().dtype(torch::kBool)).tril().logical_not(),
                                neg_inf);
  if (attn_mask.defined())
    scores = attn_mask.scalar_type() == torch::kBool ? scores.masked_fill(attn_mask.logical_not(), neg_inf)
                                                     : scores + attn_mask;
  auto probs = torch::softmax(scores, -1);  // (B,H,T,T)
  if (dropout_p > 0.0) probs = torch::dropout(probs, dropout_p, /*train=*/true);
  return torch::matmul(probs, v);  // (B,H,T,d)
#endif
}

}  // namespace

bool fused_attention_available() { return RELPOS_HAVE_SDPA; }

std::string fused_attention_status() {
  return RELPOS_HAVE_SDPA
             ? std::string("fused (scaled_dot_product_attention, LibTorch ") + TORCH_VERSION + ")"
             : std::string("eager only (LibTorch ") + TORCH_VERSION +
                   " has no scaled_dot_product_attention)";
}

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                       bool causal, const Tensor& key_mask, double dropout_p) {
  TORCH_CHECK(q.dim() == 4 && k.sizes() == q.sizes() && v.sizes() == q.sizes(),
              "fused attention expects q, k, v (B,H,T,d) of one shape, got ", q.sizes(), ", ",
              k.sizes(), ", ", v.sizes());
  const int64_t B = q.size(0), T = q.size(2);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  // The bias in the queries' dtype (bfloat16 under autocast): the kernel takes one dtype.
  Tensor b = bias.defined() ? bias.to(q.scalar_type()) : bias;  // (1|B,H,T,T)
  // The memory-efficient kernel takes a mask whose last dimension is contiguous; with another
  // layout (t5_bias's transposed table gave a stride of H there) the call falls to the math
  // kernel, which forms the (B,H,T,T) scores in float32 (18.8 GB against 7.6 for tisa on the
  // H200, docs/performance.md).
  if (b.defined() && b.stride(-1) != 1) b = b.contiguous();
  if (!key_mask.defined()) {
    // Only the causal mask, if any: the flash kernel's own when there is no bias.
    if (!b.defined()) return sdpa(q, k, v, {}, dropout_p, causal);
    if (!causal) return sdpa(q, k, v, b, dropout_p, false);
    auto hidden = torch::ones({T, T}, q.options().dtype(torch::kBool)).tril().logical_not();
    return sdpa(q, k, v, b.masked_fill(hidden, neg_inf), dropout_p, false);  // (1|B,H,T,T) mask
  }
  TORCH_CHECK(key_mask.sizes() == torch::IntArrayRef({B, T}), "key mask must be (", B, ",", T,
              "), got ", key_mask.sizes());
  auto visible = key_mask.to(torch::kBool).view({B, 1, 1, T});  // (B,1,1,T)
  if (causal)
    visible = visible & torch::ones({T, T}, visible.options()).tril().view({1, 1, T, T});  // (B,1,T,T)
  else
    visible = visible.expand({B, 1, T, T});
  // A query that sees no key (padding only, or left padding under the causal mask) would give
  // NaN: it attends to every key instead, and its output is zeroed below.
  auto sees_any = visible.any(-1, /*keepdim=*/true);  // (B,1,T,1)
  auto take = visible | sees_any.logical_not();      // (B,1,T,T)
  auto z = b.defined() ? sdpa(q, k, v, b.masked_fill(take.logical_not(), neg_inf), dropout_p, false)
                       : sdpa(q, k, v, take, dropout_p, false);  // (B,H,T,d)
  return z.masked_fill(sees_any.logical_not(), 0.0);            // (B,H,T,d)
}

}  // namespace relpos
