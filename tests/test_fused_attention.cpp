// The fused attention path (model.attention_impl) against the eager one on the same model:
// hidden states and every parameter's gradient, for every variant that allows it, encoder and
// decoder, without and with key padding (a row of padding only, and left padding under the
// causal mask). With LibTorch >= 2.0 the fused path is scaled_dot_product_attention; with 1.13
// it is the composed fallback of core/model/fused_attention.cpp, so CI checks the masking and
// the bias passed to the kernel, and a GPU machine checks the kernels themselves (the same cases
// on CUDA when a GPU is visible).
#include <doctest/doctest.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/version.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/model/fused_attention.h"
#include "core/position/position_registry.h"
#include "core/position/relative_ops.h"
#include "core/util/errors.h"
#include "tests/small_model.h"

using namespace relpos;

namespace {

constexpr int64_t kFusedVocab = 40;

struct Pass {
  torch::Tensor hidden;
  std::vector<torch::Tensor> grads;
};

Pass run_pass(Model& m, const torch::Tensor& tokens, const torch::Tensor& key_mask,
              const torch::Tensor& g) {
  m->zero_grad();
  ForwardOptions o;
  o.key_mask = key_mask;
  auto h = m->hidden(tokens, o);  // (B,T,D)
  (h * g).sum().backward();
  Pass p{h.detach(), {}};
  for (const auto& param : m->parameters())
    p.grads.push_back(param.grad().defined() ? param.grad().clone() : torch::zeros_like(param));
  return p;
}

double rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>() / (1.0 + b.abs().max().item<double>());
}

// Eager against fused on `device` for one variant; false when the variant has no fused path.
bool check_variant(const std::string& type, bool causal, torch::Device device) {
  Model m = test::small_model(test::small_config(type, causal, {"model.attention_impl=eager"}),
                              kFusedVocab);
  m->to(device);
  const int64_t B = 3, T = 8;
  torch::manual_seed(5);
  auto tokens = torch::randint(0, kFusedVocab, {B, T}, torch::kLong).to(device);
  auto g = torch::randn({B, T, 16}).to(device);
  auto mask = torch::ones({B, T}, torch::kBool);
  mask[0].fill_(false);                      // padding only
  mask[1].narrow(0, 5, 3).fill_(false);      // right padding
  mask[2].narrow(0, 0, 2).fill_(false);      // left padding: no visible key when causal
  mask = mask.to(device);
  std::vector<Pass> eager, fused;
  for (const auto& km : {torch::Tensor(), mask}) eager.push_back(run_pass(m, tokens, km, g));
  try {
    m->transformer->use_fused_attention(true);
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find(type.substr(0, type.find('+'))) != std::string::npos);
    return false;
  }
  CHECK(m->transformer->attention_path() == "fused");
  for (const auto& km : {torch::Tensor(), mask}) fused.push_back(run_pass(m, tokens, km, g));
  for (size_t c = 0; c < eager.size(); ++c) {
    CAPTURE(c);  // 0: no mask, 1: padded
    CHECK(torch::isfinite(fused[c].hidden).all().item<bool>());
    CHECK(rel_diff(fused[c].hidden, eager[c].hidden) < 1e-5);
    double worst = 0;
    for (size_t i = 0; i < eager[c].grads.size(); ++i) {
      CHECK(torch::isfinite(fused[c].grads[i]).all().item<bool>());
      worst = std::max(worst, rel_diff(fused[c].grads[i], eager[c].grads[i]));
    }
    CHECK(worst < 1e-4);
  }
  // The padding-only row is zero in both, as the eager path's row of zero probabilities gives.
  return true;
}

std::vector<torch::Device> devices() {
  std::vector<torch::Device> out = {torch::kCPU};
  if (torch::cuda::is_available()) out.emplace_back(torch::kCUDA);
  return out;
}

}  // namespace

