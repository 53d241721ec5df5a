// The three-way relative term sum_m q_im k_jm a_{c(j-i),m} (huang_m3's qka), fast path.
//
// Distances |r| <= M (M = K-1 when clipped, else T-1) form a band of (2M+1) values per query;
// beyond the clip every pair uses an end vector, so the two clipped triangles are ordinary
// matmuls: q·(a_{+K} ⊙ k)ᵀ above, q·(a_{-K} ⊙ k)ᵀ below. The band needs a three-way product
// per (i, r): B·H·T·(2M+1)·d multiply-adds, a fraction of one attention matmul, but memory-bound
// when written with tensor ops (one pass over q and k per distance). On the CPU kernels compute
// it with the keys transposed so that the innermost loops run over distances (contiguous,
// vectorised), in register tiles of queries by distances, and write it straight into the (T,T)
// output; backward is two passes of one kernel (the gradients of q and the table, then of k from
// the band of gᵀ). Other devices and dtypes use tensor ops: one (B,H,T,d) product per distance,
// then a skew to (T,T).
// Nothing per distance is saved for backward: the band is recomputed from q, k and a.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/nn/functional/padding.h>

#include <algorithm>
#include <cstring>

#include "core/position/relative_ops.h"
#include "core/util/precision.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && __GNUC__ >= 12
// One copy of each kernel per instruction-set level, picked at load time by the CPU's features
// (GCC function multiversioning). Levels, not CPU names: GCC picks an "arch=NAME" clone only on
// a CPU it identifies as that model, so an AMD EPYC with AVX-512 ran the SSE2 default of
// "arch=skylake-avx512" and "arch=haswell" clones.
#define RELPOS_SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RELPOS_SIMD_CLONES
#endif

