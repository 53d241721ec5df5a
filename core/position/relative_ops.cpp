#include "core/position/relative_ops.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

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
// Eight rather than four since the blocks go through UnclippedQueryTerm: transformer_xl at
// T=512 on the bench model 48 ms (2%) faster per step, 95% CI [8, 88] ms, n = 6
// (results/bench/txl-blocks-8-2026-11-28-rounds-step-ms.txt).
constexpr int64_t kBlocks = 8;
constexpr int64_t kMinBlockedLength = 128;

int64_t query_block_rows(int64_t T) {
  return T < kMinBlockedLength ? T : (T + kBlocks - 1) / kBlocks;
}

// Queries s .. s+n-1 of every batch element as one matrix per head, plus v: (H, B·n, d). One
// product per head over the whole batch (B·n rows) instead of B products of n rows each.
Tensor block_queries(const Tensor& q, const Tensor& v, int64_t s, int64_t n) {
  const int64_t B = q.size(0), H = q.size(1), d = q.size(3);
  auto qb = q.narrow(2, s, n).permute({1, 0, 2, 3}).reshape({H, B * n, d});  // (H,B·n,d)
  return v.defined() ? qb + v.unsqueeze(1) : qb;  // out of place: qb may be a view of q
}

// out_ij = base_ij + (q_i + v)·a_{j-i} + c_j over query blocks, every output row written once.
// In block [s, s+n) the product of query s+i' with the table rows T-s-n .. 2T-2-s holds key j
// at column w = j - i' + n - 1 (see relative_query_term), so row i' of the scores is the
// product row's T values from column n - 1 - i', with c and base added in the same pass.
// Backward lays each gradient row back at that offset (zeros elsewhere) and takes two products
// per block: the gradient of q + v (-> q, and summed over batch and queries -> v) and that of
// the table's rows. Saves q, v and the table only; the product is recomputed in neither
// direction. An absent v, c or base is an empty tensor (autograd functions take no undefined
// inputs).
struct UnclippedQueryTerm : public torch::autograd::Function<UnclippedQueryTerm> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& q, const Tensor& table,
                        const Tensor& v, const Tensor& col, const Tensor& base) {
    ctx->save_for_backward({q, table, v});
    ctx->saved_data["col"] = col.numel() > 0;
    ctx->saved_data["base"] = base.numel() > 0;
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), P = query_block_rows(T);
    auto out = torch::empty({B, H, T, T}, q.options());                // (B,H,T,T)
    const Tensor c = col.numel() > 0 ? col.contiguous() : Tensor();    // (B,H,T)
    const Tensor e = base.numel() > 0 ? base.contiguous() : Tensor();  // (B,H,T,T)
    const Tensor vq = v.numel() > 0 ? v : Tensor();                    // (H,d)
    for (int64_t s = 0; s < T; s += P) {
      const int64_t n = std::min(P, T - s), W = T + n - 1;
      auto rows = table.narrow(1, T - s - n, W);  // (H,W,d)
      auto qa =
          torch::bmm(block_queries(q, vq, s, n), rows.transpose(1, 2)).contiguous();  // (H,B·n,W)
      AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "unclipped_query_term", [&] {
        const scalar_t* qp = qa.data_ptr<scalar_t>();
        const scalar_t* cp = c.defined() ? c.data_ptr<scalar_t>() : nullptr;
        const scalar_t* ep = e.defined() ? e.data_ptr<scalar_t>() : nullptr;
        scalar_t* op = out.data_ptr<scalar_t>();
        at::parallel_for(0, H * B * n, 16, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t h = r / (B * n), b = (r / n) % B, i = r % n;
            const int64_t slice = b * H + h, row = (slice * T + s + i) * T;
            const scalar_t* src = qp + r * W + (n - 1 - i);
            scalar_t* dst = op + row;
            std::copy(src, src + T, dst);
            if (cp != nullptr) {
              const scalar_t* cr = cp + slice * T;
              for (int64_t j = 0; j < T; ++j) dst[j] += cr[j];
            }
            if (ep != nullptr) {
              const scalar_t* er = ep + row;
              for (int64_t j = 0; j < T; ++j) dst[j] += er[j];
            }
          }
        });
      });
    }
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor &q = saved[0], &table = saved[1];
    const Tensor v = saved[2].numel() > 0 ? saved[2] : Tensor();  // (H,d)
    const Tensor g = grads[0].contiguous();                       // (B,H,T,T)
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3),
                  P = query_block_rows(T);
    const bool want_q = ctx->needs_input_grad(0) || (v.defined() && ctx->needs_input_grad(2));
    const bool want_table = ctx->needs_input_grad(1);
    Tensor gq = want_q ? torch::empty({B, H, T, d}, q.options()) : Tensor();           // (B,H,T,d)
    Tensor gt = want_table ? torch::zeros(table.sizes(), table.options()) : Tensor();  // (H,2T-1,d)
    for (int64_t s = 0; s < T && (want_q || want_table); s += P) {
      const int64_t n = std::min(P, T - s), W = T + n - 1;
      auto rows = table.narrow(1, T - s - n, W);           // (H,W,d)
      auto gb = torch::empty({H, B * n, W}, q.options());  // (H,B·n,W)
      AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "unclipped_query_term_backward", [&] {
        const scalar_t* gp = g.data_ptr<scalar_t>();
        scalar_t* bp = gb.data_ptr<scalar_t>();
        at::parallel_for(0, H * B * n, 16, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t h = r / (B * n), b = (r / n) % B, i = r % n;
            const scalar_t* src = gp + ((b * H + h) * T + s + i) * T;
            scalar_t* dst = bp + r * W;
            const int64_t lo = n - 1 - i;
            std::fill(dst, dst + lo, scalar_t(0));
            std::copy(src, src + T, dst + lo);
            std::fill(dst + lo + T, dst + W, scalar_t(0));
          }
        });
      });
      if (want_q) {
        auto gqb = torch::bmm(gb, rows);                                         // (H,B·n,d)
        gq.narrow(2, s, n).copy_(gqb.view({H, B, n, d}).permute({1, 0, 2, 3}));  // (B,H,n,d)
      }
      if (want_table)
        gt.narrow(1, T - s - n, W).add_(torch::bmm(gb.transpose(1, 2), block_queries(q, v, s, n)));
    }
    Tensor gv = v.defined() && ctx->needs_input_grad(2) ? gq.sum(at::IntArrayRef{0, 2})
                                                        : Tensor();  // (H,d)
    Tensor gc = ctx->saved_data["col"].toBool() && ctx->needs_input_grad(3) ? g.sum(2)
                                                                            : Tensor();  // (B,H,T)
    Tensor ge = ctx->saved_data["base"].toBool() && ctx->needs_input_grad(4) ? g : Tensor();
    return {ctx->needs_input_grad(0) ? gq : Tensor(), gt, gv, gc, ge};
  }
};

}  // namespace

