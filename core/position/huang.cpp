// huang — the general relative-position mechanism of Huang, Liang, Xu & Xiang 2020.
// Formula (r = j - i, c(r) = max(-K, min(K, r)), a a relative table per layer shared by heads):
//   e_ij = [ Σ over chosen terms ] / √d, terms from
//     qk  = q_i·k_j  (optionally times a learned scalar s per distance: s_{min(|r|,K)} for
//           scale_qk: abs, s_{c(r)} for scale_qk: signed; s initialised to 1)
//     qa  = q_i·a_{c(r)}
//     ka  = k_j·a_{c(r)}
//     qka = Σ_m q_im k_jm a_{c(r),m}
// Presets: huang_m1 = {qk, abs scale}, huang_m2 = {qk, signed scale}, huang_m3 = {qka},
// huang_m4 = {qk, qa, ka} (Hugging Face's relative_key_query when unclipped, table reversed).
// Hook: score term (3): the returned term is e - q·k/√d. Parameters per layer: a (2K+1)×d when
// any of qa/ka/qka is chosen (H×(2K+1)×d with per_head, offered by huang_m4); s (K+1 or 2K+1)
// when qk is scaled.
// Init: a ~ N(0, init_std²); when qka is chosen without qk, a = 1 + N(0, init_std²), so the
// score starts as q·k/√d instead of 0 (our choice; the paper does not say).
// Beyond the training length: distances past K reuse the clipped entries.
#include "core/position/huang.h"

#include <fmt/format.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>

#include "core/position/relative_ops.h"

namespace relpos {
namespace {

const std::vector<std::string> kTerms = {"qk", "qa", "ka", "qka"};

struct HuangParams : ParamsOf<HuangParams> {
  std::vector<std::string> terms = {"qk", "qa", "ka"};
  std::string scale_qk = "none";
  int64_t clip = 64;
  template <class V>
  void visit(V& v) {
    v("terms", terms, "score terms from qk, qa, ka, qka");
    v.choice("scale_qk", scale_qk, {"none", "abs", "signed"}, "learned scalar per distance on qk");
    v("clip", clip, "clip distance K");
  }
};

struct PresetParams : ParamsOf<PresetParams> {
  int64_t clip = 64;
  template <class V>
  void visit(V& v) {
    v("clip", clip, "clip distance K");
  }
};

// A preset that also offers one table per head (huang_m4).
struct PresetHeadParams : ParamsOf<PresetHeadParams> {
  int64_t clip = 64;
  bool per_head = false;
  template <class V>
  void visit(V& v) {
    v("clip", clip, "clip distance K");
    v("per_head", per_head, "one relative table per head instead of one shared by the heads");
  }
};

HuangSpec preset_spec(const VariantParams& vp, bool per_head_option,
                      const std::vector<std::string>& terms, const std::string& scale_qk) {
  if (per_head_option) {
    const auto& p = static_cast<const PresetHeadParams&>(vp);
    return {terms, scale_qk, p.clip, p.per_head};
  }
  return {terms, scale_qk, static_cast<const PresetParams&>(vp).clip, false};
}

// The scale term of m1/m2, content·(s − 1) with s the (T,T) scale per distance. Autograd's own
// product would keep the (B,H,T,T) content of every layer for the gradient of s; this node keeps
// q/√d and k (the tensors the content matmul keeps, scaled_query()) and recomputes content in
// backward, one q·kᵀ matmul per layer, to save one (B,H,T,T) tensor per layer
// (docs/performance.md).
struct ScaledContentTerm : public torch::autograd::Function<ScaledContentTerm> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& content,
                               const torch::Tensor& qs, const torch::Tensor& k,
                               const torch::Tensor& s) {
    ctx->save_for_backward({qs, k, s});
    return content * (s - 1.0);  // (B,H,T,T)
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &qs = saved[0], &k = saved[1], &s = saved[2];
    const torch::Tensor& g = grads[0];  // (B,H,T,T)
    torch::Tensor grad_content, grad_s;
    if (ctx->needs_input_grad(0)) grad_content = g * (s - 1.0);  // (B,H,T,T)
    if (ctx->needs_input_grad(3)) {
      auto content = torch::matmul(qs, k.transpose(-1, -2));                       // (B,H,T,T)
      grad_s = content.mul_(g).sum(torch::IntArrayRef{0, 1}).to(s.scalar_type());  // (T,T)
    }
    return {grad_content, torch::Tensor(), torch::Tensor(), grad_s};
  }
};

bool has(const std::vector<std::string>& v, const char* t) {
  return std::find(v.begin(), v.end(), t) != v.end();
}

