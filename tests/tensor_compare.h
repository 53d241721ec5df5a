// Comparing tensors in the tests.
#pragma once

#include <doctest/doctest.h>
#include <torch/types.h>

namespace relpos::test {

// The largest absolute elementwise difference of two tensors of the same shape, in float64.
inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

}  // namespace relpos::test
