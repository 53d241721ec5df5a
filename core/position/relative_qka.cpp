// The three-way relative term sum_m q_im k_jm a_{c(j-i),m} (huang_m3's qka), fast path.
//
// Distances |r| <= M (M = K-1 when clipped, else T-1) form a band of (2M+1) values per query;
// beyond the clip every pair uses an end vector, so the two clipped triangles are ordinary
// matmuls: q·(a_{+K} ⊙ k)ᵀ above, q·(a_{-K} ⊙ k)ᵀ below. The band needs a three-way product
// per (i, r): B·H·T·(2M+1)·d multiply-adds, a fraction of one attention matmul, but memory-bound
// when written with tensor ops (one pass over q and k per distance). On the CPU a kernel computes
// it in one pass with the keys transposed so that the innermost loop runs over distances
// (contiguous, vectorised) and adds it straight into the (T,T) output. Other devices and dtypes
// use tensor ops: one (B,H,T,d) product per distance, then a skew to (T,T).
// Nothing per distance is saved for backward: the band is recomputed from q, k and a.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/nn/functional/padding.h>

#include <algorithm>
#include <cstring>

#include "core/position/relative_ops.h"
#include "core/util/precision.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
// One copy of each kernel per instruction set, picked at load time (GCC function multiversioning).
#define RELPOS_SIMD_CLONES \
  __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default")))
#else
#define RELPOS_SIMD_CLONES
#endif

