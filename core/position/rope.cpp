// rope — Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position Embedding".
// Formula: each channel pair (2m, 2m+1) of q_i and k_i (m < rotary_dim/2) is rotated by the
// angle p·θ_m, p the absolute position, θ_m = base^(-2m/rotary_dim); channels past rotary_dim
// pass unchanged. With rotary_dim = d this is θ_m = base^(-2m/d) of the paper; pairs are
// interleaved as in the paper (GPT-NeoX rotates the two halves instead). q_i·k_j then depends
// on positions only through i - j.
// Hook: transform_qk (2). Parameters: none. Params: rotary_dim (0 = d, even, <= d), base.
// Positions: offset + t, or the drawn positions of position.randomized_max in training.
// Beyond the training length: rotations are defined everywhere; unseen angles may hurt.
#include <fmt/format.h>

#include "core/config/config.h"
#include "core/position/position_encoding.h"
#include "core/position/rotary.h"

namespace relpos {

// x (B,H,T,d): channel pairs (2m, 2m+1), m < rd/2, rotated by the angle p·θ_m, θ_m = inv_freq[m],
// p the position of each token: pos (T), or (B,1,T) for per-sequence positions, float64.
torch::Tensor rotate_pairs(const torch::Tensor& x, const torch::Tensor& pos,
                           const torch::Tensor& inv_freq, int64_t rd) {
  auto ang = pos.unsqueeze(-1) * inv_freq.to(torch::kDouble);  // (T,rd/2) | (B,1,T,rd/2)
  // cos and sin before the cast: an angle rounded to bfloat16 (8 mantissa bits) is off by
  // up to a radian past position 256.
  auto cos = ang.cos().to(x.dtype()), sin = ang.sin().to(x.dtype());  // as ang
  auto rot = x.narrow(-1, 0, rd);                                                  // (B,H,T,rd)
  auto pairs = rot.unflatten(-1, {rd / 2, 2});                                     // (B,H,T,rd/2,2)
  auto x0 = pairs.select(-1, 0), x1 = pairs.select(-1, 1);                         // (B,H,T,rd/2)
  auto y = torch::stack({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, -1).flatten(-2);  // (B,H,T,rd)
  if (rd == x.size(-1)) return y;
  return torch::cat({y, x.narrow(-1, rd, x.size(-1) - rd)}, -1);                  // (B,H,T,d)
}

// The positions a q/k hook sees: offset .. offset+T-1 as (T), or ctx.positions as (B,1,T);
// float64.
torch::Tensor hook_positions(const torch::Tensor& x, const AttentionContext& ctx) {
  if (ctx.positions.defined()) return ctx.positions.to(torch::kDouble).unsqueeze(1);  // (B,1,T)
  const int64_t T = x.size(2);
  return torch::arange(ctx.offset, ctx.offset + T, x.options().dtype(torch::kDouble));  // (T)
}

namespace {

struct RopeParams : ParamsOf<RopeParams> {
  int64_t rotary_dim = 0;
  double base = 10000.0;
  template <class V>
  void visit(V& v) {
    v("rotary_dim", rotary_dim, "rotated channels per head, 0 = all");
    v("base", base, "frequency base");
  }
};

class RopeImpl : public PositionEncodingImpl {
 public:
  RopeImpl(const ModelDims& dims, const RopeParams& p)
      : rd_(p.rotary_dim > 0 ? p.rotary_dim : dims.head_dim) {
    // Kept in float64 (the angles are formed in float64 too): rounding θ_m to float32 puts a
    // relative error of ~1e-8 on every angle p·θ_m, which a float64 model would see.
    auto m = torch::arange(0, rd_ / 2, torch::kDouble);  // (rd/2)
    inv_freq = register_buffer(
        "inv_freq", torch::pow(p.base, -2.0 * m / static_cast<double>(rd_)));  // (rd/2)
  }
  std::string type() const override { return "rope"; }
  // No score term, or one of positions only: the fused kernel takes it as its mask.
  FusedScores fused_scores() const override { return FusedScores::bias; }

  void transform_qk(torch::Tensor& q, torch::Tensor& k, const AttentionContext& ctx) override {
    const auto pos = hook_positions(q, ctx);  // (T) | (B,1,T)
    q = rotate_pairs(q, pos, inv_freq, rd_);
    k = rotate_pairs(k, pos, inv_freq, rd_);
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions&) override {
    return {{"frequencies", exported_copy(inv_freq), {"pair"}}};
  }

  torch::Tensor inv_freq;  // (rd/2) θ_m

 private:
  int64_t rd_;
};

}  // namespace

void register_rope(Registry& r) {
  VariantInfo v;
  v.name = "rope";
  v.summary = "rotary embedding of q and k channel pairs by angle i·θ_m (Su et al. 2021)";
  v.exports = {"frequencies"};
  v.absolute_positions = true;
  v.make_params = [] { return std::make_shared<RopeParams>(); };
  v.validate = [](const VariantParams& vp, const Config& cfg, const ParamCheck& c) {
    const auto& p = static_cast<const RopeParams&>(vp);
    validate_rotary(p.rotary_dim, p.base, cfg, c);
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig&) {
    return std::make_shared<RopeImpl>(d, static_cast<const RopeParams&>(p));
  };
  r.add(std::move(v));
}

}  // namespace relpos
