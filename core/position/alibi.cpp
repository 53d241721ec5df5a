// alibi — Press, Smith & Lewis 2022, "Train Short, Test Long: Attention with Linear Biases".
// Formula: e_ij += -m_h·|i - j| (causal: -m_h·(i - j) on the visible j <= i, the same values).
// Slopes: for H a power of 2, m_h = 2^(-8h/H), h = 1..H. Otherwise, with n the largest power
// of 2 below H: the n slopes for n heads, then every other slope of the 2n-head sequence
// (odd positions 1, 3, 5, ...) until H slopes are chosen (the paper's rule).
// Encoder mode: -m_h·|i - j| is symmetric in r = j - i, so ALiBi alone cannot tell left from
// right (its symmetry metric is 1 by construction); the causal mask gives decoders the direction.
// Hook: score term (3). Parameters: none (slopes fixed). Beyond the training length: the
// penalty keeps growing linearly, which is what lets ALiBi extrapolate.
#include <cmath>

#include "core/position/position_encoding.h"

namespace relpos {

// The ALiBi slopes for H heads.
std::vector<double> alibi_slopes(int64_t H) {
  auto power_of_two = [](int64_t n) {
    std::vector<double> s;
    const double start = std::pow(2.0, -8.0 / static_cast<double>(n));
    for (int64_t i = 1; i <= n; ++i) s.push_back(std::pow(start, static_cast<double>(i)));
    return s;
  };
  int64_t n = 1;
  while (n * 2 <= H) n *= 2;
  std::vector<double> slopes = power_of_two(n);
  if (n < H) {
    std::vector<double> extra = power_of_two(2 * n);
    for (size_t i = 0; i < extra.size() && static_cast<int64_t>(slopes.size()) < H; i += 2)
      slopes.push_back(extra[i]);
  }
  return slopes;
}

namespace {

class AlibiImpl : public PositionEncodingImpl {
 public:
  explicit AlibiImpl(const ModelDims& dims) {
    auto s = alibi_slopes(dims.heads);
    // float64: slopes such as 2^-0.5 (H = 12, 16, ...) are not exact in float32.
    slopes = register_buffer("slopes", torch::tensor(s, torch::kDouble));  // (H)
  }
  std::string type() const override { return "alibi"; }
  // No score term, or one of positions only: the fused kernel takes it as its mask.
  FusedScores fused_scores() const override { return FusedScores::bias; }

  torch::Tensor profile(const torch::Tensor& r) { return -slopes.unsqueeze(1) * r.abs().unsqueeze(0); }

  torch::Tensor score_term(const torch::Tensor& content, const torch::Tensor&,
                           const torch::Tensor&, const AttentionContext&) override {
    const int64_t T = content.size(-1);
    // Distances and the product in float32 (float64 for a float64 model), then the scores'
    // dtype: bfloat16 holds integers exactly only up to 256.
    const auto dt = content.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    auto pos = torch::arange(T, content.options().dtype(dt));                   // (T)
    auto dist = (pos.unsqueeze(0) - pos.unsqueeze(1)).abs();                    // (T,T)
    auto bias = -slopes.to(dt).view({-1, 1, 1}) * dist;                         // (H,T,T)
    return bias.to(content.dtype()).unsqueeze(0);                               // (1,H,T,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions& o) override {
    auto r = torch::arange(-o.radius, o.radius + 1, torch::kFloat32);
    auto s = exported_copy(slopes);
    return {{"distances", r, {"distance"}},
            {"slopes", s, {"head"}},
            {"profile", -s.unsqueeze(1) * r.abs().unsqueeze(0), {"head", "distance"}}};
  }

  torch::Tensor slopes;
};

}  // namespace

void register_alibi(Registry& r) {
  VariantInfo v;
  v.name = "alibi";
  v.summary = "fixed linear distance penalty -m_h|i-j|, geometric slopes (Press et al. 2022)";
  v.exports = {"distances", "slopes", "profile"};
  v.encoder_note =
      "In an encoder alibi is symmetric, −m_h·|i − j|: alone it cannot tell left from right, and "
      "its symmetry metric is 1 by construction (docs/variants.md)";
  v.make_params = [] { return std::make_shared<NoParams>(); };
  v.make = [](const ModelDims& d, const VariantParams&, const PositionConfig&) {
    return std::make_shared<AlibiImpl>(d);
  };
  r.add(std::move(v));
}

}  // namespace relpos
