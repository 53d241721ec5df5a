// The run's live curves for TensorBoard (docs/training.md, "Live curves"): every record the
// recorder writes to metrics.jsonl also goes, as scalars, into an event file in the run folder
// (core/io/event_file.h), flushed after each record, so that `tensorboard --logdir runs/` shows
// a sweep while it trains.
//
// Tags: a metric valid_X becomes valid/X, train_X train/X, any other (lr, tokens_per_s,
// elapsed_s, skipped_batches) train/<name>. A loss (X starting with "loss") is given twice:
// X_nats as logged (nats per token, per target or per example, as the task says) and X_bits =
// X_nats / ln 2. Non-finite values (null in metrics.jsonl) are left out.
//
// Every invocation of a run writes a file of its own, which starts with a SessionLog START at the
// first step it logs: 0 for a new run, checkpoint step + 1 for --resume. TensorBoard then drops
// what an earlier invocation logged past the checkpoint (the steps metrics.jsonl drops too).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/io/event_file.h"

namespace relpos {

// The scalars of one metrics record, tag -> value, in the order of `values` (sorted by name).
std::vector<std::pair<std::string, float>> tensorboard_scalars(
    const std::map<std::string, double>& values);

class TensorBoardLog {
 public:
  // A new event file in `dir`. Throws RunError when it cannot be created.
  TensorBoardLog(const std::string& dir, int64_t first_step);
  // One metrics record at `step`. Throws RunError when it cannot be written.
  void log(int64_t step, const std::map<std::string, double>& values);
  const std::string& path() const { return file_.path(); }

 private:
  EventFileWriter file_;
};

// Removes the event files a run's invocations wrote into `dir` and those `relpos analyze` wrote
// into DIR/analysis/ (a run started again with --overwrite).
void remove_run_event_files(const std::string& dir);

}  // namespace relpos
