// cope — Golovneva, Wang, Weston & Sukhbaatar 2024, "Contextual Position Encoding: Learning to
// Count What's Important" (CoPE).
// Formula (causal, the paper's): gates g_ij = σ(q_i·k_j/√d), contextual positions
// p_ij = Σ_{t=j..i} g_it (j <= i), clamped to n_pos - 1, and
//   e_ij += q_i·e(p_ij),  e(p) = (1 - w)·E[⌊p⌋] + w·E[⌈p⌉], w = p - ⌊p⌋
// with E a table of n_pos vectors (width d) per layer, shared by the heads. The gates use the
// content score q·k/√d, as the authors' code does (the paper writes σ(q_i·k_j) in notation
// without the √d); the q·e term is not divided by √d (the paper's and the code's).
// Encoder form (our choice; the paper is causal only): keys after the query count the gates
// forwards, p_ij = Σ_{t=i..j} g_it for j > i, and read a second table E' (n_pos × d), so the
// direction stays known: e_ij += q_i·e'(p_ij) for j > i.
// Hook: score term (3). Fast path: q·E for the n_pos rows, (B,H,T,n_pos), and its step to the
// next row, both gathered at ⌊p⌋, then q·e(p) = q·E[⌊p⌋] + w·step: no [T,T,d] tensor. In float32
// and float64 one autograd node (CopeFastTerm) keeps only q/√d and k, which the content product
// keeps anyway, and q·E, and recomputes the content scores, gates, positions and weights in
// backward, where autograd's own graph would keep five (B,H,T,T) tensors per layer. Direct
// path (reference, tests): interpolate e(p_ij) as (B,H,T,T,d) first, then the dot product with q.
// Can include the content (can_include_content): without a snapshot record it forms q·k/√d
// itself and the row kernels add it in their own passes, forward and backward.
// Parameters per layer: E (n_pos·d), plus E' (n_pos·d) in encoder mode. Init N(0, init_std²).
// Translation invariant: positions come from the gates, not from token indices.
// Beyond the training length: p counts gated tokens, so it grows only as fast as the gates
// fire; past n_pos - 1 every position reads the last row.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/position/position_encoding.h"
#include "core/position/relative_ops.h"

