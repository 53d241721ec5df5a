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
// next row, both gathered at ⌊p⌋, then q·e(p) = q·E[⌊p⌋] + w·step: no [T,T,d] tensor. Direct
// path (reference, tests): interpolate e(p_ij) as (B,H,T,T,d) first, then the dot product with q.
// Parameters per layer: E (n_pos·d), plus E' (n_pos·d) in encoder mode. Init N(0, init_std²).
// Translation invariant: positions come from the gates, not from token indices.
// Beyond the training length: p counts gated tokens, so it grows only as fast as the gates
// fire; past n_pos - 1 every position reads the last row.
#include <cmath>
#include <vector>

#include "core/position/position_encoding.h"

namespace relpos {
namespace {

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

  // Contextual positions p (B,H,T,T) from the content scores, clamped to n_pos - 1.
  torch::Tensor positions(const torch::Tensor& content, bool causal) {
    const int64_t T = content.size(-1);
    // float32 at least: under bfloat16 a count of 40 gates would keep ~0.1 of resolution.
    const auto dt = content.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    auto g = torch::sigmoid(content.to(dt));                                // (B,H,T,T)
    auto lower = torch::ones({T, T}, content.options().dtype(torch::kBool)).tril();  // (T,T) t <= i
    // Σ_{t=j..i} g_it: the suffix sum over t >= j of the gates with t <= i.
    auto before = g.masked_fill(lower.logical_not(), 0.0).flip(-1).cumsum(-1).flip(-1);  // (B,H,T,T)
    torch::Tensor p = before;
    if (!causal) {
      auto upper = torch::ones({T, T}, lower.options()).triu();                     // (T,T) t >= i
      auto after = g.masked_fill(upper.logical_not(), 0.0).cumsum(-1);             // (B,H,T,T)
      p = torch::where(lower, before, after);                                       // (B,H,T,T)
    }
    return p.clamp_max(static_cast<double>(n_ - 1));                               // (B,H,T,T)
  }

  torch::Tensor score_term(const torch::Tensor& content, const torch::Tensor& q,
                           const torch::Tensor&, const AttentionContext& ctx) override {
    const int64_t T = q.size(2);
    const bool causal = ctx.causal;
    TORCH_CHECK(causal || table_after.defined(),
                "cope: built for a causal model (no table for keys after the query) but used "
                "bidirectionally");
    auto p = positions(content, causal);                  // (B,H,T,T)
    auto lo = p.detach().floor();                          // (B,H,T,T)
    auto w = p - lo;                                       // (B,H,T,T) weight of E[⌈p⌉]
    // Keys after the query read the second table: rows n .. 2n-1 of the concatenation.
    torch::Tensor E = table[ctx.layer];                    // (n,d)
    auto lo_i = lo.to(torch::kLong);                       // (B,H,T,T)
    if (!causal) {
      E = torch::cat({E, table_after[ctx.layer]}, 0);      // (2n,d)
      auto shift = (torch::ones({T, T}, p.options().dtype(torch::kLong)).triu(1) * n_);  // (T,T)
      lo_i = lo_i + shift;
    }
    if (direct_) {
      // ⌈p⌉: the same row as ⌊p⌋ when p is a whole number (w = 0 there).
      auto hi_i = lo_i + (w.detach() > 0).to(torch::kLong);  // (B,H,T,T)
      const int64_t d = E.size(1);
      auto e_lo = E.index_select(0, lo_i.reshape({-1})).view({-1, d});  // (BHTT,d)
      auto e_hi = E.index_select(0, hi_i.reshape({-1})).view({-1, d});  // (BHTT,d)
      auto wf = w.reshape({-1, 1});                                      // (BHTT,1)
      auto e = (e_lo * (1.0 - wf) + e_hi * wf).view({q.size(0), q.size(1), T, T, d});  // (B,H,T,T,d)
      return (q.unsqueeze(3) * e).sum(-1).to(content.scalar_type());    // (B,H,T,T)
    }
    // q·E per row, and the step to the next row of the same table (0 after a table's last row,
    // where w = 0): e(p)·q = q·E[⌊p⌋] + w·(q·E[⌊p⌋+1] - q·E[⌊p⌋]), one index for both gathers,
    // fewer (B,H,T,T) tensors kept for the backward pass than two gathers and two products.
    auto logits = torch::matmul(q, E.to(q.dtype()).t());  // (B,H,T,n|2n)
    std::vector<torch::Tensor> steps;
    for (int64_t part = 0; part < logits.size(-1) / n_; ++part) {
      auto l = logits.narrow(-1, part * n_, n_);                                   // (B,H,T,n)
      steps.push_back(l.narrow(-1, 1, n_ - 1) - l.narrow(-1, 0, n_ - 1));          // (B,H,T,n-1)
      steps.push_back(torch::zeros_like(l.narrow(-1, 0, 1)));                      // (B,H,T,1)
    }
    auto step = torch::cat(steps, -1);                      // (B,H,T,n|2n)
    auto at_lo = logits.gather(-1, lo_i);                   // (B,H,T,T)
    auto rise = step.gather(-1, lo_i);                      // (B,H,T,T)
    // In the scores' dtype: w is float32 under bfloat16 autocast.
    return (at_lo + w * rise).to(content.scalar_type());   // (B,H,T,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions&) override {
    auto cpu = [](const torch::Tensor& t) {
      return t.detach().to(torch::kCPU, torch::kFloat32).clone();
    };
    std::vector<ExportedTensor> out;
    out.push_back({"positions", torch::arange(n_, torch::kFloat32), {"position"}});
    out.push_back({"table", cpu(table), {"layer", "position", "channel"}});
    if (table_after.defined())
      out.push_back({"table_after", cpu(table_after), {"layer", "position", "channel"}});
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
