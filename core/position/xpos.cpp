// xpos — Sun et al. 2022, "A Length-Extrapolatable Transformer" (xPos).
// Formula: RoPE (rope.cpp: channel pairs (2m, 2m+1) of q_i and k_j rotated by the angles i·θ_m,
// j·θ_m, θ_m = base^(-2m/rd)), with pair m of q_i scaled by ζ_m^{i/γ} and of k_j by ζ_m^{-j/γ},
//   ζ_m = (2m/rd + ζ₀) / (1 + ζ₀)  ∈ (0, 1),   γ = scale_base (512), ζ₀ = zeta_offset (0.4),
// so pair m of q_i·k_j is multiplied by ζ_m^{(i-j)/γ}: in a causal model a decay with the
// distance, fastest for the high-frequency pairs (small m: θ_0 = 1 and ζ_0 = ζ₀/(1 + ζ₀), the
// smallest) and slowest for the low-frequency ones (ζ_m -> 1 as 2m/rd -> 1).
// Numerics: the exponent is taken from the middle of the window, ζ^{(i-c)/γ} and ζ^{-(j-c)/γ}
// with c = the mean of the first and last position of each sequence; c cancels in q·k and the
// factors stay near 1 at any length (the paper's code does the same).
// Encoder form: the same transform. The product is then ζ^{-r/γ}, r = j - i: a decay towards
// keys before the query and a growth towards keys after it; the paper uses xPos causally only.
// Blockwise causal attention (the paper's, for lengths past training): block_size w > 0 lets
// query i see only keys in its own block of w positions and the one before
// (⌊j/w⌋ >= ⌊i/w⌋ - 1); w = the training length as in the paper. Causal models only; a score
// term of -inf on the hidden keys, none while the whole sequence lies in the first block.
// Hooks: transform_qk (2); score term (3) only with block_size. Parameters: none.
// Positions: offset + t, or the drawn positions of position.randomized_max in training.
// Beyond the training length: rotations and decays are defined everywhere; the decay keeps far
// keys from dominating, and block_size limits the reach to 2w.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/config/config.h"
#include "core/position/position_encoding.h"
#include "core/position/rotary.h"

namespace relpos {

// rope.cpp
torch::Tensor rotate_pairs(const torch::Tensor& x, const torch::Tensor& pos,
                           const torch::Tensor& inv_freq, int64_t rd);
torch::Tensor hook_positions(const torch::Tensor& x, const AttentionContext& ctx);

namespace {

struct XposParams : ParamsOf<XposParams> {
  int64_t rotary_dim = 0;
  double base = 10000.0;
  double scale_base = 512.0;
  double zeta_offset = 0.4;
  int64_t block_size = 0;
  template <class V>
  void visit(V& v) {
    v("rotary_dim", rotary_dim, "rotated and scaled channels per head, 0 = all");
    v("base", base, "frequency base");
    v("scale_base", scale_base, "gamma: the decay exponent is (i - j) / gamma");
    v("zeta_offset", zeta_offset, "zeta_m = (2m/rd + zeta_offset) / (1 + zeta_offset)");
    v("block_size", block_size, "blockwise causal attention window w, 0 = off");
  }
};

class XposImpl : public PositionEncodingImpl {
 public:
  XposImpl(const ModelDims& dims, const XposParams& p)
      : rd_(p.rotary_dim > 0 ? p.rotary_dim : dims.head_dim), gamma_(p.scale_base),
        block_(p.block_size) {
    auto m = torch::arange(0, rd_ / 2, torch::kDouble);  // (rd/2)
    inv_freq = register_buffer("inv_freq",
                               torch::pow(p.base, -2.0 * m / static_cast<double>(rd_)));  // (rd/2)
    zeta = register_buffer(
        "zeta", (2.0 * m / static_cast<double>(rd_) + p.zeta_offset) / (1.0 + p.zeta_offset));  // (rd/2)
  }
  std::string type() const override { return "xpos"; }
  // No score term, or one of positions only: the fused kernel takes it as its mask.
  FusedScores fused_scores() const override { return FusedScores::bias; }

  // x rotated and each pair scaled by ζ^{sign·(p - c)/γ}: x (B,H,T,d), pos (T) | (B,1,T).
  torch::Tensor transform(const torch::Tensor& x, const torch::Tensor& pos, double sign) {
    const int64_t T = pos.size(-1);
    auto center = (pos.narrow(-1, 0, 1) + pos.narrow(-1, T - 1, 1)) / 2.0;  // (1) | (B,1,1)
    auto expo = (pos - center).unsqueeze(-1) * (sign / gamma_);             // (T,1) | (B,1,T,1)
    auto s = torch::pow(zeta.to(torch::kDouble), expo).to(x.dtype());       // (T,rd/2) | (B,1,T,rd/2)
    auto y = rotate_pairs(x, pos, inv_freq, rd_);                           // (B,H,T,d)
    auto scaled = (y.narrow(-1, 0, rd_).unflatten(-1, {rd_ / 2, 2}) * s.unsqueeze(-1))
                      .flatten(-2);                                         // (B,H,T,rd)
    if (rd_ == x.size(-1)) return scaled;
    return torch::cat({scaled, y.narrow(-1, rd_, x.size(-1) - rd_)}, -1);  // (B,H,T,d)
  }

