// tisa — Wennberg & Henter 2021, "The Case for Translation-Invariant Self-Attention in
// Transformer-Based Language Models".
// Formula: e_ij += f_h(r), r = j - i, f_h(r) = Σ_{s=1..S} a_hs · exp(-|b_hs| · (r - c_hs)²).
// Init: c ~ N(0, 5²), a, b ~ N(0.1, 0.01²). S = kernels (default 5). The paper gives no
// initialisation: these values are the authors' released code's (github.com/ulmewennberg/tisa,
// model/tisa.py, Tisa._init_weights: offsets std 5, amplitudes and sharpness mean 0.1, std 0.01).
// Hook: score term (3), a bias independent of content (not divided by √d).
// Parameters per layer: a, b, c, each H×S (3·S·H).
// Beyond the training length: f is defined at every distance; the Gaussians decay away from c.
#include "core/position/position_encoding.h"
#include "core/position/relative_ops.h"

namespace relpos {
namespace {

struct TisaParams : ParamsOf<TisaParams> {
  int64_t kernels = 5;
  template <class V>
  void visit(V& v) {
    v("kernels", kernels, "Gaussian kernels S per head");
  }
};

class TisaImpl : public PositionEncodingImpl {
 public:
  TisaImpl(const ModelDims& dims, const TisaParams& p) {
    const int64_t L = dims.param_layers, H = dims.heads, S = p.kernels;
    a = register_parameter("a", torch::randn({L, H, S}) * 0.01 + 0.1);  // (L,H,S)
    b = register_parameter("b", torch::randn({L, H, S}) * 0.01 + 0.1);  // (L,H,S)
    c = register_parameter("c", torch::randn({L, H, S}) * 5.0);         // (L,H,S)
  }
  std::string type() const override { return "tisa"; }
  // No score term, or one of positions only: the fused kernel takes it as its mask.
  FusedScores fused_scores() const override { return FusedScores::bias; }

  // f_h(r) for the distances r given: (H,N).
  torch::Tensor profile(int64_t layer, const torch::Tensor& r) {
    auto diff = r.view({1, -1, 1}) - c[layer].unsqueeze(1);              // (H,N,S)
    auto g = torch::exp(-b[layer].abs().unsqueeze(1) * diff * diff);     // (H,N,S)
    return (a[layer].unsqueeze(1) * g).sum(-1);                          // (H,N)
  }

  torch::Tensor score_term(const torch::Tensor& content, const torch::Tensor&,
                           const torch::Tensor&, const AttentionContext& ctx) override {
    const int64_t T = content.size(-1);
    // Offsets in float32 (float64 for a float64 model), then f in the scores' dtype: bfloat16
    // holds integers exactly only up to 256.
    const auto dt = content.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    auto r = torch::arange(-(T - 1), T, content.options().dtype(dt));  // (2T-1)
    auto f = profile(ctx.layer, r).to(content.dtype());                // (H,2T-1)
    return toeplitz_bias(f, T);                                        // (1,H,T,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions& o) override {
    torch::NoGradGuard guard;
    auto r = torch::arange(-o.radius, o.radius + 1, a.options());
    std::vector<torch::Tensor> f;
    for (int64_t l = 0; l < a.size(0); ++l) f.push_back(profile(l, r));
    return {{"distances", exported_copy(r), {"distance"}},
            {"a", exported_copy(a), {"layer", "head", "kernel"}},
            {"b", exported_copy(b), {"layer", "head", "kernel"}},
            {"c", exported_copy(c), {"layer", "head", "kernel"}},
            {"f", exported_copy(torch::stack(f)), {"layer", "head", "distance"}}};
  }

  torch::Tensor a, b, c;
};

}  // namespace

void register_tisa(Registry& r) {
  VariantInfo v;
  v.name = "tisa";
  v.summary = "per-head sum of Gaussian kernels of j-i added to scores (Wennberg & Henter 2021)";
  v.parameters = ParamScope::PerLayer;
  v.exports = {"distances", "a", "b", "c", "f"};
  v.make_params = [] { return std::make_shared<TisaParams>(); };
  v.validate = [](const VariantParams& vp, const Config&, const ParamCheck& c) {
    const auto& p = static_cast<const TisaParams&>(vp);
    if (p.kernels < 1) c.fail("kernels", "out of range", std::to_string(p.kernels), ">= 1");
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig&) {
    return std::make_shared<TisaImpl>(d, static_cast<const TisaParams&>(p));
  };
  r.add(std::move(v));
}

}  // namespace relpos