Tensor unclipped_query_term(const Tensor& q, const Tensor& table, const Tensor& v,
                            const Tensor& col, const Tensor& base) {
  TORCH_CHECK(q.dim() == 4, "unclipped_query_term: expected q (B,H,T,d), got ", q.sizes());
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3);
  TORCH_CHECK(
      table.dim() == 3 && table.size(0) == H && table.size(1) == 2 * T - 1 && table.size(2) == d,
      "unclipped_query_term: expected a table (", H, ",", 2 * T - 1, ",", d, "), got ",
      table.sizes());
  TORCH_CHECK(!v.defined() || v.sizes() == torch::IntArrayRef({H, d}),
              "unclipped_query_term: expected v (", H, ",", d, "), got ", v.sizes());
  TORCH_CHECK(!col.defined() || col.sizes() == torch::IntArrayRef({B, H, 1, T}),
              "unclipped_query_term: expected c (", B, ",", H, ",1,", T, "), got ", col.sizes());
  TORCH_CHECK(!base.defined() || base.sizes() == torch::IntArrayRef({B, H, T, T}),
              "unclipped_query_term: expected base (", B, ",", H, ",", T, ",", T, "), got ",
              base.sizes());
  if (detail::cpu_kernels_take(q)) {
    auto present = [&](const Tensor& t) {
      return t.defined() ? t : torch::empty({0}, q.options());
    };
    return UnclippedQueryTerm::apply(q, table, present(v),
                                     present(col.defined() ? col.reshape({B, H, T}) : col),
                                     present(base));  // (B,H,T,T)
  }
  // Other devices and dtypes: the blocked product and its skew, then the extras in place
  // (v·a depends on the distance only: a Toeplitz bias).
  auto term = relative_query_term(q, table, T - 1, false);  // (B,H,T,T)
  if (v.defined())
    term.add_(toeplitz_bias(torch::bmm(v.unsqueeze(1), table.transpose(1, 2)).squeeze(1), T));
  if (col.defined()) term.add_(col);
  if (base.defined()) term.add_(base);
  return term;  // (B,H,T,T)
}

Tensor relative_query_term(const Tensor& q, const Tensor& table_in, int64_t K_in, bool direct) {
  check_relative_table(q, table_in, K_in);
  const int64_t T = q.size(2);
  if (direct) {
    auto A = gather_relative_table(table_in, T, K_in);  // (T,T,d) or (H,T,T,d)
    return table_in.dim() == 2 ? torch::einsum("bhid,ijd->bhij", {q, A})
                               : torch::einsum("bhid,hijd->bhij", {q, A});  // (B,H,T,T)
  }
  auto [table, K] = reachable_rows(table_in, K_in, T);
  if (K == T - 1 && detail::cpu_kernels_take(q)) {
    const Tensor per_head = table.dim() == 3 ? table : table.expand({q.size(1), -1, -1});
    return unclipped_query_term(q, per_head, Tensor(), Tensor(), Tensor());  // (B,H,T,T)
  }
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