namespace relpos {

using torch::Tensor;

namespace {

// ---- CPU kernels, one (batch, head) slice at a time -------------------------------------------
// q (T,d) row-major; kTp (d, T+2M): keys transposed, zero-padded by M on both sides, so that
// kTp[m][i + rr] = k[i + rr - M][m] (0 outside the sequence); aT (d, R) with R = 2M+1.
// out (T, T) row-major: out[i][i + rr - M] = sum_m q[i][m] a[rr][m] k[i+rr-M][m] (assigned, so
// whatever the clipped blocks wrote into the band is replaced).

template <class S>
inline __attribute__((always_inline)) void band_forward_body(const S* q, const S* kTp,
                                                             const S* aT, S* out, int64_t T,
                                                             int64_t d, int64_t M, S* e) {
  const int64_t R = 2 * M + 1, P = T + 2 * M;
  for (int64_t i = 0; i < T; ++i) {
    std::fill(e, e + R, S(0));
    const S* qi = q + i * d;
    for (int64_t m = 0; m < d; ++m) {
      const S c = qi[m];
      const S* ar = aT + m * R;
      const S* kr = kTp + m * P + i;
      for (int64_t rr = 0; rr < R; ++rr) e[rr] += c * ar[rr] * kr[rr];
    }
    const int64_t lo = std::max<int64_t>(0, M - i), hi = std::min<int64_t>(R, T + M - i);
    S* row = out + i * T + (i - M);
    for (int64_t rr = lo; rr < hi; ++rr) row[rr] = e[rr];
  }
}

// g (T,T) the gradient of out. Accumulates dq (T,d), dkTp (d, T+2M) and daT (d, R).
template <class S>
inline __attribute__((always_inline)) void band_backward_body(const S* q, const S* kTp,
                                                              const S* aT, const S* g, S* dq,
                                                              S* dkTp, S* daT, int64_t T,
                                                              int64_t d, int64_t M, S* gb) {
  const int64_t R = 2 * M + 1, P = T + 2 * M;
  constexpr int kLanes = 16;
  for (int64_t i = 0; i < T; ++i) {
    // The band of row i of g, zero where j falls outside the sequence.
    std::fill(gb, gb + R, S(0));
    const int64_t lo = std::max<int64_t>(0, M - i), hi = std::min<int64_t>(R, T + M - i);
    const S* grow = g + i * T + (i - M);
    for (int64_t rr = lo; rr < hi; ++rr) gb[rr] = grow[rr];
    const S* qi = q + i * d;
    S* dqi = dq + i * d;
    for (int64_t m = 0; m < d; ++m) {
      const S c = qi[m];
      const S* ar = aT + m * R;
      const S* kr = kTp + m * P + i;
      S* dkr = dkTp + m * P + i;
      S* dar = daT + m * R;
      for (int64_t rr = 0; rr < R; ++rr) {
        const S ga = gb[rr] * ar[rr];
        dkr[rr] += ga * c;
        dar[rr] += gb[rr] * c * kr[rr];
      }
      // dq[i][m] = sum_rr g a k, in kLanes independent partial sums so that it vectorises
      // without reassociating one long float sum.
      S acc[kLanes] = {};
      int64_t rr = 0;
      for (; rr + kLanes <= R; rr += kLanes)
        for (int l = 0; l < kLanes; ++l) acc[l] += gb[rr + l] * ar[rr + l] * kr[rr + l];
      S s = 0;
      for (; rr < R; ++rr) s += gb[rr] * ar[rr] * kr[rr];
      for (int l = 0; l < kLanes; ++l) s += acc[l];
      dqi[m] += s;
    }
  }
}

RELPOS_SIMD_CLONES void band_forward_slice(const float* q, const float* kTp, const float* aT,
                                           float* out, int64_t T, int64_t d, int64_t M, float* e) {
  band_forward_body(q, kTp, aT, out, T, d, M, e);
}
RELPOS_SIMD_CLONES void band_forward_slice(const double* q, const double* kTp, const double* aT,
                                           double* out, int64_t T, int64_t d, int64_t M,
                                           double* e) {
  band_forward_body(q, kTp, aT, out, T, d, M, e);
}
RELPOS_SIMD_CLONES void band_backward_slice(const float* q, const float* kTp, const float* aT,
                                            const float* g, float* dq, float* dkTp, float* daT,
                                            int64_t T, int64_t d, int64_t M, float* gb) {
  band_backward_body(q, kTp, aT, g, dq, dkTp, daT, T, d, M, gb);
}
RELPOS_SIMD_CLONES void band_backward_slice(const double* q, const double* kTp, const double* aT,
                                            const double* g, double* dq, double* dkTp,
                                            double* daT, int64_t T, int64_t d, int64_t M,
                                            double* gb) {
  band_backward_body(q, kTp, aT, g, dq, dkTp, daT, T, d, M, gb);
}

bool use_cpu_kernel(const Tensor& q) {
  return q.device().is_cpu() &&
         (q.scalar_type() == torch::kFloat || q.scalar_type() == torch::kDouble);
}

// (B,H,d,T+2M): keys transposed and zero-padded by M on both sides along T.
Tensor padded_keys_t(const Tensor& k, int64_t M) {
  namespace F = torch::nn::functional;
  return F::pad(k.transpose(-1, -2), F::PadFuncOptions({M, M})).contiguous();  // (B,H,d,T+2M)
}

// out (B,H,T,T): band entries |j-i| <= M set to the band of q, k, a (CPU kernel).
void band_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& a, int64_t M, Tensor& out) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3), R = 2 * M + 1;
  auto qc = q.contiguous();                      // (B,H,T,d)
  auto kTp = padded_keys_t(k, M);                // (B,H,d,T+2M)
  auto aT = a.t().contiguous();                  // (d,R)
  TORCH_CHECK(out.is_contiguous(), "band output must be contiguous");
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "band_qka_forward", [&] {
    const scalar_t* qp = qc.data_ptr<scalar_t>();
    const scalar_t* kp = kTp.data_ptr<scalar_t>();
    const scalar_t* ap = aT.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    at::parallel_for(0, B * H, 1, [&](int64_t b0, int64_t b1) {
      std::vector<scalar_t> e(static_cast<size_t>(R));
      for (int64_t s = b0; s < b1; ++s)
        band_forward_slice(qp + s * T * d, kp + s * d * (T + 2 * M), ap, op + s * T * T, T, d, M,
                           e.data());
    });
  });
}

