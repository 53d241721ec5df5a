// fire — Li et al. 2023, "Functional Interpolation for Relative Positions Improves Long Context
// Transformers" (FIRE).
// Formula (causal, the paper's): e_ij += f_θ(ψ(i - j) / ψ(max(L, i))), ψ(x) = log(c·x + 1),
// i the query's position, j <= i; f_θ: R -> R^H an MLP with one hidden ReLU layer of width W
// (one output per head, no output bias: a constant per head shifts every score of a query
// alike and leaves attention unchanged), c > 0 and the threshold L learned.
// Dividing by ψ(max(L, i)) maps every visible distance into [0, 1] whatever the length
// ("progressive interpolation"); L keeps short prefixes from being stretched over the range.
// Encoder form (our choice; the paper is causal only): keys after the query get the mirror
// image, the distance normalized by the query's reach to the right:
//   x_ij = ψ(i - j) / ψ(max(L, i))                  for j <= i
//   x_ij = -ψ(j - i) / ψ(max(L, T - 1 - t_i))       for j > i   (t_i the query's row 0..T-1)
// so x ∈ [-1, 1] in both modes, and e_ij += f_θ(x_ij).
// Positions: i = offset + t_i (ForwardOptions.offset, 0 in training and evaluation). The
// normalizer max(L, i) (and T - 1 - t_i) is floored at 1, so the first query is defined.
// c = softplus(γ) and L = |λ| with γ, λ the stored parameters (init c = init_c,
// L = init_threshold).
// MLP init: w1, b1 ~ U(-1, 1), w2 ~ U(-1/√W, 1/√W) (PyTorch's Linear init for fan-in 1 and W).
// Hook: score term (3), a bias (H,T,T) independent of content; not a function of j - i
// alone, so not translation invariant (the normalizer depends on i).
// Parameters per layer: w1, b1 (W), w2 (H×W), γ, λ: (H+2)·W + 2.
// Memory: the hidden layer is evaluated at every (i, j), a (T,T,W) tensor per layer; one
// autograd node (FireMlp) keeps only the (T,T) inputs and recomputes the hidden layer in
// backward.
// Beyond the training length: inputs stay in [-1, 1]; for i > L a longer context is squeezed
// into the same range, which is what lets FIRE interpolate rather than extrapolate.
#include <torch/autograd.h>

#include <cmath>

#include "core/position/position_encoding.h"

namespace relpos {
namespace {

using torch::Tensor;

// f = relu(x ⊗ w1 + b1) · w2ᵀ for the (T,T) inputs x: (T,T,H). Autograd's own graph would keep
// the (T,T,W) hidden layer (32 MiB per layer at T=512, W=32) until backward; this node keeps x
// and the weights and recomputes it there.
struct FireMlp : public torch::autograd::Function<FireMlp> {
  static Tensor hidden_pre(const Tensor& x, const Tensor& w1, const Tensor& b1) {
    return x.unsqueeze(-1) * w1 + b1;  // (T,T,W)
  }

  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, const Tensor& w1,
                        const Tensor& b1, const Tensor& w2) {
    ctx->save_for_backward({x, w1, b1, w2});
    auto h = torch::relu(hidden_pre(x, w1, b1));  // (T,T,W)
    return torch::matmul(h, w2.t());              // (T,T,H)
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &w1 = saved[1], &b1 = saved[2], &w2 = saved[3];
    const int64_t W = w1.size(0), H = w2.size(0);
    // In x's dtype: under bfloat16 autocast the forward product, and so its gradient, is bf16.
    const Tensor df = grads[0].to(x.scalar_type()).reshape({-1, H});  // (TT,H)
    auto pre = hidden_pre(x, w1, b1).reshape({-1, W});                // (TT,W)
    auto active = pre > 0;                                            // (TT,W)
    Tensor grad_w2;
    if (ctx->needs_input_grad(3)) grad_w2 = torch::matmul(df.t(), torch::relu(pre));  // (H,W)
    auto dpre = torch::matmul(df, w2).mul_(active);                                   // (TT,W)
    auto xf = x.reshape({-1, 1});                                                     // (TT,1)
    Tensor grad_x, grad_w1, grad_b1;
    if (ctx->needs_input_grad(0)) grad_x = torch::matmul(dpre, w1).view(x.sizes());  // (T,T)
    if (ctx->needs_input_grad(1)) grad_w1 = (dpre * xf).sum(0);                      // (W)
    if (ctx->needs_input_grad(2)) grad_b1 = dpre.sum(0);                             // (W)
    return {grad_x, grad_w1, grad_b1, grad_w2};
  }
};

struct FireParams : ParamsOf<FireParams> {
  int64_t mlp_width = 32;
  double init_c = 1.0;
  double init_threshold = 64.0;
  template <class V>
  void visit(V& v) {
    v("mlp_width", mlp_width, "hidden units W of the MLP f");
    v("init_c", init_c, "initial c in psi(x) = log(c x + 1)");
    v("init_threshold", init_threshold, "initial threshold L (tokens)");
  }
};

class FireImpl : public PositionEncodingImpl {
 public:
  FireImpl(const ModelDims& dims, const FireParams& p) {
    const int64_t L = dims.param_layers, H = dims.heads, W = p.mlp_width;
    const double bound2 = 1.0 / std::sqrt(static_cast<double>(W));
    w1 = register_parameter("w1", torch::rand({L, W}) * 2.0 - 1.0);               // (L,W)
    b1 = register_parameter("b1", torch::rand({L, W}) * 2.0 - 1.0);               // (L,W)
    w2 = register_parameter("w2", (torch::rand({L, H, W}) * 2.0 - 1.0) * bound2);  // (L,H,W)
    // softplus^-1(c) = log(e^c - 1)
    c_raw = register_parameter("c_raw", torch::full({L}, std::log(std::expm1(p.init_c))));  // (L)
    threshold_raw = register_parameter("threshold_raw", torch::full({L}, p.init_threshold));  // (L)
  }
  std::string type() const override { return "fire"; }
  // No score term, or one of positions only: the fused kernel takes it as its mask.
  FusedScores fused_scores() const override { return FusedScores::bias; }