namespace relpos {

using torch::Tensor;

namespace {

// ---- CPU kernels, one (batch, head) slice at a time -------------------------------------------
// Layout: x (Tp,d) row-major with the rows past T zero; yTp (d,P) the other factor transposed and
// shifted, yTp[m][i + rr] = y[i + rr - M][m] (zero outside the sequence), P >= Tp + Rp; aT (d,Rs)
// the table transposed, columns past R = 2M+1 zero. Tp and Rp round T and R up to whole tiles;
// the row strides P and Rs are padded further (BandLayout).
// A tile of kRows queries by kDist distances keeps its sums in registers while it runs over the
// d channels, so each table entry is loaded once per tile instead of once per query; the fixed
// trip counts let the compiler vectorise over the distances.
constexpr int64_t kRows = 4, kDist = 16;

int64_t round_up(int64_t n, int64_t step) { return (n + step - 1) / step * step; }

// 32-byte vectors of S (GCC vector extensions: one AVX register, two SSE registers in the
// default clone), loaded and stored unaligned. Always inlined into the kernels, so no vector
// crosses a call (GCC's -Wpsabi note about returning one without AVX does not apply; ignored up
// to the end of the kernels).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <class S>
struct Simd {
  typedef S V __attribute__((vector_size(32)));
  static constexpr int kLanes = 32 / sizeof(S);
  static inline __attribute__((always_inline)) V load(const S* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
  static inline __attribute__((always_inline)) void store(S* p, const V& v) {
    std::memcpy(p, &v, sizeof(V));
  }
};

// out[i][i+rr-M] = Σ_m x[i][m] a[rr][m] y[i+rr-M][m] for every i < T and rr < R whose key is in
// the sequence (out (T,T) row-major; assigned, so whatever the clipped blocks wrote into the band
// is replaced).
template <class S>
inline __attribute__((always_inline)) void band_forward_body(const S* x, const S* yTp, const S* aT,
                                                             S* out, int64_t T, int64_t d,
                                                             int64_t M, int64_t Rs, int64_t P) {
  using V = typename Simd<S>::V;
  constexpr int W = Simd<S>::kLanes, NV = kDist / W;
  const int64_t R = 2 * M + 1;
  for (int64_t i0 = 0; i0 < T; i0 += kRows) {
    for (int64_t r0 = 0; r0 < R; r0 += kDist) {
      V acc[kRows][NV] = {};
      for (int64_t m = 0; m < d; ++m) {
        const S* ar = aT + m * Rs + r0;
        const S* yr = yTp + m * P + i0 + r0;
        V av[NV];
        for (int v = 0; v < NV; ++v) av[v] = Simd<S>::load(ar + v * W);
        for (int t = 0; t < kRows; ++t) {
          const S c = x[(i0 + t) * d + m];
          for (int v = 0; v < NV; ++v) acc[t][v] += (c * av[v]) * Simd<S>::load(yr + t + v * W);
        }
      }
      for (int64_t t = 0; t < kRows && i0 + t < T; ++t) {
        S sums[kDist];
        for (int v = 0; v < NV; ++v) Simd<S>::store(sums + v * W, acc[t][v]);
        const int64_t i = i0 + t;
        const int64_t lo = std::max<int64_t>(r0, M - i);
        const int64_t hi = std::min<int64_t>(std::min<int64_t>(r0 + kDist, R), T + M - i);
        S* row = out + i * T + (i - M);
        for (int64_t rr = lo; rr < hi; ++rr) row[rr] = sums[rr - r0];
      }
    }
  }
}

// dx[i][m] += Σ_rr gb[i][rr] a[rr][m] y[i+rr-M][m] for i < Tp, and with kWithTable also
// daT[m][rr] += Σ_i gb[i][rr] x[i][m] y[i+rr-M][m]. gb (Tp,Rs): a band of the gradient, zero
// where the key is outside the sequence or rr >= R. Gradient of q (y = k, gb the band of g)
// with the table's, and of k (y = q, the band of gᵀ, the table reversed) without.
template <bool kWithTable, class S>
inline __attribute__((always_inline)) void band_contract_body(const S* x, const S* yTp, const S* aT,
                                                              const S* gb, S* dx, S* daT,
                                                              int64_t Tp, int64_t d, int64_t Rp,
                                                              int64_t Rs, int64_t P) {
  using V = typename Simd<S>::V;
  constexpr int W = Simd<S>::kLanes, NV = kDist / W;
  for (int64_t i0 = 0; i0 < Tp; i0 += kRows) {
    const S* gt = gb + i0 * Rs;
    for (int64_t m = 0; m < d; ++m) {
      const S* ar = aT + m * Rs;
      const S* yr = yTp + m * P + i0;
      S c[kRows] = {};
      if (kWithTable)
        for (int t = 0; t < kRows; ++t) c[t] = x[(i0 + t) * d + m];
      V acc[kRows][NV] = {};
      for (int64_t r0 = 0; r0 < Rp; r0 += kDist) {
        for (int v = 0; v < NV; ++v) {
          const V av = Simd<S>::load(ar + r0 + v * W);
          V da = {};
          for (int t = 0; t < kRows; ++t) {
            const V gy =
                Simd<S>::load(gt + t * Rs + r0 + v * W) * Simd<S>::load(yr + t + r0 + v * W);
            acc[t][v] += gy * av;
            if (kWithTable) da += gy * c[t];
          }
          if (kWithTable) {
            S* dar = daT + m * Rs + r0 + v * W;
            Simd<S>::store(dar, Simd<S>::load(dar) + da);
          }
        }
      }
      for (int t = 0; t < kRows; ++t) {
        V sum = acc[t][0];
        for (int v = 1; v < NV; ++v) sum += acc[t][v];
        S lanes[W];
        Simd<S>::store(lanes, sum);
        S s = 0;
        for (int l = 0; l < W; ++l) s += lanes[l];
        dx[(i0 + t) * d + m] += s;
      }
    }
  }
}

RELPOS_SIMD_CLONES void band_forward_slice(const float* x, const float* yTp, const float* aT,
                                           float* out, int64_t T, int64_t d, int64_t M, int64_t Rs,
                                           int64_t P) {
  band_forward_body(x, yTp, aT, out, T, d, M, Rs, P);
}
RELPOS_SIMD_CLONES void band_forward_slice(const double* x, const double* yTp, const double* aT,
                                           double* out, int64_t T, int64_t d, int64_t M, int64_t Rs,
                                           int64_t P) {
  band_forward_body(x, yTp, aT, out, T, d, M, Rs, P);
}
// The table's gradient when daT is given (kWithTable), else dx alone.
template <class S>
inline __attribute__((always_inline)) void band_contract_either(const S* x, const S* yTp,
                                                                const S* aT, const S* gb, S* dx,
                                                                S* daT, int64_t Tp, int64_t d,
                                                                int64_t Rp, int64_t Rs, int64_t P) {
  if (daT) {
    band_contract_body<true>(x, yTp, aT, gb, dx, daT, Tp, d, Rp, Rs, P);
  } else {
    band_contract_body<false>(x, yTp, aT, gb, dx, daT, Tp, d, Rp, Rs, P);
  }
}

RELPOS_SIMD_CLONES void band_contract_slice(const float* x, const float* yTp, const float* aT,
                                            const float* gb, float* dx, float* daT, int64_t Tp,
                                            int64_t d, int64_t Rp, int64_t Rs, int64_t P) {
  band_contract_either(x, yTp, aT, gb, dx, daT, Tp, d, Rp, Rs, P);
}
RELPOS_SIMD_CLONES void band_contract_slice(const double* x, const double* yTp, const double* aT,
                                            const double* gb, double* dx, double* daT, int64_t Tp,
                                            int64_t d, int64_t Rp, int64_t Rs, int64_t P) {
  band_contract_either(x, yTp, aT, gb, dx, daT, Tp, d, Rp, Rs, P);
}

#pragma GCC diagnostic pop

bool use_cpu_kernel(const Tensor& q) {
  return q.device().is_cpu() &&
         (q.scalar_type() == torch::kFloat || q.scalar_type() == torch::kDouble);
}

// The sizes of the kernels' padded layouts for T queries and band radius M. Row strides are an
// odd number of 16-element groups: with an even number of 64-byte lines (P = 640 floats at
// T = 512) the d rows a tile reads share a fraction of the cache sets and evict one another.
int64_t odd_groups(int64_t n) {
  const int64_t g = round_up(n, 16) / 16;
  return (g % 2 ? g : g + 1) * 16;
}
struct BandLayout {
  int64_t T, M, R, Tp, Rp, Rs, P;
  BandLayout(int64_t T_, int64_t M_)
      : T(T_),
        M(M_),
        R(2 * M_ + 1),
        Tp(round_up(T_, kRows)),
        Rp(round_up(2 * M_ + 1, kDist)),
        Rs(odd_groups(Rp)),
        P(odd_groups(Tp + Rp)) {}
  // (B,H,Tp,d): y with zero rows past T.
  Tensor rows(const Tensor& y) const {
    namespace F = torch::nn::functional;
    return F::pad(y, F::PadFuncOptions({0, 0, 0, Tp - T})).contiguous();
  }
  // (B,H,d,P): y transposed and shifted, yTp[m][c] = y[c - M][m], zero outside the sequence.
  Tensor shifted_t(const Tensor& y) const {
    namespace F = torch::nn::functional;
    return F::pad(y.transpose(-1, -2), F::PadFuncOptions({M, P - T - M})).contiguous();
  }
  // (d,Rs): the band's table (R,d) transposed, zero columns past R; reversed along the distances.
  Tensor table_t(const Tensor& a, bool reversed) const {
    namespace F = torch::nn::functional;
    auto t = reversed ? a.flip(0).t() : a.t();                      // (d,R)
    return F::pad(t, F::PadFuncOptions({0, Rs - R})).contiguous();  // (d,Rs)
  }
};

// out (B,H,T,T): band entries |j-i| <= M set to the band of q, k, a (CPU kernel).
void band_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& a, int64_t M, Tensor& out) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3);
  const BandLayout L(T, M);
  auto xq = L.rows(q);            // (B,H,Tp,d)
  auto kTp = L.shifted_t(k);      // (B,H,d,P)
  auto aT = L.table_t(a, false);  // (d,Rs)
  TORCH_CHECK(out.is_contiguous(), "band output must be contiguous");
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "band_qka_forward", [&] {
    const scalar_t* qp = xq.data_ptr<scalar_t>();
    const scalar_t* kp = kTp.data_ptr<scalar_t>();
    const scalar_t* ap = aT.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    at::parallel_for(0, B * H, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t s = b0; s < b1; ++s)
        band_forward_slice(qp + s * L.Tp * d, kp + s * d * L.P, ap, op + s * T * T, T, d, M, L.Rs,
                           L.P);
    });
  });
}

