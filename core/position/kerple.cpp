// kerple — the mechanism behind kerple_log and kerple_power: Chi, Fan, Ramadge & Rudnicky 2022,
// "KERPLE: Kernelized Relative Positional Embedding for Length Extrapolation".
// A conditionally positive definite kernel of the distance, negated, is added to the scores:
//   log:   e_ij += -a_h·log(1 + b_h·|r|)
//   power: e_ij += -a_h·|r|^{b_h}   (0 < b_h < 2: b_h = 2σ(β_h), inside the paper's 0 < b <= 2,
//                                    where |r|^b is CPD)
// with r = j - i and a_h, b_h > 0 learned per head and layer. The kernel is symmetric in r, so
// the encoder (bidirectional) form is the same formula on both sides; the paper trains causal
// language models only.
// Positivity: a = softplus(α), b = softplus(β) (log) or 2·sigmoid(β) (power), with α, β the
// stored parameters — a reparametrization of our choice; the authors' code clamps the raw values
// instead. The exported a and b are the values the formula uses.
// Init (the values a, b): log a ~ U(0, 2), b ~ U(0, 1); power a ~ U(0, 1), b ~ U(0, 2), each at
// least 0.01 (and power b at most 1.99).
// Hook: score term (3), a bias independent of content (not divided by √d).
// Parameters per layer: α, β, each H (2H).
// Beyond the training length: the kernels are defined at every distance and keep decreasing
// (logarithmically, or as a power of |r|), so attention stays biased towards nearby keys.
#include <cmath>

#include "core/position/position_encoding.h"
#include "core/position/relative_ops.h"

namespace relpos {
namespace {

// softplus^-1(y) = log(e^y - 1), for the initial values.
torch::Tensor inverse_softplus(const torch::Tensor& y) { return torch::log(torch::expm1(y)); }

class KerpleImpl : public PositionEncodingImpl {
 public:
  KerpleImpl(const ModelDims& dims, bool power) : power_(power) {
    const int64_t L = dims.param_layers, H = dims.heads;
    auto a0 = (torch::rand({L, H}, torch::kDouble) * (power ? 1.0 : 2.0)).clamp_min(0.01);  // (L,H)
    auto b0 = (torch::rand({L, H}, torch::kDouble) * (power ? 2.0 : 1.0)).clamp(0.01, 1.99);  // (L,H)
    alpha = register_parameter("alpha", inverse_softplus(a0).to(torch::kFloat));  // (L,H)
    auto beta0 = power ? torch::log(b0 / (2.0 - b0)) : inverse_softplus(b0);       // (L,H)
    beta = register_parameter("beta", beta0.to(torch::kFloat));                    // (L,H)
  }
  std::string type() const override { return power_ ? "kerple_power" : "kerple_log"; }
  // No score term, or one of positions only: the fused kernel takes it as its mask.
  FusedScores fused_scores() const override { return FusedScores::bias; }

  torch::Tensor a(int64_t layer) { return torch::softplus(alpha[layer]); }  // (H)
  torch::Tensor b(int64_t layer) {
    return power_ ? 2.0 * torch::sigmoid(beta[layer]) : torch::softplus(beta[layer]);  // (H)
  }

  // The bias at the absolute distances `dist` (N), >= 0: (H,N).
  torch::Tensor profile(int64_t layer, const torch::Tensor& dist) {
    auto av = a(layer).to(dist.dtype()).unsqueeze(1), bv = b(layer).to(dist.dtype()).unsqueeze(1);
    if (!power_) return -av * torch::log1p(bv * dist.unsqueeze(0));  // (H,N)
    // |r|^b as exp(b·log max(|r|, 1)), times 0 at r = 0: the gradient w.r.t. b stays finite
    // there (log 0 would give 0·∞).
    auto d = dist.unsqueeze(0);                                      // (1,N)
    auto p = torch::exp(bv * torch::log(d.clamp_min(1.0))) * (d > 0).to(d.dtype());  // (H,N)
    return -av * p;                                                  // (H,N)
  }

  torch::Tensor score_term(const torch::Tensor& content, const torch::Tensor&,
                           const torch::Tensor&, const AttentionContext& ctx) override {
    const int64_t T = content.size(-1);
    // Distances in float32 (float64 for a float64 model), then the scores' dtype: bfloat16
    // holds integers exactly only up to 256.
    const auto dt = content.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    auto f = profile(ctx.layer, torch::arange(T, content.options().dtype(dt)))
                 .to(content.dtype());                                            // (H,T)
    auto r = torch::arange(-(T - 1), T, content.options().dtype(torch::kLong));  // (2T-1)
    return toeplitz_bias(f.index_select(1, r.abs()), T);                          // (1,H,T,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions& o) override {
    torch::NoGradGuard guard;
    auto r = torch::arange(-o.radius, o.radius + 1, torch::kDouble);  // (2R+1)
    std::vector<torch::Tensor> as, bs, f;
    for (int64_t l = 0; l < alpha.size(0); ++l) {
      as.push_back(a(l));
      bs.push_back(b(l));
      f.push_back(profile(l, r.abs().to(alpha.device())));
    }
    return {{"distances", exported_copy(r), {"distance"}},
            {"a", exported_copy(torch::stack(as)), {"layer", "head"}},
            {"b", exported_copy(torch::stack(bs)), {"layer", "head"}},
            {"bias", exported_copy(torch::stack(f)), {"layer", "head", "distance"}}};
  }

  torch::Tensor alpha, beta;  // (L,H) each

 private:
  bool power_;
};

}  // namespace

// Registers kerple_log (power = false) or kerple_power.
void register_kerple_kernel(Registry& r, bool power) {
  VariantInfo v;
  v.name = power ? "kerple_power" : "kerple_log";
  v.parameters = ParamScope::PerLayer;
  v.exports = {"distances", "a", "b", "bias"};
  v.summary = power ? "bias -a_h|j-i|^b_h, a_h > 0, 0 < b_h < 2 learned (Chi et al. 2022)"
                    : "bias -a_h log(1 + b_h|j-i|), a_h, b_h > 0 learned (Chi et al. 2022)";
  v.make_params = [] { return std::make_shared<NoParams>(); };
  v.make = [power](const ModelDims& d, const VariantParams&, const PositionConfig&) {
    return std::make_shared<KerpleImpl>(d, power);
  };
  r.add(std::move(v));
}

}  // namespace relpos
