// Relative-position terms shared by shaw, huang_* and transformer_xl.
//
// A relative table holds one vector per clipped distance: row c(r) + K for r = j - i,
// c(r) = max(-K, min(K, r)), so R = 2K + 1 rows (K is the clip distance). A table is (R,d),
// shared by heads, or (H,R,d), one per head.
//
// Fast path: products with the R distinct vectors, (B,H,T,R), then a skew to (B,H,T,T)
// (relative_expand; relative_reduce for the value term): no [T,T,d] tensor is built. Without
// clipping (K >= T-1) only the 2T-1 reachable rows are used, and long sequences go in query
// blocks so that the product is not (T, 2T-1) (Transformer-XL). Direct path: the straightforward form that gathers the table to
// [T,T,d] first (as Hugging Face does); kept as the reference the tests compare against.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace relpos {

// The (1,H,T,T) matrix M_hij = f_h[j - i + T - 1] of a function of the distance given at
// r = -(T-1) .. T-1, f (H,2T-1): overlapping windows of f (a view), rows reversed. Its backward
// sums each diagonal back into f. For a contiguous f the result's last dimension is contiguous,
// as the fused attention kernel wants its mask.
torch::Tensor toeplitz_bias(const torch::Tensor& f, int64_t T);

// (T,T) int64 on `device`: c(j - i) + K for query i and key j.
torch::Tensor relative_index(int64_t T, int64_t K, torch::Device device);

// sum_m q_im a_{c(j-i),m} -> (B,H,T,T). q (B,H,T,d); table (R,d) or (H,R,d).
torch::Tensor relative_query_term(const torch::Tensor& q, const torch::Tensor& table, int64_t K,
                                  bool direct);

// Unclipped, with Transformer-XL's extras: base_ij + (q_i + v)·a_{j-i} + c_j -> (B,H,T,T).
// q (B,H,T,d); table (H,2T-1,d), row r + T - 1 for r = j - i; v (H,d), c (B,H,1,T) and base
// (B,H,T,T) each optional (undefined). On the CPU (float32, float64) one autograd node writes
// each score row once from query-block products (over the whole batch per head) and keeps q,
// v and the table only; elsewhere relative_query_term and in-place adds.
torch::Tensor unclipped_query_term(const torch::Tensor& q, const torch::Tensor& table,
                                   const torch::Tensor& v, const torch::Tensor& col,
                                   const torch::Tensor& base);

// sum_m k_jm a_{c(j-i),m} -> (B,H,T,T). k (B,H,T,d); table (R,d) or (H,R,d).
torch::Tensor relative_key_term(const torch::Tensor& k, const torch::Tensor& table, int64_t K,
                                bool direct);

// sum_j p_ij a_{c(j-i)} -> (B,H,T,d). probs (B,H,T,T); table (R,d) or (H,R,d).
torch::Tensor relative_value_term(const torch::Tensor& probs, const torch::Tensor& table,
                                  int64_t K, bool direct);

// sum_m q_im k_jm a_{c(j-i),m} -> (B,H,T,T). q, k (B,H,T,d); table (R,d) shared by heads.
// Fast path (relative_qka.cpp): clipped triangles as two matmuls, the band of |j-i| < K by a CPU
// kernel (tensor ops elsewhere); a custom autograd function recomputes the band in backward, so
// nothing beyond q, k and the table is saved.
torch::Tensor relative_qka_term(const torch::Tensor& q, const torch::Tensor& k,
                                const torch::Tensor& table, int64_t K, bool direct);

// out[...,i,j] = x[...,i, clamp(j - i + offset, 0, W-1)]: x (...,Tq,W) -> (...,Tq,Tk). With
// W = 2K+1 and offset K this lays out per-distance products x[i, c(j-i)+K] as scores.
// Differentiable (the gradient is relative_reduce); a row-copy kernel on the CPU, gather elsewhere.
torch::Tensor relative_expand(const torch::Tensor& x, int64_t Tk, int64_t offset);

// Key layout, square: out[...,i,j] = x[...,j, clamp(j - i + offset, 0, W-1)], x (...,T,W) with
// one row per key j -> (...,T,T). The key term k_j·a_{c(j-i)} without a transposed copy.
torch::Tensor relative_expand_keys(const torch::Tensor& x, int64_t offset);

// The adjoint of relative_expand: y[...,i,w] = sum_j g[...,i,j] [clamp(j-i+offset, 0, W-1) = w],
// (...,Tq,Tk) -> (...,Tq,W). With W = 2K+1, offset K: probabilities summed per clipped distance.
torch::Tensor relative_reduce(const torch::Tensor& g, int64_t W, int64_t offset);

// Checks x (B,H,T,d) against a table (R,d) or (H,R,d) for clip distance K (TORCH_CHECK).
void check_relative_table(const torch::Tensor& x, const torch::Tensor& table, int64_t K);

// The table gathered to (T,T,d) (or (H,T,T,d)): the direct form, for tests and the reference path.
torch::Tensor gather_relative_table(const torch::Tensor& table, int64_t T, int64_t K);

namespace detail {
// The fast qka path without the CPU kernel (the tensor-op band other devices use), so that
// tests can check it on the CPU.
torch::Tensor relative_qka_term_tensor_ops(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& table, int64_t K);

// While one lives (on this thread), relative_expand, relative_expand_keys and relative_reduce
// and their gradients, and cope's fast term, take the tensor-op path that CUDA and bfloat16 take
// instead of their CPU row kernels, so that tests can check that path in float64 on the CPU.
class SkewTensorOpsScope {
 public:
  SkewTensorOpsScope();
  ~SkewTensorOpsScope();
  SkewTensorOpsScope(const SkewTensorOpsScope&) = delete;
  SkewTensorOpsScope& operator=(const SkewTensorOpsScope&) = delete;

 private:
  bool previous_;
};
// Whether the CPU kernels (the skews, transformer_xl's query term, cope's rows) take t: on the
// CPU in float32 or float64, and no SkewTensorOpsScope living on this thread.
bool cpu_kernels_take(const torch::Tensor& t);
}  // namespace detail

}  // namespace relpos
