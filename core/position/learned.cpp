// learned — absolute position embeddings as in BERT (Devlin et al. 2019).
// Formula: x_i += P_i, P ∈ R^{max_len × E} (E = embedding width), init N(0, init_std²).
// Hook: embed (1), or embed_at with the drawn positions of position.randomized_max in training
// (every drawn position must be a row: max_len >= randomized_max). Parameters: max_len·E.
// Beyond max_len: an error by default (positions past the table were never trained);
// `beyond: clamp` reuses the last row for every later position.
#include <fmt/format.h>

#include "core/config/config.h"
#include "core/position/position_encoding.h"

namespace relpos {
namespace {

struct LearnedParams : ParamsOf<LearnedParams> {
  int64_t max_len = 512;
  std::string beyond = "error";  // error | clamp
  template <class V>
  void visit(V& v) {
    v("max_len", max_len, "rows of the table");
    v.choice("beyond", beyond, {"error", "clamp"}, "positions past max_len");
  }
};

class LearnedImpl : public PositionEncodingImpl {
 public:
  LearnedImpl(const ModelDims& dims, const LearnedParams& p, double init_std)
      : max_len_(p.max_len), clamp_(p.beyond == "clamp") {
    table = register_parameter("table", torch::randn({p.max_len, dims.embed_dim}) * init_std);
  }
  std::string type() const override { return "learned"; }
  // No score term, or one of positions only: the fused kernel takes it as its mask.
  FusedScores fused_scores() const override { return FusedScores::bias; }

  torch::Tensor embed(const torch::Tensor& x, int64_t offset) override {
    const int64_t T = x.size(1);
    if (!clamp_ && offset + T > max_len_)
      throw ConfigError(
          fmt::format("position.learned: a sequence reaches position {} but the learned table "
                      "has max_len {}",
                      offset + T, max_len_),
          "raise position.learned.max_len before training, or set position.learned.beyond=clamp");
    auto pos = torch::arange(offset, offset + T, x.options().dtype(torch::kLong))
                   .clamp_max(max_len_ - 1);           // (T)
    return x + table.index_select(0, pos).unsqueeze(0);  // (B,T,E)
  }

  torch::Tensor embed_at(const torch::Tensor& x, const torch::Tensor& positions) override {
    const int64_t B = x.size(0), T = x.size(1);
    const int64_t top = positions.max().item<int64_t>();
    if (!clamp_ && top >= max_len_)
      throw ConfigError(
          fmt::format("position.learned: a sequence reaches position {} but the learned table "
                      "has max_len {}",
                      top + 1, max_len_),
          "raise position.learned.max_len to at least position.randomized_max");
    auto pos = positions.reshape({-1}).clamp_max(max_len_ - 1);                // (B*T)
    return x + table.index_select(0, pos).view({B, T, table.size(1)});          // (B,T,E)
  }

  int64_t max_length() const override { return clamp_ ? -1 : max_len_; }
  int64_t table_length() const override { return max_len_; }

  std::vector<ExportedTensor> export_tensors(const ExportOptions&) override {
    return {{"table", exported_copy(table),
             {"position", "channel"}}};
  }

  torch::Tensor table;  // (max_len,E)

 private:
  int64_t max_len_;
  bool clamp_;
};

}  // namespace

void register_learned(Registry& r) {
  VariantInfo v;
  v.name = "learned";
  v.summary = "trained absolute table P (max_len x E) added to the input (BERT)";
  v.translation_invariant = false;
  v.parameters = ParamScope::Model;
  v.length_key = "max_len";
  v.eval_keys = {{"beyond", "clamp"}};
  v.past_label = "clamped";
  v.exports = {"table"};
  v.absolute_positions = true;
  v.make_params = [] { return std::make_shared<LearnedParams>(); };
  v.validate = [](const VariantParams& vp, const Config& cfg, const ParamCheck& c) {
    const auto& p = static_cast<const LearnedParams&>(vp);
    if (p.max_len < 1) c.fail("max_len", "out of range", std::to_string(p.max_len), ">= 1");
    if (cfg.position.has("learned") && p.beyond == "error" && cfg.task.seq_len > p.max_len)
      c.fail("max_len", "the learned table is shorter than the training sequences",
             std::to_string(p.max_len), fmt::format(">= task.seq_len ({})", cfg.task.seq_len));
    if (cfg.position.has("learned") && cfg.position.randomized_max > p.max_len)
      c.fail("max_len", "the learned table is shorter than the randomized training positions",
             std::to_string(p.max_len),
             fmt::format(">= position.randomized_max ({})", cfg.position.randomized_max));
    if (cfg.position.has("learned") && p.beyond == "error" && cfg.snapshots.probe_len > p.max_len)
      c.fail("max_len", "the learned table is shorter than the snapshot probe sequences",
             std::to_string(p.max_len),
             fmt::format(">= snapshots.probe_len ({}), or beyond: clamp", cfg.snapshots.probe_len));
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig&) {
    return std::make_shared<LearnedImpl>(d, static_cast<const LearnedParams&>(p), d.init_std);
  };
  r.add(std::move(v));
}

}  // namespace relpos
