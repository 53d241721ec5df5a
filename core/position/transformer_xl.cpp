// transformer_xl — Dai et al. 2019, "Transformer-XL" relative attention (without the segment
// recurrence).
// Formula: e_ij = [ (q_i + u)·k_j + (q_i + v)·(R_{i-j} W_R) ] / √d, R_s the sinusoidal
// encoding (width D) of the signed distance s = i - j, unclipped; u, v ∈ R^{H×d}.
// Hook: score term (3): u·k_j/√d + (q_i + v)·(R_{i-j} W_R)/√d; u·k_j/√d is its content part
// (content_part), left out of the position-only scores of snapshots.
// Parameters per layer: W_R (H·d × D), u and v (H × d).
// Beyond the training length: R is defined for every distance, so any length runs; W_R has
// only seen the distances of training.
#include <cmath>

#include "core/position/position_encoding.h"
#include "core/position/relative_ops.h"

namespace relpos {

torch::Tensor sinusoidal_table(int64_t T, int64_t E, int64_t offset, double base,
                               const torch::TensorOptions& opts);

namespace {

struct TransformerXLParams : ParamsOf<TransformerXLParams> {
  double base = 10000.0;
  template <class V>
  void visit(V& v) {
    v("base", base, "wavelength base of R");
  }
};

class TransformerXLImpl : public PositionEncodingImpl {
 public:
  TransformerXLImpl(const ModelDims& dims, const TransformerXLParams& p, bool direct)
      : D_(dims.width), H_(dims.heads), d_(dims.head_dim), base_(p.base), direct_(direct),
        scale_(1.0 / std::sqrt(static_cast<double>(dims.head_dim))) {
    const int64_t L = dims.param_layers;
    w_r = register_parameter("w_r", torch::randn({L, H_ * d_, D_}) * dims.init_std);  // (L,Hd,D)
    u = register_parameter("u", torch::randn({L, H_, d_}) * dims.init_std);            // (L,H,d)
    v = register_parameter("v", torch::randn({L, H_, d_}) * dims.init_std);            // (L,H,d)
  }
  std::string type() const override { return "transformer_xl"; }
  // Terms of q and k only (content is read for nothing).
  FusedScores fused_scores() const override { return FusedScores::content_bias; }
  // The content q·k/√d goes into the same pass that writes the relative term (score_term).
  bool can_include_content() const override { return true; }

  // Projected relative vectors, one per distance r = j - i in [-(T-1), T-1]: (H,2T-1,d).
  torch::Tensor relative_vectors(int64_t layer, int64_t T, const torch::TensorOptions& opts) {
    // Rows of sinusoidal_table are s = -(T-1)..T-1; row r + T - 1 must hold s = i - j = -r.
    auto R = sinusoidal_table(2 * T - 1, D_, -(T - 1), base_, opts).flip({0});  // (2T-1,D)
    auto proj = torch::matmul(R, w_r[layer].t());                                // (2T-1,Hd)
    return proj.view({2 * T - 1, H_, d_}).permute({1, 0, 2});                    // (H,2T-1,d)
  }

  torch::Tensor score_term(const torch::Tensor&, const torch::Tensor& q, const torch::Tensor& k,
                           const AttentionContext& ctx) override {
    const int64_t T = q.size(2);
    auto rel = relative_vectors(ctx.layer, T, q.options());  // (H,2T-1,d)
    // q/√d is the content matmul's own tensor; 1/√d goes on (B,H,T,d) and smaller inputs, not
    // on (B,H,T,T). With ctx.include_content attention formed no content: it is formed here and
    // added in the same pass as the other terms.
    const torch::Tensor qs = scaled_query(q, ctx);  // (B,H,T,d)
    const torch::Tensor base = ctx.include_content ? torch::matmul(qs, k.transpose(-1, -2))
                                                   : torch::Tensor();  // (B,H,T,T)
    const torch::Tensor vs = v[ctx.layer] * scale_;                    // (H,d)
    if (direct_) {
      // The reference: (q_i + v)·r_{j-i} over the gathered [T,T,d] table, as the formula reads.
      auto term = relative_query_term(qs + vs.unsqueeze(1), rel, T - 1, true)  // (B,H,T,T)
                      .add_(content_part(q, k, ctx));
      return base.defined() ? term.add_(base) : term;
    }
    // One pass writes every score: the products of q/√d + v/√d with r in query blocks, u·k/√d
    // and the content (unclipped_query_term, core/position/relative_ops.h).
    return unclipped_query_term(qs, rel, vs, content_part(q, k, ctx), base);  // (B,H,T,T)
  }

  // u·k_j/√d: a bias toward some keys whatever their position, so it is no part of the
  // position-only scores the snapshots record.
  torch::Tensor content_part(const torch::Tensor&, const torch::Tensor& k,
                             const AttentionContext& ctx) override {
    return torch::matmul(k, u[ctx.layer].unsqueeze(-1)).squeeze(-1).unsqueeze(2) *
           scale_;  // (B,H,1,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions&) override {
    return {{"w_r", exported_copy(w_r), {"layer", "output", "input"}},
            {"u", exported_copy(u), {"layer", "head", "channel"}},
            {"v", exported_copy(v), {"layer", "head", "channel"}}};
  }

  torch::Tensor w_r, u, v;

 private:
  int64_t D_, H_, d_;
  double base_;
  bool direct_;
  double scale_;
};

}  // namespace

void register_transformer_xl(Registry& r) {
  VariantInfo v;
  v.name = "transformer_xl";
  v.summary = "(q+u)·k + (q+v)·(R_{i-j} W_R), sinusoidal R (Dai et al. 2019)";
  v.parameters = ParamScope::PerLayer;
  v.direct_path = true;
  v.exports = {"w_r", "u", "v"};
  v.make_params = [] { return std::make_shared<TransformerXLParams>(); };
  v.validate = [](const VariantParams& vp, const Config&, const ParamCheck& c) {
    const auto& p = static_cast<const TransformerXLParams&>(vp);
    if (!(p.base > 1.0)) c.fail("base", "out of range", std::to_string(p.base), "> 1");
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig& cfg) {
    return std::make_shared<TransformerXLImpl>(d, static_cast<const TransformerXLParams&>(p),
                                               cfg.relative_impl == "direct");
  };
  r.add(std::move(v));
}

}  // namespace relpos
