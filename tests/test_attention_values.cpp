// attend_values (core/model/attention_values.h): the memory-lean dropout + values product
// against the plain formula z = (P ⊙ M / (1-p))·v with the mask M it drew, forward and gradients.
#include <doctest/doctest.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include "core/model/attention_values.h"
#include "tests/tensor_compare.h"

using namespace relpos;

TEST_CASE("attend_values: without dropout it is probs·v") {
  auto probs = torch::softmax(torch::randn({2, 3, 5, 5}, torch::kDouble), -1);
  auto v = torch::randn({2, 3, 5, 4}, torch::kDouble);
  for (bool training : {false, true}) {
    const double p = training ? 0.0 : 0.3;  // eval mode ignores p
    auto [z, dropped] = attend_values(probs, v, p, training);
    CHECK(test::max_abs_diff(z, torch::matmul(probs, v)) < 1e-12);
    CHECK(test::max_abs_diff(dropped, probs) == 0.0);
  }
}

TEST_CASE("attend_values: dropout matches the formula with its mask, values and gradients") {
  torch::manual_seed(7);
  const double p = 0.25;
  auto probs = torch::softmax(torch::randn({2, 2, 32, 32}, torch::kDouble), -1)
                   .requires_grad_(true);                                        // (B,H,T,T)
  auto v = torch::randn({2, 2, 32, 6}, torch::kDouble).requires_grad_(true);   // (B,H,T,d)
  auto [z, dropped] = attend_values(probs, v, p, true);

  // Softmax probabilities are never 0, so the mask it drew is where dropped is not 0.
  auto keep = (dropped.detach() != 0).to(torch::kDouble);  // (B,H,T,T)
  const double kept = keep.mean().item<double>();
  CHECK(kept == doctest::Approx(1.0 - p).epsilon(0.04));

  // The reference: explicit mask, explicit scale, plain matmul, on fresh leaves.
  auto probs2 = probs.detach().clone().requires_grad_(true);
  auto v2 = v.detach().clone().requires_grad_(true);
  auto dropped2 = probs2 * keep / (1.0 - p);
  auto z2 = torch::matmul(dropped2, v2);
  CHECK(test::max_abs_diff(dropped, dropped2) < 1e-12);
  CHECK(test::max_abs_diff(z, z2) < 1e-12);

  // The value hooks use `dropped` as well, so the loss weighs both outputs.
  auto gz = torch::randn(z.sizes(), torch::kDouble);
  auto gd = torch::randn(dropped.sizes(), torch::kDouble);
  auto g = torch::autograd::grad({(z * gz).sum() + (dropped * gd).sum()}, {probs, v});
  auto g2 = torch::autograd::grad({(z2 * gz).sum() + (dropped2 * gd).sum()}, {probs2, v2});
  CHECK(test::max_abs_diff(g[0], g2[0]) < 1e-12);
  CHECK(test::max_abs_diff(g[1], g2[1]) < 1e-12);
}
