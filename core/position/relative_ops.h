// Relative-position terms shared by shaw, huang_* and transformer_xl.
//
// A relative table holds one vector per clipped distance: row c(r) + K for r = j - i,
// c(r) = max(-K, min(K, r)), so R = 2K + 1 rows (K is the clip distance). A table is (R,d),
// shared by heads, or (H,R,d), one per head.
//
// Fast path: products with the R distinct vectors, (B,H,T,R), then a gather to (B,H,T,T): no
// [T,T,d] tensor is built. Direct path: the straightforward form that gathers the table to
// [T,T,d] first (as Hugging Face does); kept as the reference the tests compare against.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace relpos {

// (T,T) int64 on `device`: c(j - i) + K for query i and key j.
torch::Tensor relative_index(int64_t T, int64_t K, torch::Device device);

// sum_m q_im a_{c(j-i),m} -> (B,H,T,T). q (B,H,T,d); table (R,d) or (H,R,d).
torch::Tensor relative_query_term(const torch::Tensor& q, const torch::Tensor& table, int64_t K,
                                  bool direct);

// sum_m k_jm a_{c(j-i),m} -> (B,H,T,T). k (B,H,T,d); table (R,d) or (H,R,d).
torch::Tensor relative_key_term(const torch::Tensor& k, const torch::Tensor& table, int64_t K,
                                bool direct);

// sum_j p_ij a_{c(j-i)} -> (B,H,T,d). probs (B,H,T,T); table (R,d) or (H,R,d).
torch::Tensor relative_value_term(const torch::Tensor& probs, const torch::Tensor& table,
                                  int64_t K, bool direct);

// sum_m q_im k_jm a_{c(j-i),m} -> (B,H,T,T). q, k (B,H,T,d); table (R,d) shared by heads.
// The fast path keeps no per-distance intermediates for backward: a custom autograd function
// recomputes them, so memory stays O(B·H·T·(d + R)).
torch::Tensor relative_qka_term(const torch::Tensor& q, const torch::Tensor& k,
                                const torch::Tensor& table, int64_t K, bool direct);

// The table gathered to (T,T,d) (or (H,T,T,d)): the direct form, for tests and the reference path.
torch::Tensor gather_relative_table(const torch::Tensor& table, int64_t T, int64_t K);

}  // namespace relpos