namespace relpos {
namespace {

using torch::Tensor;

// The quantities of the fast path that follow from the content scores (B,H,T,T) alone.
struct CopeLayout {
  Tensor g;   // gates σ(content), float32 or float64
  Tensor p;   // contextual positions before the clamp
  Tensor lo;  // ⌊min(p, n-1)⌋ as row indices into q·E (+n for keys after the query), int64
  Tensor w;   // min(p, n-1) - ⌊min(p, n-1)⌋, the weight of the next row
};

// (T,T) mask t <= i: keys up to the query (its transpose: t >= i).
Tensor cope_lower_mask(int64_t T, const torch::Device& device) {
  return torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril();
}

CopeLayout cope_layout(const Tensor& content, int64_t n, bool causal) {
  const int64_t T = content.size(-1);
  // float32 at least: under bfloat16 a count of 40 gates would keep ~0.1 of resolution.
  const auto dt = content.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  CopeLayout l;
  l.g = torch::sigmoid(content.to(dt));                       // (B,H,T,T)
  const Tensor lower = cope_lower_mask(T, content.device());  // (T,T) t <= i
  // Σ_{t=j..i} g_it: the suffix sum over t >= j of the gates with t <= i.
  Tensor before = l.g.masked_fill(lower.logical_not(), 0.0).flip(-1).cumsum(-1).flip(-1);
  l.p = before;  // (B,H,T,T)
  if (!causal) {
    const Tensor upper = lower.transpose(0, 1);                           // (T,T) t >= i
    Tensor after = l.g.masked_fill(upper.logical_not(), 0.0).cumsum(-1);  // (B,H,T,T)
    l.p = torch::where(lower, before, after);                             // (B,H,T,T)
  }
  const Tensor pc = l.p.clamp_max(static_cast<double>(n - 1));              // (B,H,T,T)
  const Tensor lo = pc.floor();                                             // (B,H,T,T)
  l.w = pc - lo;                                                            // (B,H,T,T)
  l.lo = lo.to(torch::kLong);                                               // (B,H,T,T)
  if (!causal) l.lo.add_(torch::ones({T, T}, l.lo.options()).triu(1) * n);  // keys after: table 2
  return l;
}

// Per row of q·E, the step to the next row of the same table; 0 after each table's last row.
Tensor cope_row_steps(const Tensor& logits, int64_t n) {
  std::vector<Tensor> steps;
  for (int64_t part = 0; part < logits.size(-1) / n; ++part) {
    auto l = logits.narrow(-1, part * n, n);                           // (B,H,T,n)
    steps.push_back(l.narrow(-1, 1, n - 1) - l.narrow(-1, 0, n - 1));  // (B,H,T,n-1)
    steps.push_back(torch::zeros_like(l.narrow(-1, 0, 1)));            // (B,H,T,1)
  }
  return torch::cat(steps, -1);  // (B,H,T,n|2n)
}

// CPU row kernels for the fast path: every (batch, head, query) row is independent, and a row's
// positions are running sums of its gates, so one pass over the row's T keys gives its term, and
// one more (with two scans) its gradients; of the (B,H,T,T) intermediates only the gates are
// formed. Running sums in double, as LibTorch's CPU cumsum accumulates, so the kernels and the
// tensor ops agree to rounding.
struct CopeRow {
  int64_t T, n, m;  // keys, rows per table, rows of q·E (n causal, 2n encoder)
  bool causal;
  bool plus_content;  // the output is content + term (attention formed no content scores)
};

// Positions of row i: p[j] for every key, from its gates g = σ(content) (computed by
// torch::sigmoid for the whole tensor: vectorized, and the same values as the tensor ops). Keys
// up to the query count back to it (Σ_{t=j..i} g_t); after it, forwards from it (Σ_{t=i..j}
// g_t); a causal row's keys after the query have p = 0 (the tensor ops' masked sums: the scores
// mask them). A position is a running sum of gates (each >= 0) away from the query, so once it
// reaches n-1 every key further away reads its table's last row too, with weight 0 and no
// gradient to the gates: the sums stop there, and only keys [a, b) get positions; keys before a
// and from b on are at the last row (for a causal row, b = T).
struct CopeSpan {
  int64_t a, b;
};
template <typename scalar_t>
CopeSpan cope_row_positions(const CopeRow& r, int64_t i, const scalar_t* g, scalar_t* p) {
  const scalar_t top = static_cast<scalar_t>(r.n - 1);
  CopeSpan s{0, r.T};
  double acc = 0;
  for (int64_t j = i; j >= 0; --j) {
    p[j] = static_cast<scalar_t>(acc += g[j]);
    if (p[j] >= top) {
      s.a = j + 1;
      break;
    }
  }
  if (r.causal) {
    std::fill(p + i + 1, p + r.T, scalar_t(0));
    return s;
  }
  acc = g[i];
  for (int64_t j = i + 1; j < r.T; ++j) {
    p[j] = static_cast<scalar_t>(acc += g[j]);
    if (p[j] >= top) {
      s.b = j;
      break;
    }
  }
  return s;
}

// Row of q·E at ⌊min(p, n-1)⌋ (in the second table for keys after the query) and the weight w
// of the next row. p >= 0 (a sum of gates), so the conversion to an integer is the floor.
template <typename scalar_t>
struct CopeIndex {
  int64_t row;
  scalar_t w;
};
template <typename scalar_t>
inline CopeIndex<scalar_t> cope_index(const CopeRow& r, int64_t table_offset, scalar_t p) {
  const scalar_t pc = std::min(p, static_cast<scalar_t>(r.n - 1));
  const int64_t lo = static_cast<int64_t>(pc);
  return {lo + table_offset, pc - static_cast<scalar_t>(lo)};
}

// One row's term at every key, written once: with the row's content c added (c may be null).
template <typename scalar_t>
inline void cope_row_terms(const CopeRow& r, int64_t i, CopeSpan s, const scalar_t* L,
                           const scalar_t* p, const scalar_t* c, scalar_t* o) {
  auto put = [&](int64_t j, scalar_t term) { o[j] = c ? term + c[j] : term; };
  const scalar_t first = L[r.n - 1];
  for (int64_t j = 0; j < s.a; ++j) put(j, first);
  for (int64_t j = s.a; j < s.b; ++j) {
    const auto x = cope_index(r, !r.causal && j > i ? r.n : 0, p[j]);
    put(j, x.w > 0 ? L[x.row] + x.w * (L[x.row + 1] - L[x.row]) : L[x.row]);
  }
  if (s.b == r.T) return;
  const scalar_t last = L[2 * r.n - 1];  // encoder rows only
  for (int64_t j = s.b; j < r.T; ++j) put(j, last);
}

// content: (rows,T), read only with r.plus_content (else nullptr).
template <typename scalar_t>
void cope_rows_forward(const CopeRow& r, const scalar_t* gates, const scalar_t* logits,
                       const scalar_t* content, scalar_t* out, int64_t rows) {
  at::parallel_for(0, rows, 16, [&](int64_t r0, int64_t r1) {
    std::vector<scalar_t> p(r.T);
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t i = row % r.T;
      const scalar_t* L = logits + row * r.m;
      const CopeSpan s = cope_row_positions(r, i, gates + row * r.T, p.data());
      scalar_t* o = out + row * r.T;
      cope_row_terms(r, i, s, L, p.data(), r.plus_content ? content + row * r.T : nullptr, o);
    }
  });
}

// grad: dterm (rows,T); writes dcontent (rows,T) and dlogits (rows,m).
template <typename scalar_t>
void cope_rows_backward(const CopeRow& r, const scalar_t* gates, const scalar_t* logits,
                        const scalar_t* grad, scalar_t* dcontent, scalar_t* dlogits, int64_t rows) {
  at::parallel_for(0, rows, 16, [&](int64_t r0, int64_t r1) {
    std::vector<scalar_t> p(r.T), dp(r.T);
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t i = row % r.T;
      const scalar_t* L = logits + row * r.m;
      const scalar_t* G = grad + row * r.T;
      const scalar_t* g = gates + row * r.T;
      scalar_t* dL = dlogits + row * r.m;
      const CopeSpan s = cope_row_positions(r, i, g, p.data());
      std::fill(dL, dL + r.m, scalar_t(0));
      // (1 - w)·L[lo] + w·L[lo+1] -> dL; the step to the next row -> dp, as w = p - ⌊p⌋ has
      // dw/dp = 1 (keys in [a, b) have p < n-1, so lo + 1 is in the same table; the keys at the
      // last row, below, get dp = 0 as clamp_max's rule gives). A causal row's keys after the
      // query depend on no gate.
      auto key = [&](int64_t j, int64_t table_offset, bool live) {
        const auto x = cope_index(r, table_offset, p[j]);
        const scalar_t gj = G[j];
        dL[x.row] += gj * (1 - x.w);
        if (x.w > 0) dL[x.row + 1] += gj * x.w;
        dp[j] = live ? gj * (L[x.row + 1] - L[x.row]) : scalar_t(0);
      };
      // Keys at a table's last row (before a, from b on) add their whole gradient to that row,
      // in key order as the other keys do, and give the gates none (dp = 0).
      scalar_t last = 0;
      for (int64_t j = 0; j < s.a; ++j) last += G[j];
      dL[r.n - 1] = last;
      for (int64_t j = s.a; j <= i; ++j) key(j, 0, true);
      for (int64_t j = i + 1; j < s.b; ++j) key(j, r.causal ? 0 : r.n, !r.causal);
      if (s.b < r.T) {
        last = dL[2 * r.n - 1];
        for (int64_t j = s.b; j < r.T; ++j) last += G[j];
        dL[2 * r.n - 1] = last;
      }
      scalar_t* dc = dcontent + row * r.T;
      // Keys up to the query: p_j = Σ_{t=j..i} g_t, so dg_t = Σ_{j<=t} dp_j for t <= i.
      // With plus_content each key's gradient G also passes to the content, added as the key's
      // gate gradient is written (the gate gradient of key i is complete only after both scans).
      const scalar_t* Gc = r.plus_content ? G : nullptr;
      auto put = [&](int64_t t, double dg) {
        const auto v = static_cast<scalar_t>(dg);
        dc[t] = Gc ? v + Gc[t] : v;
      };
      for (int64_t t = 0; t < s.a; ++t) put(t, 0);
      double acc = 0;
      // Key i's share from the keys up to it (none when it is at the last row itself).
      scalar_t before_i = 0;
      if (s.a <= i) {
        for (int64_t t = s.a; t < i; ++t) {
          acc += dp[t];
          put(t, acc * g[t] * (1 - g[t]));
        }
        acc += dp[i];
        before_i = static_cast<scalar_t>(acc * g[i] * (1 - g[i]));
      }
      // Keys after it: p_j = Σ_{t=i..j} g_t, so dg_t = Σ_{j>=max(t,i+1)} dp_j for t >= i.
      for (int64_t t = s.b; t < r.T; ++t) put(t, 0);
      acc = 0;
      for (int64_t t = s.b - 1; t > i; --t) {
        acc += dp[t];
        put(t, acc * g[t] * (1 - g[t]));
      }
      put(i, before_i + acc * g[i] * (1 - g[i]));
    }
  });
}