class HuangImpl : public PositionEncodingImpl {
 public:
  HuangImpl(const ModelDims& dims, const HuangSpec& spec, bool direct, std::string type)
      : type_(std::move(type)),
        K_(spec.clip),
        direct_(direct),
        scale_(1.0 / std::sqrt(static_cast<double>(dims.head_dim))),
        qk_(has(spec.terms, "qk")),
        qa_(has(spec.terms, "qa")),
        ka_(has(spec.terms, "ka")),
        qka_(has(spec.terms, "qka")),
        scale_mode_(spec.scale_qk) {
    const int64_t R = 2 * K_ + 1;
    if (qa_ || ka_ || qka_) {
      auto init = spec.per_head
                      ? torch::randn({dims.param_layers, dims.heads, R, dims.head_dim})  // (L,H,R,d)
                      : torch::randn({dims.param_layers, R, dims.head_dim});             // (L,R,d)
      init = init * dims.init_std;
      if (qka_ && !qk_) init = init + 1.0;
      table = register_parameter("table", init);
    }
    if (qk_ && scale_mode_ != "none") {
      const int64_t n = scale_mode_ == "abs" ? K_ + 1 : R;
      scale = register_parameter("scale", torch::ones({dims.param_layers, n}));  // (L,n)
    }
  }
  std::string type() const override { return type_; }
  // qka without qk replaces the content product (huang_m3): Σ_m q k a is the score itself.
  bool can_include_content() const override { return qka_ && !qk_; }
  // Without qk and qka, or with the distance-dependent scale of qk, score_term reads content.
  FusedScores fused_scores() const override {
    return (!qk_ && !qka_) || scale.defined() ? FusedScores::unsupported
                                               : FusedScores::content_bias;
  }

  torch::Tensor score_term(const torch::Tensor& content, const torch::Tensor& q,
                           const torch::Tensor& k, const AttentionContext& ctx) override {
    // Every term is linear in q (or k): 1/√d goes on the (B,H,T,d) input rather than on a
    // (B,H,T,T) result, and terms are summed in place; each (B,H,T,T) pass costs about as much
    // as a q·kᵀ matmul on the CPU (docs/performance.md).
    torch::Tensor term;
    auto add = [&term](const torch::Tensor& t) {
      if (!term.defined()) {
        term = t;
      } else {
        term.add_(t);
      }
    };
    const bool uses_q = qa_ || qka_;
    // q/√d is the content matmul's own tensor; for k the table takes the 1/√d, so the key
    // product keeps k, which the content matmul keeps too.
    const torch::Tensor qs = uses_q ? scaled_query(q, ctx) : torch::Tensor();    // (B,H,T,d)
    if (qa_) add(relative_query_term(qs, table[ctx.layer], K_, direct_));        // (B,H,T,T)
    if (ka_) add(relative_key_term(k, table[ctx.layer] * scale_, K_, direct_));  // (B,H,T,T)
    if (qka_) {
      // Without qk the term must also take content = q·k/√d away. Σ_m q k a - q·k = Σ_m q k (a-1),
      // so the qka product with a - 1 does it without two more (B,H,T,T) passes (and their
      // gradients), which cost more than the content matmul itself. With ctx.include_content
      // attention formed no content: the product with a itself is the whole score.
      const bool minus_content = !qk_ && !ctx.include_content;
      const torch::Tensor a = minus_content ? table[ctx.layer] - 1.0 : table[ctx.layer];  // (R,d)
      add(relative_qka_term(qs, k, a, K_, direct_));                           // (B,H,T,T)
    }
    if (!qk_ && !qka_) {
      term = term.defined() ? term - content : -content;  // (B,H,T,T)
    } else if (scale.defined()) {
      // content = (q/√d)·kᵀ (core/model/attention.cpp); recomputed from q and k in backward.
      add(ScaledContentTerm::apply(content, scaled_query(q, ctx), k,
                                   distance_scale(ctx, content.size(-1), content.device())));
    }
    return term;  // (B,H,T,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions&) override {
    std::vector<ExportedTensor> out;
    out.push_back({"distances", torch::arange(-K_, K_ + 1, torch::kFloat32), {"distance"}});
    if (table.defined()) {
      std::vector<std::string> dims = {"layer", "distance", "channel"};
      if (table.dim() == 4) dims = {"layer", "head", "distance", "channel"};
      out.push_back({"table", exported_copy(table), dims});
    }
    if (scale.defined()) {
      const bool abs = scale_mode_ == "abs";
      out.push_back({"scale_distances",
                     abs ? torch::arange(0, K_ + 1, torch::kFloat32)
                         : torch::arange(-K_, K_ + 1, torch::kFloat32),
                     {"distance"}});
      out.push_back({"scale", exported_copy(scale),
                     {"layer", "distance"}});
    }
    return out;
  }

