// deberta — He, Liu, Gao & Chen 2021, "DeBERTa: Decoding-enhanced BERT with Disentangled
// Attention", the disentangled attention (without the enhanced mask decoder).
// Formula: e_ij = (q_i·k_j + q_i·K^r_{δ(i,j)} + k_j·Q^r_{δ(j,i)}) / √(3d), where
//   K^r = P W_{K,r}, Q^r = P W_{Q,r}: the relative embeddings P (2K rows × D) projected per head,
//   δ(i,j) = 0 for i - j <= -K, 2K - 1 for i - j >= K, i - j + K otherwise (the paper's), so the
//   content-to-position term sees i - j clipped to [-K, K-1] and the position-to-content term
//   sees j - i clipped the same way. In our r = j - i: row δ(i,j) = clamp(K - r, 0, 2K-1) and
//   row δ(j,i) = clamp(K + r, 0, 2K-1).
// Microsoft's and Hugging Face's code index the position-to-content term with δ(i,j) instead
// (the paper's formula with Q^r's rows reversed); we follow the paper.
// Options: share_projections: true projects P with the layer's own W_Q, W_K (and their biases),
// as DeBERTa v2's share_att_key; false (default, the paper) gives every layer its own W_{Q,r},
// W_{K,r} (no bias). table_per_layer: false (default) shares P across layers, as the paper's
// code does; true gives every layer its own. bucketing: log replaces the clip by DeBERTa v2's
// log buckets: with m = K/2, offsets |s| <= m are exact and longer ones map to
// sign(s)·(m + ceil(log(|s|/m) / log((M-1)/m) · (m-1))), M = max_distance, then the row is
// clamped to [0, 2K-1] as above.
// Score convention: the scale 1/√(3d) replaces 1/√d, so the returned term is
// content·(1/√3 - 1) + (c2p + p2c)/√(3d) (position_encoding.h).
// Hook: score term (3). Fast path: products with the distinct rows, (B,H,T,2K+1), then the
// skew of relative_ops.h (log buckets: one row per reachable distance, 2T-1); direct path: the
// [T,T,d] gather. No [T,T,d] tensor on the fast path.
// Parameters: P (2K×D, once or per layer), W_{Q,r} and W_{K,r} (H·d × D each) per layer unless
// shared. Init N(0, init_std²).
// Beyond the training length: offsets past the clip (or the last bucket) reuse the last rows.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/position/position_encoding.h"
#include "core/position/relative_ops.h"

namespace relpos {
namespace {

struct DebertaParams : ParamsOf<DebertaParams> {
  int64_t clip = 64;
  std::string bucketing = "clip";
  int64_t max_distance = 512;
  bool share_projections = false;
  bool table_per_layer = false;
  template <class V>
  void visit(V& v) {
    v("clip", clip, "K: relative table of 2K rows, offsets clipped to [-K, K-1]");
    v.choice("bucketing", bucketing, {"clip", "log"}, "clip offsets, or DeBERTa v2 log buckets");
    v("max_distance", max_distance, "bucketing log: the offset that reaches the last bucket");
    v("share_projections", share_projections, "project P with the layer's own W_Q, W_K");
    v("table_per_layer", table_per_layer, "one table P per layer instead of one for all");
  }
};

class DebertaImpl : public PositionEncodingImpl {
 public:
  DebertaImpl(const ModelDims& dims, const DebertaParams& p, bool direct)
      : K_(p.clip), log_(p.bucketing == "log"), max_distance_(p.max_distance), direct_(direct),
        H_(dims.heads), d_(dims.head_dim),
        scale_(1.0 / std::sqrt(3.0 * static_cast<double>(dims.head_dim))) {
    const int64_t Lt = p.table_per_layer ? dims.param_layers : 1, D = dims.width;
    table = register_parameter("table", torch::randn({Lt, 2 * K_, D}) * dims.init_std);  // (Lt,2K,D)
    if (!p.share_projections) {
      const int64_t L = dims.param_layers, Hd = H_ * d_;
      w_q_r = register_parameter("w_q_r", torch::randn({L, Hd, D}) * dims.init_std);  // (L,Hd,D)
      w_k_r = register_parameter("w_k_r", torch::randn({L, Hd, D}) * dims.init_std);  // (L,Hd,D)
    }
  }
  std::string type() const override { return "deberta"; }

  // The table row for a signed offset s: i - j for the c2p term, j - i for p2c.
  int64_t row(int64_t s) const {
    int64_t b = s;
    const int64_t m = K_ / 2, a = std::abs(s);
    if (log_ && a > m) {
      const double lg = std::log(static_cast<double>(a) / m) /
                        std::log(static_cast<double>(max_distance_ - 1) / m) * (m - 1);
      b = (s < 0 ? -1 : 1) * (static_cast<int64_t>(std::ceil(lg)) + m);
    }
    return std::clamp<int64_t>(b + K_, 0, 2 * K_ - 1);
  }