// Gradients of the band term: dq, dk (B,H,T,d), da (R,d), from g (B,H,T,T) (CPU kernel).
void band_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& a, int64_t M,
                       const Tensor& g, Tensor& dq, Tensor& dk, Tensor& da) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3), R = 2 * M + 1;
  auto qc = q.contiguous();                                  // (B,H,T,d)
  auto kTp = padded_keys_t(k, M);                            // (B,H,d,T+2M)
  auto aT = a.t().contiguous();                              // (d,R)
  auto gc = g.contiguous();                                  // (B,H,T,T)
  auto dq_c = torch::zeros_like(qc);                         // (B,H,T,d)
  auto dkTp = torch::zeros_like(kTp);                        // (B,H,d,T+2M)
  auto daT_parts = torch::zeros({B * H, d, R}, q.options()); // (B·H,d,R) one per slice
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "band_qka_backward", [&] {
    const scalar_t* qp = qc.data_ptr<scalar_t>();
    const scalar_t* kp = kTp.data_ptr<scalar_t>();
    const scalar_t* ap = aT.data_ptr<scalar_t>();
    const scalar_t* gp = gc.data_ptr<scalar_t>();
    scalar_t* dqp = dq_c.data_ptr<scalar_t>();
    scalar_t* dkp = dkTp.data_ptr<scalar_t>();
    scalar_t* dap = daT_parts.data_ptr<scalar_t>();
    at::parallel_for(0, B * H, 1, [&](int64_t b0, int64_t b1) {
      std::vector<scalar_t> gb(static_cast<size_t>(R));
      for (int64_t s = b0; s < b1; ++s)
        band_backward_slice(qp + s * T * d, kp + s * d * (T + 2 * M), ap, gp + s * T * T,
                            dqp + s * T * d, dkp + s * d * (T + 2 * M), dap + s * d * R, T, d, M,
                            gb.data());
    });
  });
  dq = dq_c;
  dk = dkTp.narrow(-1, M, T).transpose(-1, -2);  // (B,H,T,d)
  da = daT_parts.sum(0).t();                     // (R,d)
}

// ---- tensor-op band, for devices and dtypes without a kernel -----------------------------------

// band[b,h,i,rr] = sum_m q_im k_{i+rr-M,m} a_{rr,m}, 0 where i+rr-M is outside the sequence.
Tensor band_forward_ops(const Tensor& q, const Tensor& k, const Tensor& a, int64_t M) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2);
  auto band = torch::zeros({B, H, T, 2 * M + 1}, q.options());  // (B,H,T,2M+1)
  for (int64_t r = -M; r <= M; ++r) {
    const int64_t n = T - std::abs(r);
    if (n <= 0) continue;
    const int64_t i0 = std::max<int64_t>(0, -r), j0 = std::max<int64_t>(0, r);
    auto prod = q.narrow(2, i0, n) * k.narrow(2, j0, n);  // (B,H,n,d)
    auto vals = torch::matmul(prod, a[r + M]);            // (B,H,n)
    band.select(3, r + M).narrow(2, i0, n).copy_(vals);
  }
  return band;
}

void band_backward_ops(const Tensor& q, const Tensor& k, const Tensor& a, int64_t M,
                       const Tensor& g, Tensor& dq, Tensor& dk, Tensor& da) {
  const int64_t T = q.size(2);
  dq = torch::zeros_like(q);
  dk = torch::zeros_like(k);
  da = torch::zeros_like(a);
  for (int64_t r = -M; r <= M; ++r) {
    const int64_t n = T - std::abs(r);
    if (n <= 0) continue;
    const int64_t i0 = std::max<int64_t>(0, -r), j0 = std::max<int64_t>(0, r);
    auto qi = q.narrow(2, i0, n), kj = k.narrow(2, j0, n);  // (B,H,n,d)
    // g at (i, i + r): the r-th diagonal of g.
    auto gr = g.diagonal(r, 2, 3).unsqueeze(-1);  // (B,H,n,1)
    auto ga = gr * a[r + M];                      // (B,H,n,d)
    dq.narrow(2, i0, n).add_(ga * kj);
    dk.narrow(2, j0, n).add_(ga * qi);
    da[r + M].copy_((gr * qi * kj).sum({0, 1, 2}));
  }
}