  torch::Tensor c(int64_t layer) { return torch::softplus(c_raw[layer]); }  // ()
  torch::Tensor threshold(int64_t layer) { return threshold_raw[layer].abs(); }  // ()

  // The bias of layer `layer` for T tokens at positions offset..offset+T-1: (H,T,T), in o's
  // dtype. One formula for both modes: a causal model masks the entries j > i.
  torch::Tensor bias(int64_t layer, int64_t T, int64_t offset, const torch::TensorOptions& o) {
    auto row = torch::arange(T, o);                                  // (T) t_i
    auto diff = row.unsqueeze(1) - row.unsqueeze(0);                 // (T,T) i - j
    auto cv = c(layer).to(o.dtype()), Lv = threshold(layer).to(o.dtype());
    auto psi = [&](const torch::Tensor& x) { return torch::log1p(cv * x); };
    auto left = torch::maximum(Lv, row + static_cast<double>(offset)).clamp_min(1.0);  // (T)
    auto right = torch::maximum(Lv, (T - 1.0) - row).clamp_min(1.0);                    // (T)
    auto past = diff >= 0;                                                              // (T,T)
    auto num = psi(diff.abs());                                                         // (T,T)
    auto den = torch::where(past, psi(left).unsqueeze(1), psi(right).unsqueeze(1));    // (T,T)
    auto x = torch::where(past, num, -num) / den;                                       // (T,T)
    auto f = FireMlp::apply(x, w1[layer].to(o.dtype()), b1[layer].to(o.dtype()),
                            w2[layer].to(o.dtype()));  // (T,T,H)
    return f.permute({2, 0, 1});                       // (H,T,T)
  }

  torch::Tensor score_term(const torch::Tensor& content, const torch::Tensor&,
                           const torch::Tensor&, const AttentionContext& ctx) override {
    const int64_t T = content.size(-1);
    // float32 (float64 for a float64 model), then the scores' dtype.
    const auto dt = content.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    auto f = bias(ctx.layer, T, ctx.offset, content.options().dtype(dt));  // (H,T,T)
    return f.to(content.dtype()).unsqueeze(0);                             // (1,H,T,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions& o) override {
    torch::NoGradGuard guard;
    // The bias seen by the query in the middle of 2R+1 tokens (position R), for the keys
    // j = R + r: every r in [-R, R] is within its reach on both sides.
    const int64_t R = o.radius;
    std::vector<torch::Tensor> f, cs, ls;
    for (int64_t l = 0; l < w1.size(0); ++l) {
      f.push_back(bias(l, 2 * R + 1, 0, w1.options().dtype(torch::kDouble)).select(1, R));
      cs.push_back(c(l));
      ls.push_back(threshold(l));
    }
    return {{"distances", torch::arange(-R, R + 1, torch::kFloat32), {"distance"}},
            {"bias", exported_copy(torch::stack(f)), {"layer", "head", "distance"}},
            {"c", exported_copy(torch::stack(cs)), {"layer"}},
            {"threshold", exported_copy(torch::stack(ls)), {"layer"}},
            {"w1", exported_copy(w1), {"layer", "hidden"}},
            {"b1", exported_copy(b1), {"layer", "hidden"}},
            {"w2", exported_copy(w2), {"layer", "head", "hidden"}}};
  }

  torch::Tensor w1, b1, w2, c_raw, threshold_raw;
};

}  // namespace

void register_fire(Registry& r) {
  VariantInfo v;
  v.name = "fire";
  v.parameters = ParamScope::PerLayer;
  v.exports = {"distances", "bias", "c", "threshold", "w1", "b1", "w2"};
  v.summary = "MLP of the log distance normalized by the query position (Li et al. 2023)";
  v.translation_invariant = false;
  v.make_params = [] { return std::make_shared<FireParams>(); };
  v.validate = [](const VariantParams& vp, const Config&, const ParamCheck& ch) {
    const auto& p = static_cast<const FireParams&>(vp);
    if (p.mlp_width < 1) ch.fail("mlp_width", "out of range", std::to_string(p.mlp_width), ">= 1");
    if (!(p.init_c > 0.0)) ch.fail("init_c", "out of range", std::to_string(p.init_c), "> 0");
    if (!(p.init_threshold >= 0.0))
      ch.fail("init_threshold", "out of range", std::to_string(p.init_threshold), ">= 0");
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig&) {
    return std::make_shared<FireImpl>(d, static_cast<const FireParams&>(p));
  };
  r.add(std::move(v));
}

}  // namespace relpos
