// Training batches built one step ahead on a background thread, so that tokenizing, masking
// and packing batch s+1 overlaps the forward/backward of batch s instead of delaying it.
//
// Batches are pure functions of (config, step) (core/data/task.h), so building one early
// changes nothing: get(s) returns exactly data.train_batch(s, batch_size), prefetched or not.
#pragma once

#include <cstdint>
#include <atomic>
#include <future>

#include "core/data/task.h"

namespace relpos {

class BatchPrefetcher {
 public:
  // Batches of `batch_size` rows for steps below `end` (nothing is built from `end` on).
  // With `background` false every batch is built on the caller's thread when asked for.
  BatchPrefetcher(const TaskData& data, int64_t batch_size, int64_t end, bool background = true);
  ~BatchPrefetcher();  // waits for a batch still being built
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // Training batch `step`; then starts building batch step+1. A batch built for another step
  // (the caller jumped) is dropped and `step` is built now. An error from building the batch
  // (DataError, ...) is thrown here, on the caller's thread.
  Batch get(int64_t step);

  // Seconds the caller spent in get() waiting for (or building) batches, and seconds spent
  // building batches in all, since construction: waited << built means the overlap works.
  double seconds_waited() const { return waited_; }
  double seconds_built() const;

 private:
  const TaskData& data_;
  int64_t batch_size_, end_;
  bool background_;
  int64_t pending_step_ = -1;
  std::future<Batch> pending_;
  double waited_ = 0;
  double built_foreground_ = 0;
  std::atomic<int64_t> built_background_us_{0};  // written by the background thread
};

}  // namespace relpos