// Gradients of the band term: dq, dk (B,H,T,d), da (R,d), from g (B,H,T,T) (CPU kernel).
void band_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& a, int64_t M,
                       const Tensor& g, Tensor& dq, Tensor& dk, Tensor& da) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3);
  const BandLayout L(T, M);
  const int64_t R = L.R, Tp = L.Tp, Rp = L.Rp, Rs = L.Rs;
  auto xq = L.rows(q);                                         // (B,H,Tp,d)
  auto kTp = L.shifted_t(k), qTp = L.shifted_t(q);             // (B,H,d,P) each
  auto aT = L.table_t(a, false), aTr = L.table_t(a, true);     // (d,Rs) each
  auto gc = g.contiguous();                                    // (B,H,T,T)
  auto dq_p = torch::zeros({B, H, Tp, d}, q.options());        // (B,H,Tp,d)
  auto dk_p = torch::zeros({B, H, Tp, d}, q.options());        // (B,H,Tp,d)
  auto daT_parts = torch::zeros({B * H, d, Rs}, q.options());  // (B·H,d,Rs) one per slice
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "band_qka_backward", [&] {
    const scalar_t* qp = xq.data_ptr<scalar_t>();
    const scalar_t* kp = kTp.data_ptr<scalar_t>();
    const scalar_t* qtp = qTp.data_ptr<scalar_t>();
    const scalar_t* ap = aT.data_ptr<scalar_t>();
    const scalar_t* arp = aTr.data_ptr<scalar_t>();
    const scalar_t* gp = gc.data_ptr<scalar_t>();
    scalar_t* dqp = dq_p.data_ptr<scalar_t>();
    scalar_t* dkp = dk_p.data_ptr<scalar_t>();
    scalar_t* dap = daT_parts.data_ptr<scalar_t>();
    at::parallel_for(0, B * H, 1, [&](int64_t b0, int64_t b1) {
      std::vector<scalar_t> band(static_cast<size_t>(Tp * Rs));  // (Tp,Rs)
      for (int64_t s = b0; s < b1; ++s) {
        const scalar_t* gs = gp + s * T * T;
        // The band of g: band[i][rr] = g[i][i+rr-M].
        std::fill(band.begin(), band.end(), scalar_t(0));
        for (int64_t i = 0; i < T; ++i) {
          const int64_t lo = std::max<int64_t>(0, M - i), hi = std::min<int64_t>(R, T + M - i);
          std::copy(gs + i * T + (i + lo - M), gs + i * T + (i + hi - M),
                    band.data() + i * Rs + lo);
        }
        band_contract_slice(qp + s * Tp * d, kp + s * d * L.P, ap, band.data(), dqp + s * Tp * d,
                            dap + s * d * Rs, Tp, d, Rp, Rs, L.P);
        // The band of gᵀ: band[j][rr] = g[j+rr-M][j], the distance reversed.
        std::fill(band.begin(), band.end(), scalar_t(0));
        for (int64_t i = 0; i < T; ++i) {
          const int64_t lo = std::max<int64_t>(0, M - i), hi = std::min<int64_t>(R, T + M - i);
          const scalar_t* grow = gs + i * T + (i - M);
          for (int64_t rr = lo; rr < hi; ++rr)  // j = i + rr - M, reversed distance 2M - rr
            band[(i + rr - M) * Rs + (2 * M - rr)] = grow[rr];
        }
        band_contract_slice(static_cast<const scalar_t*>(nullptr), qtp + s * d * L.P, arp,
                            band.data(), dkp + s * Tp * d, static_cast<scalar_t*>(nullptr), Tp, d,
                            Rp, Rs, L.P);
      }
    });
  });
  dq = dq_p.narrow(2, 0, T);
  dk = dk_p.narrow(2, 0, T);
  da = daT_parts.sum(0).narrow(1, 0, R).t();  // (R,d)
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
