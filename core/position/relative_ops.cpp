#include "core/position/relative_ops.h"

#include <algorithm>
#include <utility>
#include <vector>


namespace relpos {

using torch::Tensor;
using torch::indexing::Slice;

torch::Tensor relative_index(int64_t T, int64_t K, torch::Device device) {
  auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(device));  // (T)
  auto rel = pos.unsqueeze(0) - pos.unsqueeze(1);  // (T,T) j - i
  return rel.clamp(-K, K) + K;                     // (T,T)
}

torch::Tensor gather_relative_table(const Tensor& table, int64_t T, int64_t K) {
  auto idx = relative_index(T, K, table.device()).reshape({-1});  // (T*T)
  if (table.dim() == 2) {
    return table.index_select(0, idx).view({T, T, table.size(1)});  // (T,T,d)
  }
  TORCH_CHECK(table.dim() == 3, "relative table must be (R,d) or (H,R,d), got ", table.sizes());
  return table.index_select(1, idx).view({table.size(0), T, T, table.size(2)});  // (H,T,T,d)
}

void check_relative_table(const Tensor& x, const Tensor& table, int64_t K) {
  TORCH_CHECK(x.dim() == 4, "expected (B,H,T,d), got ", x.sizes());
  TORCH_CHECK(table.dim() == 2 || table.dim() == 3, "relative table must be (R,d) or (H,R,d), got ",
              table.sizes());
  TORCH_CHECK(table.size(-2) == 2 * K + 1, "relative table has ", table.size(-2),
              " rows; clip distance ", K, " needs ", 2 * K + 1);
  TORCH_CHECK(table.size(-1) == x.size(-1), "relative table width ", table.size(-1),
              " != head width ", x.size(-1), " (table ", table.sizes(), ", input ", x.sizes(), ")");
  if (table.dim() == 3)
    TORCH_CHECK(table.size(0) == x.size(1), "per-head table has ", table.size(0),
                " heads, input has ", x.size(1));
}

namespace {

Tensor table_t(const Tensor& table) { return table.transpose(-1, -2); }  // (d,R) or (H,d,R)

// x (B,H,N,a) times y (a,b), or (H,a,b) one matrix per head -> (B,H,N,b). matmul would broadcast
// a per-head y over the batch, a (B,H,a,b) copy kept for backward (21 MB per transformer_xl
// layer on the bench model), and reshape a strided x into a copy of its own. One bmm per batch
// element keeps views of x (for q/√d, the storage the content matmul keeps) and y only. On
// the CPU only: on a GPU the copy is cheap and B small kernel launches are not (not measured).
Tensor head_matmul(const Tensor& x, const Tensor& y) {
  if (y.dim() == 2 || !x.device().is_cpu()) return torch::matmul(x, y);  // (B,H,N,b)
  std::vector<Tensor> out;
  for (const auto& xb : x.unbind(0)) out.push_back(torch::bmm(xb, y));  // (H,N,b) each
  return torch::stack(out);                                             // (B,H,N,b)
}

// Rows of the table that T tokens can reach: without clipping (K >= T-1) only distances
// -(T-1)..T-1, i.e. rows K-T+1 .. K+T-1. Returns the table narrowed to them and its new K.
std::pair<Tensor, int64_t> reachable_rows(const Tensor& table, int64_t K, int64_t T) {
  if (K <= T - 1) return {table, K};
  return {table.narrow(-2, K - (T - 1), 2 * T - 1), T - 1};  // (2T-1,d) or (H,2T-1,d)
}

// Unclipped and long: the product with all 2T-1 distances does twice the work of q·kᵀ, though
// each query row reaches only T of them. Query blocks of P rows reach T+P-1 distances, so
// kBlocks blocks do (1 + 1/kBlocks)x the work of q·kᵀ and never hold a (T, 2T-1) product.
constexpr int64_t kBlocks = 4;
constexpr int64_t kMinBlockedLength = 128;

}  // namespace