TEST_CASE("fused attention: the same hidden states and gradients as the eager path") {
  std::vector<std::string> types = Registry::get().names();
  types.push_back("learned+tisa");
  types.push_back("rope+alibi");
  for (const auto& device : devices()) {
    std::vector<std::string> fused_types, refused;
    for (const auto& type : types)
      for (bool causal : {false, true}) {
        if (type == "cope" && !causal) continue;  // cope's default tables are for a causal model
        CAPTURE(type);
        CAPTURE(causal);
        CAPTURE(device);
        (check_variant(type, causal, device) ? fused_types : refused).push_back(type);
      }
    // What has a fused path and what is refused, by the variants' own declarations.
    for (const char* t : {"none", "learned", "sinusoidal", "rope", "alibi", "t5_bias", "tisa",
                          "kerple_log", "fire", "xpos", "transformer_xl", "huang_m3", "huang_m4",
                          "learned+tisa", "rope+alibi"})
      CHECK_MESSAGE(std::count(fused_types.begin(), fused_types.end(), t) == 2, t);
    for (const char* t : {"shaw", "cope", "deberta", "huang_m1", "huang_m2"})
      CHECK_MESSAGE(std::count(fused_types.begin(), fused_types.end(), t) == 0, t);
  }
}

TEST_CASE("fused attention: auto chooses it where LibTorch has it and every encoding allows it") {
  const auto path = [](const std::string& type, const std::string& impl) {
    Model m = test::small_model(test::small_config(type, false, {"model.attention_impl=" + impl}),
                                kFusedVocab);
    return m->transformer->attention_path();
  };
  const std::string avail = fused_attention_available() ? "fused" : "eager";
  CHECK(path("alibi", "auto") == avail);
  CHECK(path("learned+tisa", "auto") == avail);
  CHECK(path("huang_m4", "auto") == avail);  // a content-dependent term as the kernel's mask
  CHECK(path("shaw", "auto") == "eager");     // its value term needs the probabilities
  CHECK(path("cope", "auto") == "eager");     // reads the content scores
  CHECK(path("alibi", "eager") == "eager");
  CHECK(fused_attention_available() == (TORCH_VERSION_MAJOR >= 2));
  if (fused_attention_available()) {
    CHECK(path("huang_m4", "fused") == "fused");
    CHECK_THROWS_AS(path("cope", "fused"), ConfigError);
  } else {
    // LibTorch 1.13: asking for the kernel is a config error naming the key.
    CHECK_THROWS_WITH_AS(path("alibi", "fused"), doctest::Contains("model.attention_impl"),
                         ConfigError);
  }
}

TEST_CASE("toeplitz_bias: M_hij = f_h[j - i + T - 1], laid out as the fused kernel wants it") {
  const int64_t H = 3, T = 5;
  auto f = torch::randn({H, 2 * T - 1}, torch::kDouble);
  for (const auto& src : {f, f.t().contiguous().t()}) {  // contiguous, and a transposed layout
    auto m = toeplitz_bias(src, T);  // (1,H,T,T)
    REQUIRE(m.sizes() == torch::IntArrayRef({1, H, T, T}));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j)
          CHECK(m[0][h][i][j].item<double>() == f[h][j - i + T - 1].item<double>());
  }
  CHECK(toeplitz_bias(f, T).stride(-1) == 1);
  // The gradient sums each diagonal: d/df_h[r] of sum(M) is the number of (i, j) with j-i = r.
  auto g = f.clone().requires_grad_(true);
  toeplitz_bias(g, T).sum().backward();
  for (int64_t r = -(T - 1); r < T; ++r)
    CHECK(g.grad()[0][r + T - 1].item<double>() == static_cast<double>(T - std::abs(r)));
  // t5_bias's term (from its (buckets,H) table, transposed) comes out with a contiguous last
  // dimension: else the fused call falls to the math kernel.
  Model m = test::small_model(test::small_config("t5_bias", false), kFusedVocab);
  auto enc = m->transformer->position->encodings().front();
  auto q = torch::zeros({1, 2, 8, 8});
  auto term = enc->score_term(torch::zeros({1, 1, 1, 1}).expand({1, 2, 8, 8}), q, q, {});
  CHECK(term.stride(-1) == 1);
}
