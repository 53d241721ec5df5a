// Finite-difference gradient checks in float64 (HOUSE_STYLE tests, kind 5): central differences
// of a scalar loss against autograd, for every position parameter of every variant and for the
// layer input, in both modes and both relative paths (fast, with its custom autograd function
// for qka, and direct).
#include <doctest/doctest.h>
#include <torch/autograd.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/model/attention.h"
#include "core/model/model.h"
#include "core/position/position_encoding.h"
#include "tests/small_model.h"

using namespace relpos;
using test::small_config;

namespace {

struct Named {
  std::string name;
  torch::Tensor tensor;  // float64, contiguous, requires grad
};

// Compares autograd's gradient of loss() w.r.t. each tensor with central differences at up to
// `max_elements` entries per tensor (all of them when the tensor is small enough).
void check_gradients(const std::function<torch::Tensor()>& loss, const std::vector<Named>& inputs,
                     int64_t max_elements = 1 << 30) {
  std::vector<torch::Tensor> xs;
  for (const auto& in : inputs) {
    REQUIRE((in.tensor.scalar_type() == torch::kDouble));
    REQUIRE(in.tensor.is_contiguous());
    xs.push_back(in.tensor);
  }
  auto grads = torch::autograd::grad({loss()}, xs, {}, /*retain_graph=*/false,
                                     /*create_graph=*/false, /*allow_unused=*/true);
  torch::NoGradGuard guard;
  const double eps = 1e-6;
  for (size_t t = 0; t < inputs.size(); ++t) {
    CAPTURE(inputs[t].name);
    const auto analytic = grads[t].defined() ? grads[t].contiguous()
                                             : torch::zeros_like(inputs[t].tensor);
    double* p = inputs[t].tensor.data_ptr<double>();
    const double* g = analytic.data_ptr<double>();
    const int64_t n = inputs[t].tensor.numel();
    const int64_t step = std::max<int64_t>(1, n / max_elements);
    double worst = 0, largest = 0;
    for (int64_t i = 0; i < n; i += step) {
      const double saved = p[i];
      p[i] = saved + eps;
      const double up = loss().item<double>();
      p[i] = saved - eps;
      const double down = loss().item<double>();
      p[i] = saved;
      const double numeric = (up - down) / (2 * eps);
      worst = std::max(worst, std::abs(numeric - g[i]) / std::max(1.0, std::abs(g[i])));
      largest = std::max(largest, std::abs(g[i]));
    }
    CHECK(worst < 1e-6);
    // A gradient of zero everywhere would pass trivially: the loss must depend on the tensor.
    CHECK(largest > 1e-6);
  }
}

std::vector<Named> parameters_of(torch::nn::Module& m, const std::string& prefix) {
  std::vector<Named> out;
  for (const auto& p : m.named_parameters()) out.push_back({prefix + p.key(), p.value()});
  return out;
}

// One attention layer with `name` and the options `sets`, causal or not, on its fast or direct
// path: gradients w.r.t. the position parameters and the input.
void gradcheck_layer(const std::string& name, bool causal, const std::string& impl,
                     const std::vector<std::string>& sets) {
  const int64_t B = 2, T = 5, D = 8, H = 2;
  CAPTURE(name);
  CAPTURE(causal);
  CAPTURE(impl);
  std::vector<std::string> all = {"model.width=8", "model.heads=2", "task.seq_len=5",
                                  "position.relative_impl=" + impl,
                                  // FIRE's threshold L between the query positions 2..6: both
                                  // sides of max(L, i).
                                  "position.fire.init_threshold=4.5"};
  all.insert(all.end(), sets.begin(), sets.end());
  const Config cfg = small_config(name, causal, all);
  torch::manual_seed(3);
  auto enc = make_position_encoding(name, model_dims(cfg.model), cfg.position);
  enc->to(torch::kDouble);
  test::perturb_position(*enc);
  MultiHeadAttention attn(D, H, 0.0);
  attn->to(torch::kDouble);
  attn->eval();
  const EncodingList encodings = {enc};
  auto x = torch::randn({B, T, D}, torch::kDouble).requires_grad_(true);  // (B,T,D)
  auto w = torch::randn({B, T, D}, torch::kDouble);                       // (B,T,D)
  AttentionContext ctx;
  ctx.length = T;
  ctx.offset = 2;
  ctx.causal = causal;
  auto loss = [&] {
    auto h = enc->embed(x, ctx.offset);                                    // (B,T,D)
    return (attn(h, ctx, encodings, torch::Tensor(), nullptr) * w).sum();  // ()
  };
  auto inputs = parameters_of(*enc, name + ".");
  const bool learnable = !inputs.empty();
  inputs.push_back({"input", x});
  check_gradients(loss, inputs);
  // The registry's word on it is the truth: every variant it calls learnable has its
  // gradients checked here, and no other has parameters.
  CHECK(learnable == Registry::get().at(name).learnable());
}

}  // namespace

TEST_CASE("gradcheck: one attention layer, every variant, w.r.t. position parameters and input") {
  for (const auto& name : Registry::get().names())
    for (bool causal : {false, true})
      for (const char* impl : {"fast", "direct"}) {
        // The direct path exists only for the variants that declare one.
        if (impl == std::string("direct") && !Registry::get().at(name).direct_path) continue;
        gradcheck_layer(name, causal, impl, {});
      }
}

TEST_CASE("gradcheck: options beyond the defaults (per-head tables, deberta's forms)") {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"huang_m4", {"position.huang_m4.per_head=true", "position.huang_m4.clip=2"}},
      {"shaw", {"position.shaw.per_head=true", "position.shaw.clip=2"}},
      {"deberta", {"position.deberta.share_projections=true", "position.deberta.clip=2"}},
      {"deberta", {"position.deberta.table_per_layer=true", "position.deberta.clip=2"}},
      {"deberta",
       {"position.deberta.bucketing=log", "position.deberta.clip=4",
        "position.deberta.max_distance=5"}},
  };
  for (const auto& [name, sets] : cases) {
    CAPTURE(sets.front());
    for (bool causal : {false, true})
      for (const char* impl : {"fast", "direct"}) gradcheck_layer(name, causal, impl, sets);
  }
}

TEST_CASE("gradcheck: the small model w.r.t. its position parameters, shared and not") {
  // The whole model (embedding hook, stacked encodings, per-layer parameter sets, heads).
  for (const auto& stack : {"learned+tisa+shaw", "huang+t5_bias", "transformer_xl+rope",
                            "huang_m1+huang_m2+alibi", "huang_m3+huang_m4+sinusoidal",
                            "deberta+kerple_log+xpos", "fire+cope+kerple_power"}) {
    for (bool shared : {false, true}) {
      for (bool causal : {false, true}) {
        CAPTURE(stack);
        CAPTURE(shared);
        CAPTURE(causal);
        const Config cfg = small_config(
            stack, causal,
            {"model.width=8", "model.heads=2", "model.ff_width=8", "task.seq_len=5",
             std::string("model.share_layers=") + (shared ? "true" : "false")});
        torch::manual_seed(5);
        Model m(cfg, 11);
        m->to(torch::kDouble);
        test::perturb_position(*m->transformer->position);
        m->eval();
        auto tokens = torch::randint(0, 11, {2, 5}, torch::kLong);  // (B,T)
        auto w = torch::randn({2, 5, 11}, torch::kDouble);          // (B,T,V)
        auto loss = [&] { return (m->lm_logits(m->hidden(tokens)) * w).sum(); };
        check_gradients(loss, parameters_of(*m->transformer->position, "position."), 16);
      }
    }
  }
}
