// A training step whose loss or gradient norm is not finite (docs/reliability.md): the run stops
// with an error naming the step (the last checkpoint is kept), or, with train.skip_nonfinite,
// the batch is skipped, until so many batches in a row were not finite that the parameters
// themselves must have diverged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"

namespace relpos {

class NonFiniteSteps {
 public:
  // Skipping gives up after this many non-finite batches in a row: skipping every later batch
  // would "finish" an untrained model.
  static constexpr int64_t kMaxConsecutiveSkips = 20;

  // `dir`: the run folder, named in the errors. Reads the test hook
  // $RELPOS_DEBUG_NONFINITE_STEPS ("3,7": 1-based steps whose loss is replaced by NaN; a
  // ConfigError when malformed), documented in docs/reliability.md: no real config reaches a
  // non-finite loss at a chosen step.
  NonFiniteSteps(const TrainConfig& cfg, std::string dir);

  // Whether the test hook makes step `step` (1-based) non-finite.
  bool injected(int64_t step) const;

  // What went wrong at `step` (1-based): the loss (`no_targets`: the batch had no target token
  // on any rank, so its mean loss is over nothing) or the gradient norm.
  static std::string describe(int64_t step, double loss, double grad_norm, bool no_targets);

  // After a non-finite step: true when the batch is skipped (train.skip_nonfinite, fewer than
  // kMaxConsecutiveSkips in a row, counted here).
  bool skip();
  // After a finite step: the count of skips in a row starts again.
  void finite() { consecutive_ = 0; }

  // Throws the error that stops the run: RunError (diverged, or a non-finite loss without
  // skip_nonfinite, with the resume hint) or DataError (a batch without targets: the
  // tokenizer's fault). `what`: describe()'s text; `last_checkpoint`: the step kept.
  [[noreturn]] void fail(const std::string& what, bool no_targets, int64_t last_checkpoint) const;

 private:
  bool skip_ = false;
  std::string dir_;
  std::vector<int64_t> injected_;
  int64_t consecutive_ = 0;
};

}  // namespace relpos
