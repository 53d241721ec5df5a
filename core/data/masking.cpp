#include "core/data/masking.h"

#include "core/data/task_util.h"
#include "core/data/tokenizer.h"

namespace relpos {

void mask_row(std::vector<int64_t>& tokens, std::vector<int64_t>& targets, double p,
              int64_t vocab_size, Rng& rng) {
  const SpecialTokens special;
  targets.assign(tokens.size(), kIgnoreIndex);
  std::vector<size_t> candidates;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= kNumSpecial) candidates.push_back(i);
  std::vector<size_t> chosen;
  for (size_t i : candidates)
    if (rng.bernoulli(p)) chosen.push_back(i);
  if (chosen.empty() && !candidates.empty())
    chosen.push_back(candidates[rng.below(candidates.size())]);
  for (size_t i : chosen) {
    targets[i] = tokens[i];
    const double u = rng.uniform();
    if (u < 0.8)
      tokens[i] = special.mask;
    else if (u < 0.9)
      tokens[i] = kNumSpecial + rng.below(vocab_size - kNumSpecial);
  }
}

}  // namespace relpos
