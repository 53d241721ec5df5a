// The model options added for imported checkpoints (model.activation, model.norm_eps,
// model.embedding_norm_before_projection, model.segment_vocab 1), checked against formulas written
// out here, their defaults (today's model: exact GELU, LayerNorm epsilon 1e-5, embedding LayerNorm
// after the projection), and their config errors.
#include <doctest/doctest.h>

#include <cmath>

#include "core/config/config.h"
#include "core/model/model.h"
#include "core/util/errors.h"
#include "tests/helpers.h"

using namespace relpos;
using namespace relpos::test;

namespace {

std::string option_error(const std::vector<std::string>& sets) {
  try {
    test::base_config_with(sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

// LayerNorm over the last axis with epsilon `eps`, unit weight, zero bias.
torch::Tensor naive_norm(const torch::Tensor& x, double eps) {
  auto mu = x.mean(-1, true);
  auto var = (x - mu).pow(2).mean(-1, true);
  return (x - mu) / (var + eps).sqrt();
}

}  // namespace

TEST_CASE("model options: defaults keep exact GELU, epsilon 1e-5 and the norm after the projection") {
  const Config c = test::base_config_with(
      {"model.norm=post", "model.embedding_width=8", "model.width=16", "model.heads=2"});
  CHECK(c.model.activation == "gelu");
  CHECK(c.model.norm_eps == 1e-5);
  CHECK(!c.model.embedding_norm_before_projection);
  Model m(c, 30);
  CHECK(m->transformer->block(0)->attention_norm->options.eps() == 1e-5);
  CHECK(m->transformer->embedding_norm->options.normalized_shape() == std::vector<int64_t>{16});
  CHECK(m->lm_head->norm->options.eps() == 1e-5);
}

TEST_CASE("model options: activation gelu_tanh is the tanh approximation, gelu the exact one") {
  const auto x = torch::linspace(-4, 4, 81, torch::kFloat64);
  const double k = std::sqrt(2.0 / M_PI);
  const auto tanh_form = 0.5 * x * (1 + torch::tanh(k * (x + 0.044715 * x.pow(3))));
  const auto erf_form = 0.5 * x * (1 + torch::erf(x / std::sqrt(2.0)));
  CHECK(torch::allclose(activation(x, "gelu_tanh"), tanh_form, 0, 1e-12));
  CHECK(torch::allclose(activation(x, "gelu"), erf_form, 0, 1e-12));
  CHECK(!torch::allclose(tanh_form, erf_form, 0, 1e-6));  // the two differ: the test can fail
}

TEST_CASE("model options: norm_eps reaches every LayerNorm") {
  const Config c = test::base_config_with({"model.norm=post", "model.norm_eps=0.5", "model.width=8",
                                           "model.heads=2", "model.layers=1"});
  Model m(c, 30);
  torch::NoGradGuard g;
  const auto x = torch::randn({2, 3, 8}) * 0.3;  // small variance: epsilon 0.5 matters
  CHECK(torch::allclose(m->transformer->block(0)->ff_norm(x), naive_norm(x, 0.5), 1e-5, 1e-6));
  CHECK(torch::allclose(m->transformer->embedding_norm(x), naive_norm(x, 0.5), 1e-5, 1e-6));
  CHECK(!torch::allclose(naive_norm(x, 0.5), naive_norm(x, 1e-5), 1e-3, 1e-3));
}

TEST_CASE("model options: embedding_norm_before_projection normalises the E-wide embeddings "
          "(ALBERT)") {
  const Config c =
      test::base_config_with({"model.norm=post", "model.embedding_width=4", "model.width=8",
                              "model.heads=2", "model.embedding_norm_before_projection=true",
                              "position.type=learned", "position.learned.max_len=128"});
  Model m(c, 30);
  m->eval();
  torch::NoGradGuard g;
  auto& t = m->transformer;
  CHECK(t->embedding_norm->options.normalized_shape() == std::vector<int64_t>{4});
  const auto tokens = torch::tensor({3, 7, 9, 11}, torch::kLong).unsqueeze(0);  // (1,4)
  const auto e = t->token_embedding->weight.index_select(0, tokens[0]) +
                 t->position->encodings()[0]->embed(torch::zeros({1, 4, 4}), 0)[0];  // (4,E)
  auto expected = naive_norm(e, c.model.norm_eps) * t->embedding_norm->weight + t->embedding_norm->bias;
  expected = expected.matmul(t->embedding_projection->weight.t()) + t->embedding_projection->bias;
  CHECK(torch::allclose(t->embed(tokens, {})[0], expected, 1e-5, 1e-6));
}

TEST_CASE(
    "model options: segment embeddings add row s of the table for segment s; with "
    "segment_vocab 1 (RoBERTa) row 0 for every token") {
  for (int64_t types : {2, 1}) {
    CAPTURE(types);
    const Config c = test::base_config_with(
        {"model.segments=true", "model.segment_vocab=" + std::to_string(types), "model.width=8",
         "model.heads=2", "position.type=none"});
    Model m(c, 30);
    m->eval();
    torch::NoGradGuard g;
    auto& t = m->transformer;
    const auto tokens = torch::tensor({3, 7, 9, 11}, torch::kLong).unsqueeze(0);  // (1,4)
    ForwardOptions o;
    o.segments = torch::tensor({0, 0, 1, 1}, torch::kLong).unsqueeze(0);  // (1,4) a pair
    const auto rows = types == 2 ? o.segments[0] : torch::zeros({4}, torch::kLong);
    const auto expected = t->token_embedding->weight.index_select(0, tokens[0]) +
                          t->segment_embedding->weight.index_select(0, rows);  // (4,D)
    CHECK(torch::allclose(t->embed(tokens, o)[0], expected, 1e-6, 1e-7));
  }
}

TEST_CASE("model options: bad values are config errors naming the key") {
  CHECK(
      option_error({"model.activation=relu"})
          .find("model.activation: unknown value (got 'relu'; expected one of gelu | gelu_tanh)") !=
      std::string::npos);
  CHECK(option_error({"model.norm_eps=0"})
            .find("model.norm_eps: out of range (got 0; expected > 0)") != std::string::npos);
  CHECK(option_error({"model.norm=pre", "model.embedding_norm_before_projection=true"})
            .find("model.embedding_norm_before_projection: only a post-LN model has an embedding "
                  "LayerNorm") != std::string::npos);
  CHECK(option_error({"data.tokenizer=bpe"})
            .find("expected one of bytes | sentencepiece | wordpiece | byte_bpe") !=
        std::string::npos);
}