  // Rows for r = j - i = -M..M: (2M+1) int64; c2p uses δ(i,j) (offset -r), p2c δ(j,i) (r).
  torch::Tensor rows(int64_t M, bool c2p, torch::Device device) const {
    std::vector<int64_t> idx;
    for (int64_t r = -M; r <= M; ++r) idx.push_back(row(c2p ? -r : r));
    return torch::tensor(idx, torch::kLong).to(device);  // (2M+1)
  }

  // Q^r and K^r of layer `layer`: (H,2K,d) each.
  std::pair<torch::Tensor, torch::Tensor> projected(const AttentionContext& ctx) {
    auto P = table[table.size(0) == 1 ? 0 : ctx.layer];  // (2K,D)
    if (!w_q_r.defined()) {
      TORCH_CHECK(ctx.project_qk, "deberta share_projections: the attention layer's projections "
                                  "are not available to the score hook");
      auto [qr, kr] = ctx.project_qk(P.unsqueeze(0));  // (1,H,2K,d) each
      return {qr[0], kr[0]};
    }
    auto split = [&](const torch::Tensor& w) {
      return torch::matmul(P, w[ctx.layer].t()).view({2 * K_, H_, d_}).permute({1, 0, 2});  // (H,2K,d)
    };
    return {split(w_q_r), split(w_k_r)};
  }

  torch::Tensor score_term(const torch::Tensor& content, const torch::Tensor& q,
                           const torch::Tensor& k, const AttentionContext& ctx) override {
    const int64_t T = q.size(2);
    // Clipped offsets need only r in [-K, K]; log buckets change up to max_distance, so every
    // reachable offset gets its row.
    const int64_t M = log_ ? std::max<int64_t>(T - 1, 1) : K_;
    auto [qr, kr] = projected(ctx);                                       // (H,2K,d) each
    auto a = kr.index_select(1, rows(M, true, q.device()));                // (H,2M+1,d)
    auto b = qr.index_select(1, rows(M, false, q.device()));               // (H,2M+1,d)
    // 1/√(3d) on the (H,2M+1,d) tables, so that the products keep q/√d (scaled_query) and k,
    // the storage the content matmul keeps, rather than scaled copies of their own; the terms
    // are summed in place (neither product keeps its output for backward).
    const double inv_sqrt3 = 1.0 / std::sqrt(3.0);
    auto term = relative_query_term(scaled_query(q, ctx), a * inv_sqrt3, M, direct_);  // c2p
    term.add_(relative_key_term(k, b * scale_, M, direct_));                           // + p2c
    return term.add_(content, inv_sqrt3 - 1.0);                                        // (B,H,T,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions& o) override {
    std::vector<ExportedTensor> out;
    out.push_back({"distances", torch::arange(-o.radius, o.radius + 1, torch::kFloat32),
                   {"distance"}});
    out.push_back({"c2p_rows", rows(o.radius, true, torch::kCPU).to(torch::kFloat32),
                   {"distance"}});
    out.push_back({"p2c_rows", rows(o.radius, false, torch::kCPU).to(torch::kFloat32),
                   {"distance"}});
    out.push_back({"table", exported_copy(table), {"layer", "row", "channel"}});
    if (w_q_r.defined()) {
      out.push_back({"w_q_r", exported_copy(w_q_r), {"layer", "output", "input"}});
      out.push_back({"w_k_r", exported_copy(w_k_r), {"layer", "output", "input"}});
    }
    return out;
  }

  torch::Tensor table, w_q_r, w_k_r;

 private:
  int64_t K_;
  bool log_;
  int64_t max_distance_;
  bool direct_;
  int64_t H_, d_;
  double scale_;
};

}  // namespace

void register_deberta(Registry& r) {
  VariantInfo v;
  v.name = "deberta";
  v.parameters = ParamScope::PerLayer;
  v.direct_path = true;
  v.exports = {"distances", "c2p_rows", "p2c_rows", "table", "w_q_r", "w_k_r"};
  v.summary = "disentangled attention q·k + q·K^r + k·Q^r over √(3d) (He et al. 2021)";
  v.make_params = [] { return std::make_shared<DebertaParams>(); };
  v.validate = [](const VariantParams& vp, const Config&, const ParamCheck& c) {
    const auto& p = static_cast<const DebertaParams&>(vp);
    const int64_t least = p.bucketing == "log" ? 2 : 1;
    if (p.clip < least)
      c.fail("clip", "out of range", std::to_string(p.clip),
             p.bucketing == "log" ? ">= 2 with bucketing: log" : ">= 1");
    if (p.bucketing == "log" && p.max_distance <= p.clip)
      c.fail("max_distance", "log buckets need a maximum distance beyond the bucket span",
             std::to_string(p.max_distance), fmt::format("> clip ({})", p.clip));
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig& cfg) {
    return std::make_shared<DebertaImpl>(d, static_cast<const DebertaParams&>(p),
                                         cfg.relative_impl == "direct");
  };
  r.add(std::move(v));
}

}  // namespace relpos