// (B,H,T,2M+1) band -> (B,H,T,T) with out[i, i+rr-M] = band[i, rr] (entries off the sequence are
// 0 in the band and dropped): through a (T, T+2M) buffer whose diagonals are a strided view.
Tensor band_to_dense(const Tensor& band, int64_t M) {
  const int64_t B = band.size(0), H = band.size(1), T = band.size(2), R = 2 * M + 1, P = T + 2 * M;
  auto buf = torch::zeros({B, H, T, P}, band.options());                          // (B,H,T,T+2M)
  buf.as_strided({B, H, T, R}, {H * T * P, T * P, P + 1, 1}).copy_(band);
  return buf.narrow(-1, M, T);                                                    // (B,H,T,T)
}

// ---- the clipped triangles ----------------------------------------------------------------------
// Above the band (j - i >= K) the score is q_i·(a_K ⊙ k_j), below (j - i <= -K) q_i·(a_{-K} ⊙ k_j).

// Whole (T,T) products, masked: out = triu(q (a_K⊙k)ᵀ, K) + tril(q (a_{-K}⊙k)ᵀ, -K), 0 in the band.
Tensor clipped_full(const Tensor& q, const Tensor& k, const Tensor& a_up, const Tensor& a_lo,
                    int64_t K) {
  auto kt = k.transpose(-1, -2);                        // (B,H,d,T)
  auto out = torch::matmul(q, kt * a_up.unsqueeze(-1)).triu_(K);       // (B,H,T,T)
  return out.add_(torch::matmul(q, kt * a_lo.unsqueeze(-1)).tril_(-K));  // (B,H,T,T)
}

void clipped_full_backward(const Tensor& q, const Tensor& k, const Tensor& a_up,
                           const Tensor& a_lo, int64_t K, const Tensor& g, Tensor& dq, Tensor& dk,
                           Tensor& da_up, Tensor& da_lo) {
  for (int side = 0; side < 2; ++side) {
    const Tensor& ar = side == 0 ? a_up : a_lo;                  // (d)
    auto gt = side == 0 ? g.triu(K) : g.tril(-K);                // (B,H,T,T)
    dq = dq + torch::matmul(gt, k * ar);                         // (B,H,T,d)
    auto dka = torch::matmul(gt.transpose(-1, -2), q);           // (B,H,T,d) grad of a ⊙ k
    dk = dk + dka * ar;                                          // (B,H,T,d)
    (side == 0 ? da_up : da_lo) = (dka * k).sum({0, 1, 2});      // (d)
  }
}

// The same in query blocks of P = 2K rows, each multiplied only against the key columns its
// triangles reach: about T² instead of 2T² multiply-adds. A block's rectangle also covers a
// triangle of band entries (|j - i| < K, since P <= 2K); the band kernel overwrites them.
constexpr int64_t kMinClipBlock = 16;

void clipped_blocked(const Tensor& q, const Tensor& k, const Tensor& a_up, const Tensor& a_lo,
                     int64_t K, Tensor& out) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3), P = 2 * K;
  auto q3 = q.reshape({B * H, T, d});                                    // (BH,T,d)
  auto ku = (k * a_up).reshape({B * H, T, d}).transpose(1, 2);          // (BH,d,T)
  auto kl = (k * a_lo).reshape({B * H, T, d}).transpose(1, 2);          // (BH,d,T)
  auto o3 = out.view({B * H, T, T});                                     // (BH,T,T)
  for (int64_t s = 0; s < T; s += P) {
    const int64_t n = std::min(P, T - s), c0 = s + K, c1 = s + n - K;
    auto qb = q3.narrow(1, s, n);  // (BH,n,d)
    if (c0 < T) {
      auto dst = o3.narrow(1, s, n).narrow(2, c0, T - c0);  // (BH,n,T-c0) j >= s + K
      torch::bmm_out(dst, qb, ku.narrow(2, c0, T - c0));
    }
    if (c1 > 0) {
      auto dst = o3.narrow(1, s, n).narrow(2, 0, c1);  // (BH,n,c1) j <= s + n - 1 - K
      torch::bmm_out(dst, qb, kl.narrow(2, 0, c1));
    }
  }
}

