// The input-embedding variants (sinusoidal, learned) against their formulas, and the T5 bucket
// function against values worked out by hand (docs/variants.md).
#include <doctest/doctest.h>
#include <torch/types.h>

#include <cmath>
#include <utility>
#include <vector>

#include "core/util/errors.h"
#include "tests/naive_attention.h"
#include "tests/variant_helpers.h"

using namespace relpos;
using namespace relpos::test;

namespace {

constexpr double kEmbedTol = 1e-12;

// Embedding width E (tiny_dims sets E = H·d; an odd E needs its own dims).
ModelDims embed_dims(int64_t E) {
  auto dims = tiny_dims(1, E, false, 1);
  dims.embed_dim = E;
  return dims;
}

}  // namespace

TEST_CASE("naive: sinusoidal embed adds scale * sin/cos(i / base^(2m/E)) at positions offset..") {
  for (int64_t E : {6, 5}) {
    for (double base : {10000.0, 100.0}) {
      for (int64_t offset : {0, 3}) {
        const double scale = offset == 0 ? 1.0 : 0.25;
        CAPTURE(E);
        CAPTURE(base);
        CAPTURE(offset);
        auto enc = make_variant("sinusoidal", embed_dims(E),
                                "{base: " + std::to_string(base) + ", scale: " +
                                    std::to_string(scale) + "}");
        const int64_t B = 2, T = 5;
        auto x = torch::randn({B, T, E}, torch::kDouble);  // (B,T,E)
        auto y = enc->embed(x, offset);                    // (B,T,E)
        auto expect = x.clone();                           // (B,T,E)
        auto X = expect.accessor<double, 3>();
        for (int64_t b = 0; b < B; ++b)
          for (int64_t t = 0; t < T; ++t)
            for (int64_t c = 0; c < E; ++c) {
              const double pos = static_cast<double>(offset + t);
              const double ang = pos / std::pow(base, static_cast<double>(c - c % 2) / E);
              X[b][t][c] += scale * (c % 2 == 0 ? std::sin(ang) : std::cos(ang));  // odd E: sin
            }
        CHECK(max_abs_diff(y, expect) < kEmbedTol);
        CHECK(enc->max_length() == -1);
      }
    }
  }
}

TEST_CASE("naive: learned embed adds table rows and past max_len errs or clamps") {
  const int64_t E = 5, B = 2, T = 4, max_len = 6;
  for (const char* beyond : {"error", "clamp"}) {
    CAPTURE(beyond);
    auto enc =
        make_variant("learned", embed_dims(E), "{max_len: 6, beyond: " + std::string(beyond) + "}");
    randomize(*enc, 1.0);
    auto table = enc->named_parameters()["table"].detach();  // (max_len,E)
    REQUIRE(table.sizes() == torch::IntArrayRef({max_len, E}));
    auto x = torch::randn({B, T, E}, torch::kDouble);  // (B,T,E)
    auto expect = [&](int64_t offset) {
      auto out = x.clone();  // (B,T,E)
      auto O = out.accessor<double, 3>();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t c = 0; c < E; ++c)
            O[b][t][c] += el(table, std::min(offset + t, max_len - 1), c);  // clamp: last row
      return out;
    };
    torch::NoGradGuard guard;
    CHECK(max_abs_diff(enc->embed(x, 0), expect(0)) < kEmbedTol);
    CHECK(max_abs_diff(enc->embed(x, 2), expect(2)) < kEmbedTol);  // reaches exactly max_len
    if (std::string(beyond) == "error") {
      CHECK(enc->max_length() == max_len);
      CHECK_THROWS_WITH_AS(
          enc->embed(x, 3),
          doctest::Contains("reaches position 7 but the learned table has max_len 6"), ConfigError);
    } else {
      CHECK(enc->max_length() == -1);
      CHECK(max_abs_diff(enc->embed(x, 3), expect(3)) < kEmbedTol);
      CHECK(max_abs_diff(enc->embed(x, 20), expect(20)) < kEmbedTol);
    }
  }
}

TEST_CASE("naive: t5 buckets at hand-checked distances (32 buckets, max distance 128)") {
  // Worked by hand from bucket(r) (t5_bias.cpp header, as in T5/Hugging Face), r = j - i.
  // Encoder: 16 buckets per sign, exact below 8, log-spaced 8..15 up to distance 128.
  // e.g. r = 12: 8 + floor(ln(12/8)/ln(128/8)·8) = 8 + floor(1.17) = 9, plus 16 since r > 0.
  const std::vector<std::pair<int64_t, int64_t>> encoder = {
      {0, 0},   {1, 17},   {-1, 1},  {7, 23},   {-7, 7},    {8, 24},   {-8, 8},   {12, 25},
      {-12, 9}, {-20, 10}, {20, 26}, {100, 31}, {-100, 15}, {200, 31}, {-200, 15}};
  // Decoder: one-sided, 32 buckets for n = max(i - j, 0), exact below 16, log 16..31 up to 128.
  // e.g. r = -20: 16 + floor(ln(20/16)/ln(128/16)·16) = 16 + floor(1.72) = 17.
  const std::vector<std::pair<int64_t, int64_t>> decoder = {
      {0, 0},    {5, 0},    {200, 0},   {-1, 1},    {-5, 5},   {-15, 15},
      {-16, 16}, {-20, 17}, {-100, 30}, {-127, 31}, {-200, 31}};
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    auto enc = make_variant("t5_bias", tiny_dims(2, 4, causal), "{}");
    ExportOptions opts;
    opts.radius = 200;
    torch::Tensor buckets;
    for (const auto& t : enc->export_tensors(opts))
      if (t.name == "buckets") buckets = t.value;  // (2R+1)
    REQUIRE(buckets.defined());
    for (const auto& [r, expected] : causal ? decoder : encoder) {
      CAPTURE(r);
      CHECK(buckets[r + opts.radius].item<double>() == static_cast<double>(expected));
    }
  }
}