  torch::Tensor table, scale;

 private:
  // s at each (i,j): (T,T).
  torch::Tensor distance_scale(const AttentionContext& ctx, int64_t T, torch::Device device) {
    auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(device));
    auto rel = pos.unsqueeze(0) - pos.unsqueeze(1);  // (T,T) j - i
    auto idx = scale_mode_ == "abs" ? rel.abs().clamp_max(K_) : rel.clamp(-K_, K_) + K_;
    return scale[ctx.layer].index_select(0, idx.reshape({-1})).view({T, T});  // (T,T)
  }

  std::string type_;
  int64_t K_;
  bool direct_;
  double scale_;
  bool qk_, qa_, ka_, qka_;
  std::string scale_mode_;
};

}  // namespace

void validate_huang_spec(const HuangSpec& spec, const ParamCheck& check) {
  if (spec.terms.empty())
    check.fail("terms", "no score terms", "an empty list", "a subset of qk, qa, ka, qka");
  for (const auto& t : spec.terms) {
    if (!has(kTerms, t.c_str()))
      check.fail("terms", "unknown term", "'" + t + "'", "qk, qa, ka or qka");
    if (std::count(spec.terms.begin(), spec.terms.end(), t) > 1)
      check.fail("terms", "term listed twice", "'" + t + "'", "each term at most once");
  }
  if (spec.scale_qk != "none" && !has(spec.terms, "qk"))
    check.fail("scale_qk", "scales the qk term, which is not among the terms",
               "'" + spec.scale_qk + "'", "none, or add qk to terms");
  if (spec.clip < 1) check.fail("clip", "out of range", std::to_string(spec.clip), ">= 1");
  if (spec.per_head && has(spec.terms, "qka"))
    check.fail("per_head", "the qka term takes one table shared by the heads", "true",
               "false, or terms without qka");
}

std::shared_ptr<PositionEncodingImpl> make_huang(const ModelDims& dims, const HuangSpec& spec,
                                                 bool direct, const std::string& type) {
  return std::make_shared<HuangImpl>(dims, spec, direct, type);
}

void register_huang(Registry& r) {
  VariantInfo v;
  v.name = "huang";
  v.summary = "general Huang et al. 2020 mechanism: chosen terms from {qk,qa,ka,qka}";
  v.parameters = ParamScope::PerLayer;
  v.direct_path = true;
  v.exports = {"distances", "table", "scale_distances", "scale"};
  v.make_params = [] { return std::make_shared<HuangParams>(); };
  v.validate = [](const VariantParams& vp, const Config&, const ParamCheck& c) {
    const auto& p = static_cast<const HuangParams&>(vp);
    validate_huang_spec({p.terms, p.scale_qk, p.clip}, c);
  };
  v.make = [](const ModelDims& d, const VariantParams& vp, const PositionConfig& cfg) {
    const auto& p = static_cast<const HuangParams&>(vp);
    return make_huang(d, {p.terms, p.scale_qk, p.clip}, cfg.relative_impl == "direct", "huang");
  };
  r.add(std::move(v));
}

void register_huang_preset(Registry& r, const std::string& name, const std::string& summary,
                           bool provisional, std::vector<std::string> terms,
                           std::string scale_qk, bool per_head_option) {
  VariantInfo v;
  v.name = name;
  v.summary = summary;
  v.provisional = provisional;
  v.parameters = ParamScope::PerLayer;
  // The relative table's terms have the direct [T,T,d] path; a scale of q·k alone has nothing
  // to switch.
  const bool table = std::any_of(terms.begin(), terms.end(),
                                 [](const std::string& t) { return t != "qk"; });
  v.direct_path = table;
  v.exports = {"distances"};
  if (table) v.exports.push_back("table");
  if (scale_qk != "none") v.exports.insert(v.exports.end(), {"scale_distances", "scale"});
  v.make_params = [per_head_option]() -> std::shared_ptr<VariantParams> {
    if (per_head_option) return std::make_shared<PresetHeadParams>();
    return std::make_shared<PresetParams>();
  };
  v.validate = [terms, scale_qk, per_head_option](const VariantParams& vp, const Config&,
                                                  const ParamCheck& c) {
    validate_huang_spec(preset_spec(vp, per_head_option, terms, scale_qk), c);
  };
  v.make = [terms, scale_qk, name, per_head_option](const ModelDims& d, const VariantParams& vp,
                                                    const PositionConfig& cfg) {
    return make_huang(d, preset_spec(vp, per_head_option, terms, scale_qk),
                      cfg.relative_impl == "direct", name);
  };
  r.add(std::move(v));
}

}  // namespace relpos