void clipped_blocked_backward(const Tensor& q, const Tensor& k, const Tensor& a_up,
                              const Tensor& a_lo, int64_t K, const Tensor& g, Tensor& dq,
                              Tensor& dk, Tensor& da_up, Tensor& da_lo) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3), P = 2 * K;
  auto q3 = q.reshape({B * H, T, d});             // (BH,T,d)
  auto k3 = k.reshape({B * H, T, d});             // (BH,T,d)
  auto ku = k3 * a_up, kl = k3 * a_lo;            // (BH,T,d) each
  auto g3 = g.reshape({B * H, T, T});             // (BH,T,T)
  auto dq3 = torch::zeros({B * H, T, d}, q.options());   // (BH,T,d)
  auto dku = torch::zeros({B * H, T, d}, q.options());   // (BH,T,d) grad of a_K ⊙ k
  auto dkl = torch::zeros({B * H, T, d}, q.options());   // (BH,T,d) grad of a_{-K} ⊙ k
  for (int64_t s = 0; s < T; s += P) {
    const int64_t n = std::min(P, T - s), c0 = s + K, c1 = s + n - K;
    auto qb = q3.narrow(1, s, n);    // (BH,n,d)
    auto dqb = dq3.narrow(1, s, n);  // (BH,n,d)
    if (c0 < T) {
      // Block coordinates: column j' = j - c0, so j - i >= K is j' >= i'.
      auto gu = g3.narrow(1, s, n).narrow(2, c0, T - c0).triu(0);  // (BH,n,T-c0)
      dqb.baddbmm_(gu, ku.narrow(1, c0, T - c0));
      dku.narrow(1, c0, T - c0).baddbmm_(gu.transpose(1, 2), qb);
    }
    if (c1 > 0) {
      // Columns are absolute here: j - i <= -K is j - i' <= s - K.
      auto gl = g3.narrow(1, s, n).narrow(2, 0, c1).tril(s - K);  // (BH,n,c1)
      dqb.baddbmm_(gl, kl.narrow(1, 0, c1));
      dkl.narrow(1, 0, c1).baddbmm_(gl.transpose(1, 2), qb);
    }
  }
  dq = dq + dq3.view({B, H, T, d});
  dk = dk + (dku * a_up + dkl * a_lo).view({B, H, T, d});
  da_up = (dku * k3).sum(torch::IntArrayRef{0, 1});  // (d)
  da_lo = (dkl * k3).sum(torch::IntArrayRef{0, 1});  // (d)
}

// ---- the whole term ----------------------------------------------------------------------------

