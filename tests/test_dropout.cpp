// bernoulli_cpu and relpos::dropout (core/model/dropout.cpp) against LibTorch: the same draws as
// its distribution code makes from the default generator element by element, the same generator
// state afterwards, and (where LibTorch's CPU kernel is its serial one: builds without MKL) the
// same masks, values and gradients as Tensor::bernoulli_ and torch::dropout.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Config.h>
#include <ATen/core/DistributionsHelper.h>
#include <doctest/doctest.h>
#include <torch/autograd.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <mutex>
#include <vector>

#include "core/model/attention_values.h"
#include "core/model/dropout.h"

using namespace relpos;

namespace {

// Sizes around the engine's 624-word state (312 draws of two words) and bernoulli_cpu's blocks
// of 4096 draws.
const std::vector<int64_t> kSizes = {0, 1, 311, 312, 313, 623, 624, 625, 4095, 4096, 4097, 9001};

// What LibTorch's own distribution code draws, one element at a time.
std::vector<bool> reference_draws(int64_t n, double p) {
  auto* gen = at::check_generator<at::CPUGeneratorImpl>(at::detail::getDefaultCPUGenerator());
  std::lock_guard<std::mutex> lock(gen->mutex_);
  std::vector<bool> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    at::bernoulli_distribution<double> bernoulli(p);
    out[static_cast<size_t>(i)] = bernoulli(gen) != 0.0;
  }
  return out;
}

}  // namespace

TEST_CASE("dropout: bernoulli_cpu makes LibTorch's draws and leaves the generator where they do") {
  for (double p : {0.0, 0.1, 0.5, 0.9, 1.0}) {
    for (int64_t n : kSizes) {
      CAPTURE(p);
      CAPTURE(n);
      torch::manual_seed(11);
      torch::rand({n % 5});  // start inside a state, not at a fresh seed
      auto expected = reference_draws(n, p);
      auto next_expected = torch::rand({8});
      torch::manual_seed(11);
      torch::rand({n % 5});
      std::vector<char> got(static_cast<size_t>(n) + 1);
      bernoulli_cpu(reinterpret_cast<bool*>(got.data()), n, p);
      int64_t differ = 0;
      for (int64_t i = 0; i < n; ++i) differ += (got[i] != 0) != expected[i];
      CHECK(differ == 0);
      CHECK(torch::equal(torch::rand({8}), next_expected));
    }
  }
}

TEST_CASE("dropout: the share of true draws is p") {
  torch::manual_seed(3);
  const int64_t n = 200000;
  for (double p : {0.1, 0.5}) {
    auto mask = bernoulli_mask({n}, p, torch::TensorOptions());
    const double count = mask.sum().item<double>();
    const double sd = std::sqrt(n * p * (1 - p));
    CHECK(std::abs(count - n * p) < 5 * sd);
  }
}

TEST_CASE("dropout: outside training, and p = 0, the input itself") {
  auto x = torch::randn({4, 5});
  CHECK(relpos::dropout(x, 0.3, false).is_same(x));
  CHECK(relpos::dropout(x, 0.0, true).is_same(x));
}

#if !AT_MKL_ENABLED()
// Without MKL LibTorch's CPU bernoulli_ is the serial kernel that bernoulli_cpu follows, so the
// results must be bit for bit those of LibTorch's own functions.
TEST_CASE("dropout: the masks, values and gradients of bernoulli_ and torch::dropout") {
  for (int64_t n : kSizes) {
    CAPTURE(n);
    torch::manual_seed(5);
    auto expected = torch::empty({n}, torch::kBool).bernoulli_(0.1);
    auto next_expected = torch::rand({4});
    torch::manual_seed(5);
    auto got = bernoulli_mask({n}, 0.1, torch::TensorOptions());
    CHECK(torch::equal(got, expected));
    CHECK(torch::equal(torch::rand({4}), next_expected));
  }
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    for (bool transposed : {false, true}) {
      CAPTURE(dtype);
      CAPTURE(transposed);
      torch::manual_seed(8);
      auto base = torch::randn({3, 7, 97}, dtype);  // 2037 elements
      auto x = (transposed ? base.transpose(0, 2) : base).requires_grad_(true);
      auto w = torch::randn(x.sizes(), dtype);
      torch::manual_seed(21);
      auto a = torch::dropout(x, 0.1, true);
      auto ga = torch::autograd::grad({(a * w).sum()}, {x})[0];
      auto next_a = torch::rand({4});
      torch::manual_seed(21);
      auto b = relpos::dropout(x, 0.1, true);
      auto gb = torch::autograd::grad({(b * w).sum()}, {x})[0];
      CHECK(torch::equal(a, b));
      CHECK(torch::equal(ga, gb));
      CHECK(torch::equal(torch::rand({4}), next_a));
    }
  }
}

// The attention dropout (drop mask, probabilities zeroed and scaled in one pass, forward and
// backward) against the formula written with LibTorch's ops: z = (P ⊙ keep / (1-p))·v.
TEST_CASE("dropout: attend_values is the formula with bernoulli_'s mask, values and gradients") {
  for (double p : {0.1, 0.5}) {
    CAPTURE(p);
    torch::manual_seed(4);
    auto probs = torch::softmax(torch::randn({2, 3, 17, 17}, torch::kDouble), -1)
                     .requires_grad_(true);                                     // (B,H,T,T)
    auto v = torch::randn({2, 3, 17, 5}, torch::kDouble).requires_grad_(true);  // (B,H,T,d)
    auto gz = torch::randn({2, 3, 17, 5}, torch::kDouble);
    auto gd = torch::randn({2, 3, 17, 17}, torch::kDouble);
    torch::manual_seed(9);
    auto drop = torch::empty(probs.sizes(), torch::kBool).bernoulli_(p);
    auto dropped_ref = probs.masked_fill(drop, 0.0) * (1.0 / (1.0 - p));
    auto z_ref = torch::matmul(dropped_ref, v);
    auto g_ref = torch::autograd::grad({(z_ref * gz).sum() + (dropped_ref * gd).sum()}, {probs, v});
    torch::manual_seed(9);
    auto [z, dropped] = attend_values(probs, v, p, true);
    auto g = torch::autograd::grad({(z * gz).sum() + (dropped * gd).sum()}, {probs, v});
    CHECK(torch::equal(dropped, dropped_ref));
    CHECK(torch::allclose(z, z_ref, 1e-12, 1e-12));
    CHECK(torch::allclose(g[0], g_ref[0], 1e-12, 1e-12));
    CHECK(torch::allclose(g[1], g_ref[1], 1e-12, 1e-12));
  }
}
#else
TEST_CASE("dropout: LibTorch with MKL draws bernoulli_ its own way") {
  MESSAGE(
      "LibTorch built with MKL: bernoulli_ may not be the serial kernel; the bit-for-bit "
      "comparison with it is skipped (the distribution-code comparison above still runs)");
}
#endif