Tensor relative_query_term(const Tensor& q, const Tensor& table_in, int64_t K_in, bool direct) {
  check_relative_table(q, table_in, K_in);
  const int64_t T = q.size(2);
  if (direct) {
    auto A = gather_relative_table(table_in, T, K_in);  // (T,T,d) or (H,T,T,d)
    return table_in.dim() == 2 ? torch::einsum("bhid,ijd->bhij", {q, A})
                               : torch::einsum("bhid,hijd->bhij", {q, A});  // (B,H,T,T)
  }
  auto [table, K] = reachable_rows(table_in, K_in, T);
  if (K < T - 1 || T < kMinBlockedLength) {
    auto qa = head_matmul(q, table_t(table));    // (B,H,T,R)
    return relative_expand(qa, T, K);            // (B,H,T,T)
  }
  // K = T-1 here: row r + T-1 of the table is distance r. Block [s, s+P) reaches distances
  // -(s+P-1) .. T-1-s, rows T-s-P .. 2T-2-s; within the block, w = j - i' + P - 1.
  const int64_t P = (T + kBlocks - 1) / kBlocks;
  std::vector<Tensor> blocks;
  for (int64_t s = 0; s < T; s += P) {
    const int64_t n = std::min(P, T - s);
    auto rows = table.narrow(-2, T - s - n, T + n - 1);               // (T+n-1,d) or (H,..)
    auto qa = head_matmul(q.narrow(2, s, n), table_t(rows));          // (B,H,n,T+n-1)
    blocks.push_back(relative_expand(qa, T, n - 1));                 // (B,H,n,T)
  }
  return torch::cat(blocks, 2);  // (B,H,T,T)
}

Tensor relative_key_term(const Tensor& k, const Tensor& table_in, int64_t K_in, bool direct) {
  check_relative_table(k, table_in, K_in);
  const int64_t T = k.size(2);
  if (direct) {
    auto A = gather_relative_table(table_in, T, K_in);  // (T,T,d) or (H,T,T,d)
    return table_in.dim() == 2 ? torch::einsum("bhjd,ijd->bhij", {k, A})
                               : torch::einsum("bhjd,hijd->bhij", {k, A});  // (B,H,T,T)
  }
  auto [table, K] = reachable_rows(table_in, K_in, T);
  auto ka = head_matmul(k, table_t(table));    // (B,H,T,R) rows are keys j
  return relative_expand_keys(ka, K);          // (B,H,T,T) out[i,j] = ka[j, c(j-i)+K]
}

Tensor toeplitz_bias(const Tensor& f, int64_t T) {
  TORCH_CHECK(f.dim() == 2 && f.size(1) == 2 * T - 1, "toeplitz_bias: expected (H,", 2 * T - 1,
              "), got ", f.sizes());
  // Window k holds f[k .. k+T-1]; query i reads window T-1-i: M_ij = f[T-1-i+j].
  return f.unfold(1, T, 1).flip({1}).unsqueeze(0);  // (1,H,T,T)
}

Tensor relative_value_term(const Tensor& probs, const Tensor& table_in, int64_t K_in,
                           bool direct) {
  TORCH_CHECK(probs.dim() == 4 && probs.size(-1) == probs.size(-2),
              "expected probabilities (B,H,T,T), got ", probs.sizes());
  TORCH_CHECK(table_in.size(-2) == 2 * K_in + 1, "relative table has ", table_in.size(-2),
              " rows; clip distance ", K_in, " needs ", 2 * K_in + 1);
  const int64_t T = probs.size(2);
  if (direct) {
    auto A = gather_relative_table(table_in, T, K_in);  // (T,T,d) or (H,T,T,d)
    return table_in.dim() == 2 ? torch::einsum("bhij,ijd->bhid", {probs, A})
                               : torch::einsum("bhij,hijd->bhid", {probs, A});  // (B,H,T,d)
  }
  auto [table, K] = reachable_rows(table_in, K_in, T);
  // Sum the probabilities that fall on each clipped distance, then one (R,d) product.
  auto w = relative_reduce(probs, 2 * K + 1, K);  // (B,H,T,R)
  return head_matmul(w, table);                   // (B,H,T,d)
}

}  // namespace relpos
