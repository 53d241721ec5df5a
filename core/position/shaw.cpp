// shaw — Shaw, Uszkoreit & Vaswani 2018, "Self-Attention with Relative Position Representations".
// Formula (r = j - i, c(r) = max(-K, min(K, r))):
//   e_ij = q_i·(k_j + a^K_{c(r)})/√d          -> score term  q_i·a^K_{c(r)}/√d
//   z_i  = Σ_j α_ij (v_j + a^V_{c(r)})          -> value term  Σ_j α_ij a^V_{c(r)}
// Hooks: score term (3), value term (3). Parameters per layer, shared by heads:
// a^K and a^V, each (2K+1)×d (values: false drops a^V); per_head: true gives every head its
// own, H×(2K+1)×d each. K = clip (distance in tokens).
// Beyond the training length: distances past K reuse the clipped vectors, so any length works.
#include "core/position/position_encoding.h"
#include "core/position/relative_ops.h"

namespace relpos {
namespace {

struct ShawParams : ParamsOf<ShawParams> {
  int64_t clip = 64;
  bool values = true;
  bool per_head = false;
  template <class V>
  void visit(V& v) {
    v("clip", clip, "clip distance K");
    v("values", values, "also add relative vectors to the values");
    v("per_head", per_head, "one table per head instead of one shared by the heads");
  }
};

class ShawImpl : public PositionEncodingImpl {
 public:
  ShawImpl(const ModelDims& dims, const ShawParams& p, bool direct) : K_(p.clip), direct_(direct) {
    const int64_t R = 2 * K_ + 1;
    const std::vector<int64_t> shape =
        p.per_head ? std::vector<int64_t>{dims.param_layers, dims.heads, R, dims.head_dim}
                   : std::vector<int64_t>{dims.param_layers, R, dims.head_dim};
    keys = register_parameter("keys", torch::randn(shape) * dims.init_std);  // (L,[H,]R,d)
    if (p.values)
      values = register_parameter("values", torch::randn(shape) * dims.init_std);  // (L,[H,]R,d)
  }
  std::string type() const override { return "shaw"; }
  // The key term reads q only; the value term needs the probabilities, which the fused
  // kernel never forms.
  FusedScores fused_scores() const override {
    return values.defined() ? FusedScores::unsupported : FusedScores::content_bias;
  }

  torch::Tensor score_term(const torch::Tensor&, const torch::Tensor& q, const torch::Tensor&,
                           const AttentionContext& ctx) override {
    return relative_query_term(scaled_query(q, ctx), keys[ctx.layer], K_, direct_);  // (B,H,T,T)
  }

  torch::Tensor value_term(const torch::Tensor& probs, const AttentionContext& ctx) override {
    if (!values.defined()) return {};
    return relative_value_term(probs, values[ctx.layer], K_, direct_);  // (B,H,T,d)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions&) override {
    std::vector<ExportedTensor> out;
    std::vector<std::string> dims = {"layer", "distance", "channel"};
    if (keys.dim() == 4) dims = {"layer", "head", "distance", "channel"};
    out.push_back({"distances", torch::arange(-K_, K_ + 1, torch::kFloat32), {"distance"}});
    out.push_back({"keys", exported_copy(keys), dims});
    if (values.defined())
      out.push_back({"values", exported_copy(values), dims});
    return out;
  }

  torch::Tensor keys, values;

 private:
  int64_t K_;
  bool direct_;
};

}  // namespace

void register_shaw(Registry& r) {
  VariantInfo v;
  v.name = "shaw";
  v.summary = "relative key (and value) vectors per clipped distance (Shaw et al. 2018)";
  v.parameters = ParamScope::PerLayer;
  v.direct_path = true;
  v.exports = {"distances", "keys", "values"};
  v.make_params = [] { return std::make_shared<ShawParams>(); };
  v.validate = [](const VariantParams& vp, const Config&, const ParamCheck& c) {
    const auto& p = static_cast<const ShawParams&>(vp);
    if (p.clip < 1) c.fail("clip", "out of range", std::to_string(p.clip), ">= 1");
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig& cfg) {
    return std::make_shared<ShawImpl>(d, static_cast<const ShawParams&>(p),
                                      cfg.relative_impl == "direct");
  };
  r.add(std::move(v));
}

}  // namespace relpos
