// t5_bias — Raffel et al. 2020 (T5), bucketed relative position bias.
// Formula: e_ij += b_h[bucket(j - i)], buckets shared by all layers.
// bucket(r), N = buckets, M = max_distance:
//   encoder (bidirectional): N' = N/2; offset = N' if r > 0 else 0; n = |r|
//   decoder (causal, one-sided as in T5's decoder): N' = N; offset = 0; n = max(-r, 0)
//   exact buckets for n < N'/2; beyond, log-spaced up to M:
//   bucket = offset + (n if n < N'/2 else min(N'-1, N'/2 + floor(log(n/(N'/2)) /
//            log(M/(N'/2)) · (N' - N'/2))))
// Hook: score term (3), a content-independent bias (not divided by √d).
// Parameters: N·H, shared by layers. Beyond max_distance all distances share the last bucket.
#include <cmath>

#include "core/position/position_encoding.h"
#include "core/position/relative_ops.h"

namespace relpos {
namespace {

struct T5Params : ParamsOf<T5Params> {
  int64_t buckets = 32;
  int64_t max_distance = 128;
  template <class V>
  void visit(V& v) {
    v("buckets", buckets, "number of buckets");
    v("max_distance", max_distance, "distance of the last log bucket");
  }
};

class T5BiasImpl : public PositionEncodingImpl {
 public:
  T5BiasImpl(const ModelDims& dims, const T5Params& p)
      : N_(p.buckets), M_(p.max_distance), causal_(dims.causal) {
    bias = register_parameter("bias", torch::randn({N_, dims.heads}) * dims.init_std);  // (N,H)
  }
  std::string type() const override { return "t5_bias"; }
  // No score term, or one of positions only: the fused kernel takes it as its mask.
  FusedScores fused_scores() const override { return FusedScores::bias; }

  // Bucket of each relative distance r = j - i (any shape, int64).
  torch::Tensor bucket(const torch::Tensor& r) const {
    int64_t n_buckets = N_;
    torch::Tensor ret = torch::zeros_like(r);
    torch::Tensor n;
    if (!causal_) {
      n_buckets /= 2;
      ret = ret + (r > 0).to(torch::kLong) * n_buckets;
      n = r.abs();
    } else {
      n = (-r).clamp_min(0);
    }
    const int64_t max_exact = n_buckets / 2;
    auto is_small = n < max_exact;
    auto nf = n.to(torch::kDouble).clamp_min(1.0);
    auto large = (torch::log(nf / static_cast<double>(max_exact)) /
                  std::log(static_cast<double>(M_) / static_cast<double>(max_exact)) *
                  static_cast<double>(n_buckets - max_exact))
                     .floor()
                     .to(torch::kLong) +
                 max_exact;
    large = large.clamp_max(n_buckets - 1);
    return ret + torch::where(is_small, n, large);
  }

  // b_h at each distance given: (H,N).
  torch::Tensor profile(const torch::Tensor& r) {
    auto idx = bucket(r).reshape({-1});                         // (N)
    return bias.index_select(0, idx).t().contiguous();         // (H,N)
  }

  torch::Tensor score_term(const torch::Tensor& content, const torch::Tensor&,
                           const torch::Tensor&, const AttentionContext&) override {
    const int64_t T = content.size(-1);
    auto r = torch::arange(-(T - 1), T, content.options().dtype(torch::kLong));  // (2T-1) j - i
    auto b = bias.index_select(0, bucket(r));                                      // (2T-1,H)
    return toeplitz_bias(b.t().contiguous(), T);  // (1,H,T,T), last dimension contiguous
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions& o) override {
    torch::NoGradGuard guard;
    auto r = torch::arange(-o.radius, o.radius + 1,
                           torch::TensorOptions().dtype(torch::kLong).device(bias.device()));
    return {{"distances", exported_copy(r), {"distance"}},
            {"bias", exported_copy(bias), {"bucket", "head"}},
            {"buckets", exported_copy(bucket(r)), {"distance"}},
            {"profile", exported_copy(profile(r)), {"head", "distance"}}};
  }

  torch::Tensor bias;

 private:
  int64_t N_, M_;
  bool causal_;
};

}  // namespace

void register_t5_bias(Registry& r) {
  VariantInfo v;
  v.name = "t5_bias";
  v.summary = "learned bias per log-bucketed distance, shared by layers (T5, Raffel et al. 2020)";
  v.parameters = ParamScope::Model;
  v.exports = {"distances", "bias", "buckets", "profile"};
  v.make_params = [] { return std::make_shared<T5Params>(); };
  v.validate = [](const VariantParams& vp, const Config&, const ParamCheck& c) {
    const auto& p = static_cast<const T5Params&>(vp);
    if (p.buckets < 4 || p.buckets % 2 != 0)
      c.fail("buckets", "out of range", std::to_string(p.buckets), "an even number >= 4");
    if (p.max_distance <= p.buckets / 2)
      c.fail("max_distance", "out of range", std::to_string(p.max_distance),
             "> buckets/2 (" + std::to_string(p.buckets / 2) + ")");
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig&) {
    return std::make_shared<T5BiasImpl>(d, static_cast<const T5Params&>(p));
  };
  r.add(std::move(v));
}

}  // namespace relpos
