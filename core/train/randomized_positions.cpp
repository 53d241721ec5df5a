#include "core/train/randomized_positions.h"

#include <fmt/format.h>

#include "core/data/rng.h"
#include "core/util/errors.h"

namespace relpos {

torch::Tensor randomized_positions(int64_t seed, int64_t step, int64_t B, int64_t T, int64_t N) {
  if (T > N)
    throw ConfigError(fmt::format("position.randomized_max: a training sequence has {} tokens but "
                                  "positions are drawn from 0..{} ({} positions)",
                                  T, N - 1, N),
                      "raise position.randomized_max to at least the longest training sequence");
  // A stream tag of its own, apart from the data's random streams of the same seed and step.
  constexpr uint64_t kTag = 0x72616e64706f73ULL;  // "randpos"
  auto out = torch::empty({B, T}, torch::kLong);  // (B,T)
  auto o = out.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    Rng rng(derive_seed({static_cast<uint64_t>(seed), kTag, static_cast<uint64_t>(step),
                         static_cast<uint64_t>(b)}));
    // Algorithm S: keep position p with probability (still needed) / (still available).
    int64_t kept = 0;
    for (int64_t p = 0; p < N && kept < T; ++p)
      if (rng.below(N - p) < T - kept) o[b][kept++] = p;
  }
  return out;
}

}  // namespace relpos
