// BERT masking statistics on a large sample, checked by counting.
#include <doctest/doctest.h>

#include "core/data/masking.h"
#include "core/data/tokenizer.h"

using namespace relpos;

TEST_CASE("mlm masking: 15% of non-special tokens, 80/10/10, specials never touched") {
  const int64_t V = 261;
  Rng gen(42);
  int64_t normal = 0, selected = 0, to_mask = 0, kept = 0, randomized = 0;
  for (int row = 0; row < 2000; ++row) {
    std::vector<int64_t> tokens(128);
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] =
          i % 10 == 0 ? 2 + static_cast<int64_t>(i % 3) : 5 + gen.below(V - 5);  // specials 2..4
    const std::vector<int64_t> original = tokens;
    std::vector<int64_t> targets;
    mask_row(tokens, targets, 0.15, V, gen);
    REQUIRE(targets.size() == tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (original[i] < kNumSpecial) {
        CHECK(targets[i] == -100);
        CHECK(tokens[i] == original[i]);
        continue;
      }
      ++normal;
      if (targets[i] == -100) {
        CHECK(tokens[i] == original[i]);
        continue;
      }
      ++selected;
      CHECK(targets[i] == original[i]);
      CHECK(tokens[i] >= kNumSpecial - 1);  // [MASK] (4) or a non-special id
      if (tokens[i] == 4)
        ++to_mask;
      else if (tokens[i] == original[i])
        ++kept;
      else
        ++randomized;
    }
  }
  const double rate = static_cast<double>(selected) / normal;
  CHECK(rate == doctest::Approx(0.15).epsilon(0.03));  // sd of the rate ~ 0.0008
  const double s = static_cast<double>(selected);
  CHECK(to_mask / s == doctest::Approx(0.8).epsilon(0.015));
  // A random replacement equals the original with probability 1/256.
  CHECK(kept / s == doctest::Approx(0.1 + 0.1 / 256).epsilon(0.05));
  CHECK(randomized / s == doctest::Approx(0.1 * 255 / 256).epsilon(0.05));
}

TEST_CASE("mlm masking: a row with content always gets a target") {
  Rng gen(1);
  for (int k = 0; k < 50; ++k) {
    std::vector<int64_t> tokens = {2, 77, 3}, targets;
    mask_row(tokens, targets, 0.01, 261, gen);
    CHECK(targets == std::vector<int64_t>{-100, 77, -100});
  }
  std::vector<int64_t> only_special = {2, 3, 0}, targets;
  mask_row(only_special, targets, 0.5, 261, gen);
  CHECK(targets == std::vector<int64_t>{-100, -100, -100});
}
