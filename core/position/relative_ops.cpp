#include "core/position/relative_ops.h"

#include <torch/autograd.h>

#include <algorithm>

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

namespace {

void check_table(const Tensor& x, const Tensor& table, int64_t K) {
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

Tensor table_t(const Tensor& table) { return table.transpose(-1, -2); }  // (d,R) or (H,d,R)

}  // namespace

Tensor relative_query_term(const Tensor& q, const Tensor& table, int64_t K, bool direct) {
  check_table(q, table, K);
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2);
  if (direct) {
    auto A = gather_relative_table(table, T, K);  // (T,T,d) or (H,T,T,d)
    return table.dim() == 2 ? torch::einsum("bhid,ijd->bhij", {q, A})
                            : torch::einsum("bhid,hijd->bhij", {q, A});  // (B,H,T,T)
  }
  auto qa = torch::matmul(q, table_t(table));                    // (B,H,T,R)
  auto idx = relative_index(T, K, q.device()).expand({B, H, T, T});  // (B,H,T,T)
  return qa.gather(-1, idx);                                     // (B,H,T,T)
}

Tensor relative_key_term(const Tensor& k, const Tensor& table, int64_t K, bool direct) {
  check_table(k, table, K);
  const int64_t B = k.size(0), H = k.size(1), T = k.size(2);
  if (direct) {
    auto A = gather_relative_table(table, T, K);  // (T,T,d) or (H,T,T,d)
    return table.dim() == 2 ? torch::einsum("bhjd,ijd->bhij", {k, A})
                            : torch::einsum("bhjd,hijd->bhij", {k, A});  // (B,H,T,T)
  }
  auto ka = torch::matmul(k, table_t(table));  // (B,H,T,R), rows are keys j
  // out[i,j] = ka[j, idx[i,j]]: gather along the row of key j with the transposed index.
  auto idx_t = relative_index(T, K, k.device()).t().expand({B, H, T, T});  // (B,H,T,T) [j,i]
  return ka.gather(-1, idx_t).transpose(-1, -2);                           // (B,H,T,T)
}

Tensor relative_value_term(const Tensor& probs, const Tensor& table, int64_t K, bool direct) {
  TORCH_CHECK(probs.dim() == 4 && probs.size(-1) == probs.size(-2),
              "expected probabilities (B,H,T,T), got ", probs.sizes());
  TORCH_CHECK(table.size(-2) == 2 * K + 1, "relative table has ", table.size(-2),
              " rows; clip distance ", K, " needs ", 2 * K + 1);
  const int64_t B = probs.size(0), H = probs.size(1), T = probs.size(2);
  if (direct) {
    auto A = gather_relative_table(table, T, K);  // (T,T,d) or (H,T,T,d)
    return table.dim() == 2 ? torch::einsum("bhij,ijd->bhid", {probs, A})
                            : torch::einsum("bhij,hijd->bhid", {probs, A});  // (B,H,T,d)
  }
  // Sum the probabilities that fall on each clipped distance, then one (R,d) product.
  auto idx = relative_index(T, K, probs.device()).expand({B, H, T, T});  // (B,H,T,T)
  auto w = torch::zeros({B, H, T, 2 * K + 1}, probs.options())
               .scatter_add(-1, idx, probs);  // (B,H,T,R)
  return torch::matmul(w, table);             // (B,H,T,d)
}

namespace {

// band[b,h,i,r+M] = sum_m q[b,h,i,m] k[b,h,i+r,m] a[r+M,m] for |r| <= M and 0 <= i+r < T, else 0.
// Backward recomputes the per-distance products instead of saving them.
struct BandQKA : public torch::autograd::Function<BandQKA> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& q, const Tensor& k,
                        const Tensor& a, int64_t M) {
    ctx->save_for_backward({q, k, a});
    ctx->saved_data["M"] = M;
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2);
    auto band = torch::zeros({B, H, T, 2 * M + 1}, q.options());  // (B,H,T,2M+1)
    for (int64_t r = -M; r <= M; ++r) {
      const int64_t n = T - std::abs(r);
      if (n <= 0) continue;
      const int64_t i0 = std::max<int64_t>(0, -r), j0 = std::max<int64_t>(0, r);
      auto prod = q.narrow(2, i0, n) * k.narrow(2, j0, n);  // (B,H,n,d)
      auto vals = torch::matmul(prod, a[r + M]);              // (B,H,n)
      band.select(3, r + M).narrow(2, i0, n).copy_(vals);
    }
    return band;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor &q = saved[0], &k = saved[1], &a = saved[2];
    const int64_t M = ctx->saved_data["M"].toInt();
    const int64_t T = q.size(2);
    const Tensor g = grads[0];  // (B,H,T,2M+1)
    auto dq = torch::zeros_like(q), dk = torch::zeros_like(k), da = torch::zeros_like(a);
    for (int64_t r = -M; r <= M; ++r) {
      const int64_t n = T - std::abs(r);
      if (n <= 0) continue;
      const int64_t i0 = std::max<int64_t>(0, -r), j0 = std::max<int64_t>(0, r);
      auto qi = q.narrow(2, i0, n), kj = k.narrow(2, j0, n);  // (B,H,n,d)
      auto gr = g.select(3, r + M).narrow(2, i0, n).unsqueeze(-1);  // (B,H,n,1)
      auto ga = gr * a[r + M];                                     // (B,H,n,d)
      dq.narrow(2, i0, n).add_(ga * kj);
      dk.narrow(2, j0, n).add_(ga * qi);
      da[r + M].copy_((gr * qi * kj).sum({0, 1, 2}));
    }
    return {dq, dk, da, Tensor()};
  }
};

}  // namespace

Tensor relative_qka_term(const Tensor& q, const Tensor& k, const Tensor& table, int64_t K,
                         bool direct) {
  check_table(q, table, K);
  TORCH_CHECK(table.dim() == 2, "the qka term takes a table shared by heads (R,d), got ",
              table.sizes());
  TORCH_CHECK(q.sizes() == k.sizes(), "q ", q.sizes(), " and k ", k.sizes(), " differ");
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2);
  if (direct) {
    auto A = gather_relative_table(table, T, K);     // (T,T,d)
    return torch::einsum("bhid,bhjd,ijd->bhij", {q, k, A});  // (B,H,T,T)
  }
  // Distances |r| <= M come from the band; beyond the clip distance every pair uses the
  // same end vector, which is one matmul per side.
  const bool clipped = K < T - 1;
  const int64_t M = clipped ? K - 1 : T - 1;
  auto a_band = table.narrow(0, K - M, 2 * M + 1);  // (2M+1,d)
  auto band = BandQKA::apply(q, k, a_band, M);      // (B,H,T,2M+1)
  auto pos = torch::arange(T, q.options().dtype(torch::kLong));
  auto rel = pos.unsqueeze(0) - pos.unsqueeze(1);   // (T,T) j - i
  auto in_band = rel.abs() <= M;                    // (T,T)
  auto idx = (rel.clamp(-M, M) + M).expand({B, H, T, T});
  auto out = band.gather(-1, idx).masked_fill(in_band.logical_not(), 0.0);  // (B,H,T,T)
  if (clipped) {
    auto kt = k.transpose(-1, -2);                                  // (B,H,d,T)
    auto upper = torch::matmul(q * table[2 * K], kt);               // (B,H,T,T)
    auto lower = torch::matmul(q * table[0], kt);                   // (B,H,T,T)
    out = out + upper.masked_fill((rel >= K).logical_not(), 0.0) +
          lower.masked_fill((rel <= -K).logical_not(), 0.0);
  }
  return out;
}

}  // namespace relpos
