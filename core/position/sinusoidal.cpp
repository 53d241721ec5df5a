// sinusoidal — Vaswani et al. 2017, "Attention Is All You Need".
// Formula: x_i += s·PE(i), PE(i,2m) = sin(i / 10000^{2m/E}), PE(i,2m+1) = cos(i / 10000^{2m/E}),
// at the embedding width E (an odd E leaves its last channel at sin); s = scale (default 1, the
// paper's). Vaswani et al. multiply the token embeddings by √E instead; with our token
// embeddings initialised at std 0.02 a table of amplitude 1 swamps them, and short runs can
// stay at the unigram plateau (results/invariance): scale: 0.02–0.1 keeps the two comparable.
// Hook: embed (1), or embed_at with the drawn positions of position.randomized_max in training.
// Parameters: none (the table is computed for the positions in use).
// Beyond the training length: defined for every position; nothing learned refers to it.
#include <cmath>

#include "core/position/position_encoding.h"

namespace relpos {

// PE at the positions pos (N) float64, at width E: (N,E).
torch::Tensor sinusoidal_rows(const torch::Tensor& positions, int64_t E, double base,
                              const torch::TensorOptions& opts) {
  const int64_t T = positions.size(0);
  auto pos = positions.unsqueeze(1);                                                      // (T,1)
  auto m2 = torch::arange(0, E, 2, opts.dtype(torch::kDouble));                          // (ceil(E/2))
  auto inv = torch::exp(m2 * (-std::log(base) / static_cast<double>(E)));                // (E/2)
  auto angles = pos * inv.unsqueeze(0);                                                   // (T,E/2)
  auto pe = torch::zeros({T, E}, opts.dtype(torch::kDouble));                             // (T,E)
  using torch::indexing::Slice;
  pe.index_put_({Slice(), Slice(0, E, 2)}, torch::sin(angles));
  pe.index_put_({Slice(), Slice(1, E, 2)}, torch::cos(angles.narrow(1, 0, E / 2)));
  return pe.to(opts.dtype());
}

// PE for positions offset..offset+T-1 at width E: (T,E).
torch::Tensor sinusoidal_table(int64_t T, int64_t E, int64_t offset, double base,
                               const torch::TensorOptions& opts) {
  return sinusoidal_rows(torch::arange(offset, offset + T, opts.dtype(torch::kDouble)), E, base,
                         opts);  // (T,E)
}

namespace {

struct SinusoidalParams : ParamsOf<SinusoidalParams> {
  double base = 10000.0;
  double scale = 1.0;
  template <class V>
  void visit(V& v) {
    v("base", base, "wavelength base");
    v("scale", scale, "multiplier of the table (1 = the paper's)");
  }
};

class SinusoidalImpl : public PositionEncodingImpl {
 public:
  SinusoidalImpl(const ModelDims& dims, const SinusoidalParams& p)
      : E_(dims.embed_dim), base_(p.base), scale_(p.scale) {}
  std::string type() const override { return "sinusoidal"; }
  // No score term, or one of positions only: the fused kernel takes it as its mask.
  FusedScores fused_scores() const override { return FusedScores::bias; }

  torch::Tensor embed(const torch::Tensor& x, int64_t offset) override {
    auto pe = sinusoidal_table(x.size(1), E_, offset, base_, x.options());  // (T,E)
    return x + scale_ * pe.unsqueeze(0);                                    // (B,T,E)
  }

  torch::Tensor embed_at(const torch::Tensor& x, const torch::Tensor& positions) override {
    const int64_t B = x.size(0), T = x.size(1);
    auto pos = positions.reshape({-1}).to(torch::kDouble);          // (B*T)
    auto pe = sinusoidal_rows(pos, E_, base_, x.options()).view({B, T, E_});  // (B,T,E)
    return x + scale_ * pe;                                          // (B,T,E)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions& o) override {
    return {{"table", scale_ * sinusoidal_table(o.length, E_, 0, base_, torch::kFloat32),
             {"position", "channel"}}};
  }

 private:
  int64_t E_;
  double base_, scale_;
};

}  // namespace

void register_sinusoidal(Registry& r) {
  VariantInfo v;
  v.name = "sinusoidal";
  v.summary = "fixed sin/cos table added to the input (Vaswani et al. 2017)";
  v.translation_invariant = false;
  v.exports = {"table"};
  v.absolute_positions = true;
  v.make_params = [] { return std::make_shared<SinusoidalParams>(); };
  v.validate = [](const VariantParams& vp, const Config&, const ParamCheck& c) {
    const auto& p = static_cast<const SinusoidalParams&>(vp);
    if (!(p.base > 1.0)) c.fail("base", "out of range", std::to_string(p.base), "> 1");
    if (!(p.scale > 0.0)) c.fail("scale", "out of range", std::to_string(p.scale), "> 0");
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig&) {
    return std::make_shared<SinusoidalImpl>(d, static_cast<const SinusoidalParams&>(p));
  };
  r.add(std::move(v));
}

}  // namespace relpos