// q, k (B,H,T,d); a (2K+1,d) -> (B,H,T,T). Clipped triangles through matmuls, band through the
// kernel (CPU float/double: blocked triangles, band assigned) or tensor ops (other devices:
// whole masked products, band added).
struct QKATerm : public torch::autograd::Function<QKATerm> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& q, const Tensor& k,
                        const Tensor& a, int64_t K, bool allow_kernel) {
    ctx->save_for_backward({q, k, a});
    ctx->saved_data["K"] = K;
    ctx->saved_data["kernel"] = allow_kernel;
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2);
    const bool clipped = K < T - 1;
    const int64_t M = clipped ? K - 1 : T - 1;
    auto a_band = a.narrow(0, K - M, 2 * M + 1);  // (2M+1,d)
    const bool kernel = allow_kernel && use_cpu_kernel(q);
    Tensor out;  // (B,H,T,T)
    if (kernel) {
      if (!clipped) {
        out = torch::empty({B, H, T, T}, q.options());  // the band covers every entry
      } else if (2 * K >= kMinClipBlock) {
        out = torch::empty({B, H, T, T}, q.options());
        clipped_blocked(q, k, a[2 * K], a[0], K, out);
      } else {
        out = clipped_full(q, k, a[2 * K], a[0], K);
      }
      band_forward_cpu(q, k, a_band, M, out);
    } else {
      out = clipped ? clipped_full(q, k, a[2 * K], a[0], K)
                    : torch::zeros({B, H, T, T}, q.options());  // (B,H,T,T)
      out.add_(band_to_dense(band_forward_ops(q, k, a_band, M), M));
    }
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor &q = saved[0], &k = saved[1], &a = saved[2];
    const int64_t K = ctx->saved_data["K"].toInt();
    const bool kernel = ctx->saved_data["kernel"].toBool() && use_cpu_kernel(q);
    const int64_t T = q.size(2);
    const bool clipped = K < T - 1;
    const int64_t M = clipped ? K - 1 : T - 1;
    const Tensor g = grads[0];  // (B,H,T,T)
    auto a_band = a.narrow(0, K - M, 2 * M + 1);  // (2M+1,d)
    Tensor dq, dk, da_band;
    if (kernel) {
      band_backward_cpu(q, k, a_band, M, g, dq, dk, da_band);
    } else {
      band_backward_ops(q, k, a_band, M, g, dq, dk, da_band);
    }
    auto da = torch::zeros_like(a);  // (2K+1,d)
    da.narrow(0, K - M, 2 * M + 1).copy_(da_band);
    if (clipped) {
      Tensor da_up, da_lo;
      if (kernel && 2 * K >= kMinClipBlock) {
        clipped_blocked_backward(q, k, a[2 * K], a[0], K, g, dq, dk, da_up, da_lo);
      } else {
        clipped_full_backward(q, k, a[2 * K], a[0], K, g, dq, dk, da_up, da_lo);
      }
      da[2 * K].add_(da_up);
      da[0].add_(da_lo);
    }
    return {dq, dk, da, Tensor(), Tensor()};
  }
};

// QKATerm in one dtype, outside autocast (precision: bf16 casts q and k to bfloat16).
Tensor qka_term(const Tensor& q, const Tensor& k, const Tensor& table, int64_t K, bool kernel) {
  const AutocastOff no_autocast;
  const auto dt = c10::promoteTypes(c10::promoteTypes(q.scalar_type(), k.scalar_type()),
                                    table.scalar_type());
  return QKATerm::apply(q.to(dt), k.to(dt), table.to(dt), K, kernel);  // (B,H,T,T)
}

}  // namespace

Tensor relative_qka_term(const Tensor& q, const Tensor& k, const Tensor& table, int64_t K,
                         bool direct) {
  check_relative_table(q, table, K);
  TORCH_CHECK(table.dim() == 2, "the qka term takes a table shared by heads (R,d), got ",
              table.sizes());
  TORCH_CHECK(q.sizes() == k.sizes(), "q ", q.sizes(), " and k ", k.sizes(), " differ");
  if (direct) {
    auto A = gather_relative_table(table, q.size(2), K);     // (T,T,d)
    return torch::einsum("bhid,bhjd,ijd->bhij", {q, k, A});  // (B,H,T,T)
  }
  return qka_term(q, k, table, K, true);  // (B,H,T,T)
}

namespace detail {
Tensor relative_qka_term_tensor_ops(const Tensor& q, const Tensor& k, const Tensor& table,
                                    int64_t K) {
  check_relative_table(q, table, K);
  return qka_term(q, k, table, K, false);  // (B,H,T,T)
}
}  // namespace detail

}  // namespace relpos