// The fast-path term q·e(p) = q·E[⌊p⌋] + w·(q·E[⌊p⌋+1] - q·E[⌊p⌋]) from the content scores and
// q·E (logits), plus the content itself with plus_content (the whole score, in the same pass).
// Keeps q/√d, k and logits; backward recomputes content = (q/√d)·kᵀ (as
// core/model/attention.cpp forms it, so the same positions come out) and everything after it.
struct CopeFastTerm : public torch::autograd::Function<CopeFastTerm> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& content,
                        const Tensor& logits, const Tensor& qs, const Tensor& k, int64_t n,
                        bool causal, bool plus_content) {
    ctx->save_for_backward({logits, qs, k});
    ctx->saved_data["n"] = n;
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["plus_content"] = plus_content;
    if (detail::cpu_kernels_take(content)) {
      const Tensor c = content.contiguous();                        // (B,H,T,T)
      const Tensor g = torch::sigmoid(c), L = logits.contiguous();  // (B,H,T,T)
      auto out = torch::empty_like(g);                              // (B,H,T,T)
      const CopeRow r{g.size(-1), n, L.size(-1), causal, plus_content};
      AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "cope_forward", [&] {
        cope_rows_forward<scalar_t>(r, g.data_ptr<scalar_t>(), L.data_ptr<scalar_t>(),
                                    plus_content ? c.data_ptr<scalar_t>() : nullptr,
                                    out.data_ptr<scalar_t>(), g.numel() / r.T);
      });
      return out;
    }
    const CopeLayout l = cope_layout(content, n, causal);
    auto at_lo = logits.gather(-1, l.lo);                              // (B,H,T,T)
    auto rise = cope_row_steps(logits, n).gather(-1, l.lo);            // (B,H,T,T)
    auto term = at_lo.add_(rise.mul_(l.w)).to(content.scalar_type());  // (B,H,T,T)
    return plus_content ? term + content : term;                       // (B,H,T,T)
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor &logits = saved[0], &qs = saved[1], &k = saved[2];
    const int64_t n = ctx->saved_data["n"].toInt();
    const bool causal = ctx->saved_data["causal"].toBool();
    const bool plus_content = ctx->saved_data["plus_content"].toBool();
    const Tensor content = torch::matmul(qs, k.transpose(-1, -2));  // (B,H,T,T)
    if (detail::cpu_kernels_take(content)) {
      const Tensor g = content.contiguous().sigmoid_(), L = logits.contiguous();  // gates
      const Tensor G = grads[0].to(g.scalar_type()).contiguous();                 // (B,H,T,T)
      auto dc = torch::empty_like(g);                                             // (B,H,T,T)
      auto dL = torch::empty_like(L);                                             // (B,H,T,n|2n)
      const CopeRow r{g.size(-1), n, L.size(-1), causal, plus_content};
      AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "cope_backward", [&] {
        cope_rows_backward<scalar_t>(r, g.data_ptr<scalar_t>(), L.data_ptr<scalar_t>(),
                                     G.data_ptr<scalar_t>(), dc.data_ptr<scalar_t>(),
                                     dL.data_ptr<scalar_t>(), g.numel() / r.T);
      });
      return {dc, dL, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
    }
    const CopeLayout l = cope_layout(content, n, causal);
    const Tensor G = grads[0].to(l.w.scalar_type());  // (B,H,T,T)
    Tensor grad_logits, grad_content;
    if (ctx->needs_input_grad(1)) {
      // at_lo + w·(L[lo+1] - L[lo]) = (1 - w)·L[lo] + w·L[lo+1]; w > 0 only below a table's
      // last row, so lo + 1 stays in the same table wherever it carries weight.
      auto gw = G * l.w;                                       // (B,H,T,T)
      auto hi = l.lo + (l.w > 0).to(torch::kLong);             // (B,H,T,T)
      grad_logits = torch::zeros_like(logits, l.w.options());  // (B,H,T,n|2n)
      grad_logits.scatter_add_(-1, l.lo, G - gw).scatter_add_(-1, hi, gw);
      grad_logits = grad_logits.to(logits.scalar_type());
    }
    if (ctx->needs_input_grad(0)) {
      // d/dp: the step read at ⌊p⌋, where p is not clamped (clamp_max passes p <= n-1).
      auto dp =
          cope_row_steps(logits.to(l.w.scalar_type()), n).gather(-1, l.lo).mul_(G);  // (B,H,T,T)
      dp.masked_fill_(l.p > static_cast<double>(n - 1), 0.0);
      const int64_t T = content.size(-1);
      const Tensor lower = cope_lower_mask(T, content.device());  // (T,T) t <= i, also j <= i
      // before[i,j] = Σ_{t>=j} g_it [t<=i] -> d g_it = Σ_{j<=t} dbefore_ij, for t <= i.
      auto dg = dp.masked_fill(lower.logical_not(), 0.0)
                    .cumsum(-1)
                    .masked_fill_(lower.logical_not(), 0.0);  // (B,H,T,T)
      if (!causal) {
        // after[i,j] = Σ_{t<=j} g_it [t>=i], used for j > i -> d g_it = Σ_{j>=t, j>i} dafter_ij.
        const Tensor upper = lower.transpose(0, 1);                         // (T,T) t >= i
        auto da = dp.masked_fill(lower, 0.0).flip(-1).cumsum(-1).flip(-1);  // (B,H,T,T)
        dg.add_(da.masked_fill_(upper.logical_not(), 0.0));
      }
      grad_content = dg.mul_(l.g).mul_(1.0 - l.g).to(content.scalar_type());  // σ' = g(1 - g)
      if (plus_content) grad_content.add_(grads[0]);
    }
    return {grad_content, grad_logits, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

struct CopeParams : ParamsOf<CopeParams> {
  int64_t n_pos = 64;
  template <class V>
  void visit(V& v) {
    v("n_pos", n_pos, "position embeddings per table: contextual positions 0 .. n_pos-1");
  }
};

class CopeImpl : public PositionEncodingImpl {
 public:
  CopeImpl(const ModelDims& dims, const CopeParams& p, bool direct)
      : n_(p.n_pos), direct_(direct) {
    const int64_t L = dims.param_layers, d = dims.head_dim;
    table = register_parameter("table", torch::randn({L, n_, d}) * dims.init_std);  // (L,n,d)
    if (!dims.causal)
      table_after = register_parameter("table_after",
                                       torch::randn({L, n_, d}) * dims.init_std);  // (L,n,d)
  }
  std::string type() const override { return "cope"; }
  // The gates read the content scores; formed here, they go into the term's own pass.
  bool can_include_content() const override { return true; }

  torch::Tensor score_term(const torch::Tensor& content_in, const torch::Tensor& q,
                           const torch::Tensor& k, const AttentionContext& ctx) override {
    const int64_t T = q.size(2);
    const bool causal = ctx.causal;
    TORCH_CHECK(causal || table_after.defined(),
                "cope: built for a causal model (no table for keys after the query) but used "
                "bidirectionally");
    // Keys after the query read the second table: rows n .. 2n-1 of the concatenation.
    torch::Tensor E = table[ctx.layer];                           // (n,d)
    if (!causal) E = torch::cat({E, table_after[ctx.layer]}, 0);  // (2n,d)
    const auto dt = content_in.scalar_type();
    // With ctx.include_content attention formed no content (content_in is a stand-in): the
    // gates need it, and the term returned is content + term.
    const torch::Tensor qs = scaled_query(q, ctx);  // (B,H,T,d)
    const torch::Tensor content = ctx.include_content
                                      ? torch::matmul(qs, k.transpose(-1, -2)).to(dt)
                                      : content_in;  // (B,H,T,T)
    if (!direct_ && (dt == torch::kFloat || dt == torch::kDouble) && q.scalar_type() == dt) {
      auto logits = torch::matmul(q, E.to(q.dtype()).t());  // (B,H,T,n|2n)
      return CopeFastTerm::apply(content, logits, qs, k, n_, causal, ctx.include_content);
    }
    auto with_content = [&](const torch::Tensor& term) {
      return ctx.include_content ? term + content : term;  // (B,H,T,T)
    };
    // The same term through autograd's own graph (bfloat16 autocast) or the direct path.
    const CopeLayout l = cope_layout(content, n_, causal);
    if (direct_) {
      // ⌈p⌉: the same row as ⌊p⌋ when p is a whole number (w = 0 there).
      auto hi_i = l.lo + (l.w.detach() > 0).to(torch::kLong);  // (B,H,T,T)
      const int64_t d = E.size(1);
      auto e_lo = E.index_select(0, l.lo.reshape({-1})).view({-1, d});  // (BHTT,d)
      auto e_hi = E.index_select(0, hi_i.reshape({-1})).view({-1, d});  // (BHTT,d)
      auto wf = l.w.reshape({-1, 1});                                   // (BHTT,1)
      auto e = (e_lo * (1.0 - wf) + e_hi * wf).view({q.size(0), q.size(1), T, T, d});  // (B,H,T,T,d)
      return with_content((q.unsqueeze(3) * e).sum(-1).to(dt));                        // (B,H,T,T)
    }
    auto logits = torch::matmul(q, E.to(q.dtype()).t());  // (B,H,T,n|2n)
    auto at_lo = logits.gather(-1, l.lo);                 // (B,H,T,T)
    auto rise = cope_row_steps(logits, n_).gather(-1, l.lo);  // (B,H,T,T)
    // In the scores' dtype: w is float32 under bfloat16 autocast.
    return with_content((at_lo + l.w * rise).to(dt));  // (B,H,T,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions&) override {
    std::vector<ExportedTensor> out;
    out.push_back({"positions", torch::arange(n_, torch::kFloat32), {"position"}});
    out.push_back({"table", exported_copy(table), {"layer", "position", "channel"}});
    if (table_after.defined())
      out.push_back({"table_after", exported_copy(table_after), {"layer", "position", "channel"}});
    return out;
  }

  torch::Tensor table, table_after;  // (L,n,d) each

 private:
  int64_t n_;
  bool direct_;
};

}  // namespace

void register_cope(Registry& r) {
  VariantInfo v;
  v.name = "cope";
  v.parameters = ParamScope::PerLayer;
  v.direct_path = true;
  v.exports = {"positions", "table", "table_after"};
  v.summary = "contextual positions: gated counts, interpolated q·e(p) (Golovneva et al. 2024)";
  v.make_params = [] { return std::make_shared<CopeParams>(); };
  v.validate = [](const VariantParams& vp, const Config&, const ParamCheck& c) {
    const auto& p = static_cast<const CopeParams&>(vp);
    if (p.n_pos < 2) c.fail("n_pos", "out of range", std::to_string(p.n_pos), ">= 2");
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig& cfg) {
    return std::make_shared<CopeImpl>(d, static_cast<const CopeParams&>(p),
                                      cfg.relative_impl == "direct");
  };
  r.add(std::move(v));
}

}  // namespace relpos