  void transform_qk(torch::Tensor& q, torch::Tensor& k, const AttentionContext& ctx) override {
    const auto pos = hook_positions(q, ctx);  // (T) | (B,1,T)
    q = transform(q, pos, 1.0);
    k = transform(k, pos, -1.0);
  }

  torch::Tensor score_term(const torch::Tensor& content, const torch::Tensor&,
                           const torch::Tensor&, const AttentionContext& ctx) override {
    const int64_t T = content.size(-1);
    if (block_ <= 0 || !ctx.causal || ctx.offset + T <= block_) return {};
    auto pos = torch::arange(ctx.offset, ctx.offset + T,
                             content.options().dtype(torch::kLong));  // (T)
    auto block = torch::div(pos, block_, "floor");                    // (T)
    auto hidden = block.unsqueeze(0) < block.unsqueeze(1) - 1;        // (T,T) key j too far back
    auto term = torch::zeros({T, T}, content.options())
                    .masked_fill(hidden, -std::numeric_limits<double>::infinity());  // (T,T)
    return term.view({1, 1, T, T}).expand({1, content.size(1), T, T});              // (1,H,T,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions& o) override {
    auto r = torch::arange(-o.radius, o.radius + 1, torch::kDouble);  // (2R+1)
    auto z = zeta.detach().to(torch::kCPU, torch::kDouble);           // (rd/2)
    // The factor on pair m of q_i·k_j at r = j - i: ζ_m^{-r/γ}.
    auto decay = torch::pow(z.unsqueeze(1), -r.unsqueeze(0) / gamma_);  // (rd/2,2R+1)
    return {{"frequencies", exported_copy(inv_freq), {"pair"}},
            {"zeta", z.to(torch::kFloat32), {"pair"}},
            {"distances", r.to(torch::kFloat32), {"distance"}},
            {"decay", decay.to(torch::kFloat32), {"pair", "distance"}}};
  }

  torch::Tensor inv_freq, zeta;  // (rd/2) each

 private:
  int64_t rd_;
  double gamma_;
  int64_t block_;
};

}  // namespace

void register_xpos(Registry& r) {
  VariantInfo v;
  v.name = "xpos";
  v.exports = {"frequencies", "zeta", "distances", "decay"};
  v.summary = "RoPE with a per-pair decay zeta^((i-j)/gamma) on q·k (Sun et al. 2022)";
  v.absolute_positions = true;
  v.make_params = [] { return std::make_shared<XposParams>(); };
  v.validate = [](const VariantParams& vp, const Config& cfg, const ParamCheck& c) {
    const auto& p = static_cast<const XposParams&>(vp);
    validate_rotary(p.rotary_dim, p.base, cfg, c);
    if (!(p.scale_base > 0.0))
      c.fail("scale_base", "out of range", std::to_string(p.scale_base), "> 0");
    if (!(p.zeta_offset > 0.0))
      c.fail("zeta_offset", "out of range", std::to_string(p.zeta_offset), "> 0");
    if (p.block_size < 0)
      c.fail("block_size", "out of range", std::to_string(p.block_size), ">= 0 (0 = off)");
    if (p.block_size > 0 && cfg.position.has("xpos") && !cfg.model.causal())
      c.fail("block_size", "blockwise causal attention needs a causal model",
             fmt::format("{} with model.mode {}", p.block_size, cfg.model.mode),
             "0 for an encoder, or model.mode: decoder");
    if (p.block_size > 0 && cfg.position.has("xpos") && p.block_size < cfg.task.seq_len)
      c.fail("block_size", "the window is shorter than the training sequences",
             std::to_string(p.block_size), fmt::format(">= task.seq_len ({})", cfg.task.seq_len));
    if (p.block_size > 0 && cfg.position.has("xpos") && cfg.snapshots.probe_len > p.block_size)
      c.fail("block_size", "the window is shorter than the snapshot probe sequences",
             std::to_string(p.block_size),
             fmt::format(">= snapshots.probe_len ({})", cfg.snapshots.probe_len));
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig&) {
    return std::make_shared<XposImpl>(d, static_cast<const XposParams&>(p));
  };
  r.add(std::move(v));
}

}  // namespace relpos
