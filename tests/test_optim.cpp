// The optimizer's schedule and gradient clipping (core/train/optim.h) against hand-computed
// values and the definition of the global norm, √(Σ_p ‖∇p‖²), written out here.
#include <doctest/doctest.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>

#include <cmath>
#include <vector>

#include "core/config/config.h"
#include "core/io/checkpoint.h"
#include "core/train/optim.h"

using namespace relpos;

namespace {

TrainConfig schedule(int64_t steps, double warmup, double lr) {
  TrainConfig c;
  c.steps = steps;
  c.warmup = warmup;
  c.lr = lr;
  return c;
}

// Two linear layers with gradients set by hand: 4·3 + 3 + 3·2 + 2 = 23 values.
struct TwoLayers {
  torch::nn::Sequential net{torch::nn::Linear(4, 3), torch::nn::Linear(3, 2)};
  std::vector<torch::Tensor> grads;
  explicit TwoLayers(double scale) {
    torch::manual_seed(5);
    for (auto& p : net->parameters()) {
      p.mutable_grad() = torch::randn(p.sizes(), torch::kFloat32) * scale;
      grads.push_back(p.grad().clone());
    }
  }
  // √(Σ g²) over every value, in double, from the copies taken before any clipping.
  double norm_before() const {
    double sq = 0;
    for (const auto& g : grads) {
      const auto flat = g.to(torch::kDouble).flatten();  // (n)
      for (int64_t i = 0; i < flat.size(0); ++i)
        sq += flat[i].item<double>() * flat[i].item<double>();
    }
    return std::sqrt(sq);
  }
  double norm_now() {
    double sq = 0;
    for (auto& p : net->parameters()) sq += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
    return std::sqrt(sq);
  }
};

}  // namespace

TEST_CASE("learning rate: linear warm-up over warmup·steps, then linear decay to 0") {
  // 100 steps, warm-up 0.1 -> W = 10; lr 1e-3. Warm-up: lr·(s+1)/10; decay: lr·(100−s)/90.
  const TrainConfig c = schedule(100, 0.1, 1e-3);
  CHECK(learning_rate(c, 0) == doctest::Approx(1e-4));
  CHECK(learning_rate(c, 4) == doctest::Approx(5e-4));
  CHECK(learning_rate(c, 9) == doctest::Approx(1e-3));  // the peak, reached at the end of warm-up
  CHECK(learning_rate(c, 10) == doctest::Approx(1e-3));
  CHECK(learning_rate(c, 55) == doctest::Approx(5e-4));
  CHECK(learning_rate(c, 99) == doctest::Approx(1e-3 / 90));
  CHECK(learning_rate(c, 100) == 0.0);
  CHECK(learning_rate(c, 130) == 0.0);  // never negative past the end (a resume with fewer steps)
  // Monotone: up to the peak, then down.
  for (int64_t s = 1; s < 100; ++s) {
    CAPTURE(s);
    if (s < 10) {
      CHECK(learning_rate(c, s) > learning_rate(c, s - 1));
    } else {
      CHECK(learning_rate(c, s) <= learning_rate(c, s - 1));
    }
  }

  // warmup 0: W = 1, so step 0 already has the peak, then lr·(10−s)/9.
  const TrainConfig none = schedule(10, 0.0, 2.0);
  CHECK(learning_rate(none, 0) == doctest::Approx(2.0));
  CHECK(learning_rate(none, 1) == doctest::Approx(2.0));
  CHECK(learning_rate(none, 5) == doctest::Approx(2.0 * 5 / 9));

  // A fractional W (30 steps · 0.05 = 1.5): warm-up 1/1.5 of lr, then the peak, never above it.
  const TrainConfig frac = schedule(30, 0.05, 1.0);
  CHECK(learning_rate(frac, 0) == doctest::Approx(1.0 / 1.5));
  CHECK(learning_rate(frac, 1) == doctest::Approx(1.0));
  CHECK(learning_rate(frac, 2) == doctest::Approx(28.0 / 28.5));
}

