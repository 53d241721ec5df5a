#include "core/train/nonfinite.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/util/errors.h"

namespace relpos {

NonFiniteSteps::NonFiniteSteps(const TrainConfig& cfg, std::string dir)
    : skip_(cfg.skip_nonfinite), dir_(std::move(dir)) {
  const char* env = std::getenv("RELPOS_DEBUG_NONFINITE_STEPS");
  if (!env || !*env) return;
  std::stringstream ss(env);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0' || v < 1)
      throw ConfigError(fmt::format("RELPOS_DEBUG_NONFINITE_STEPS='{}': expected step numbers "
                                    ">= 1, comma-separated",
                                    env));
    injected_.push_back(v);
  }
}

bool NonFiniteSteps::injected(int64_t step) const {
  return std::find(injected_.begin(), injected_.end(), step) != injected_.end();
}

std::string NonFiniteSteps::describe(int64_t step, double loss, double grad_norm,
                                     bool no_targets) {
  if (no_targets)
    return fmt::format("step {}: the batch has no target token, so its loss is not finite "
                       "({}): every token of its rows is [UNK] or another special token",
                       step, loss);
  return fmt::format("step {}: the {} is not finite ({})", step,
                     std::isfinite(loss) ? "gradient norm" : "loss",
                     std::isfinite(loss) ? grad_norm : loss);
}

bool NonFiniteSteps::skip() {
  if (!skip_ || consecutive_ + 1 >= kMaxConsecutiveSkips) return false;
  ++consecutive_;
  return true;
}

void NonFiniteSteps::fail(const std::string& what, bool no_targets, int64_t last_checkpoint) const {
  // There is always one: step 0's, saved before the first step.
  const std::string kept =
      fmt::format("the last good checkpoint (step {}) is kept in {}", last_checkpoint, dir_);
  if (skip_)
    throw RunError(fmt::format("{}; {} batches in a row were not finite, so the model has "
                               "diverged; stopped; {}",
                               what, kMaxConsecutiveSkips, kept),
                   "lower train.lr or raise train.warmup, and start again with --overwrite");
  if (no_targets)
    throw DataError(fmt::format("{}; stopped; {}", what, kept),
                    "the tokenizer covers too little of the corpus: check data.vocab_file "
                    "(and data.lower_case), or set train.skip_nonfinite=true to skip such "
                    "batches");
  throw RunError(fmt::format("{}; stopped; {}", what, kept),
                 fmt::format("continue from it with a lower learning rate: relpos train "
                             "--resume --out {} --set train.lr=..., or set "
                             "train.skip_nonfinite=true to skip such batches",
                             dir_));
}

}  // namespace relpos