TEST_CASE("learning rate: set_learning_rate reaches every parameter group") {
  torch::nn::Linear lin(3, 2);
  TrainConfig c;
  c.lr = 0.5;
  auto opt = make_optimizer(*lin, c);
  REQUIRE(opt->param_groups().size() == 2);  // decayed weights, undecayed biases
  set_learning_rate(*opt, 0.125);
  for (auto& g : opt->param_groups()) CHECK(g.options().get_lr() == 0.125);
}

TEST_CASE(
    "gradient clipping: a global norm above the limit becomes the limit, in the same direction") {
  TwoLayers m(/*scale=*/3.0);
  const double before = m.norm_before();
  REQUIRE(before > 2.0);  // 23 values of N(0, 9): far above the limit below
  const double returned = clip_gradients(*m.net, 2.0);
  CHECK(returned == doctest::Approx(before).epsilon(1e-6));  // the norm before clipping
  CHECK(m.norm_now() == doctest::Approx(2.0).epsilon(1e-5));
  // Every gradient scaled by the same factor 2/before (LibTorch adds 1e-6 to the norm).
  const double factor = 2.0 / (before + 1e-6);
  size_t i = 0;
  for (auto& p : m.net->parameters()) {
    CHECK(torch::allclose(p.grad(), m.grads[i] * factor, 1e-5, 1e-7));
    ++i;
  }
}

TEST_CASE(
    "gradient clipping: a norm under the limit, or clipping off, leaves the gradients alone") {
  TwoLayers small(/*scale=*/0.01);
  const double before = small.norm_before();
  REQUIRE(before < 1.0);
  CHECK(clip_gradients(*small.net, 1.0) == doctest::Approx(before).epsilon(1e-6));
  size_t i = 0;
  for (auto& p : small.net->parameters()) CHECK(torch::equal(p.grad(), small.grads[i++]));

  TwoLayers big(/*scale=*/3.0);
  const double big_norm = big.norm_before();
  CHECK(clip_gradients(*big.net, 0.0) == doctest::Approx(big_norm).epsilon(1e-9));  // 0 = off
  i = 0;
  for (auto& p : big.net->parameters()) CHECK(torch::equal(p.grad(), big.grads[i++]));

  // A non-finite gradient gives a non-finite norm, whether clipping is on or off (the trainer
  // stops or skips the batch on it).
  TwoLayers bad(/*scale=*/1.0);
  bad.net->parameters()[1].mutable_grad()[0] = std::nan("");
  CHECK_FALSE(std::isfinite(clip_gradients(*bad.net, 0.0)));
  CHECK_FALSE(std::isfinite(clip_gradients(*bad.net, 1.0)));
}

TEST_CASE("early stopping: patience counts evaluations in a row without a strictly better value") {
  // Accuracy (higher is better), patience 3, evaluated by hand:
  //   value   1  2  2  1.5  3  3  2.5  3     (a tie is no improvement)
  //   count   0  0  1  2    0  1  2    3 -> stop after the 8th evaluation, not the 4th
  TrainState s;
  const std::vector<double> values = {1, 2, 2, 1.5, 3, 3, 2.5, 3};
  const std::vector<int64_t> counts = {0, 0, 1, 2, 0, 1, 2, 3};
  for (size_t i = 0; i < values.size(); ++i) {
    CAPTURE(i);
    record_evaluation(s, values[i], /*higher_is_better=*/true);
    CHECK(s.evals_without_improvement == counts[i]);
    CHECK(early_stop_due(s, 3) == (i == values.size() - 1));
    CHECK_FALSE(early_stop_due(s, 0));  // 0 = off
  }
  CHECK(s.best_metric == 3);

  // Perplexity (lower is better): the first value is the best until a lower one comes.
  TrainState p;
  for (double v : {50.0, 60.0, 40.0, 45.0}) record_evaluation(p, v, /*higher_is_better=*/false);
  CHECK(p.best_metric == 40.0);
  CHECK(p.evals_without_improvement == 1);
  CHECK(early_stop_due(p, 1));
  CHECK_FALSE(early_stop_due(p, 2));
}
