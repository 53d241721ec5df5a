#include "core/train/prefetch.h"
#include "core/util/system.h"

#include <atomic>
#include <chrono>

namespace relpos {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

BatchPrefetcher::BatchPrefetcher(const TaskData& data, int64_t batch_size, int64_t end,
                                 bool background)
    : data_(data),
      batch_size_(batch_size),
      end_(end),
      background_(background) {}

BatchPrefetcher::~BatchPrefetcher() {
  if (pending_.valid()) pending_.wait();  // its exception, if any, is dropped with it
}

double BatchPrefetcher::seconds_built() const {
  return built_foreground_ + static_cast<double>(built_background_us_.load()) * 1e-6;
}

Batch BatchPrefetcher::get(int64_t step) {
  const auto t0 = Clock::now();
  Batch batch;
  if (pending_.valid() && pending_step_ == step) {
    std::future<Batch> ready = std::move(pending_);
    batch = ready.get();  // rethrows what building it threw
  } else {
    if (pending_.valid()) pending_.wait();  // a batch for another step: drop it
    pending_ = {};
    const auto b0 = Clock::now();
    batch = data_.train_batch(step, batch_size_);
    built_foreground_ += seconds_since(b0);
  }
  waited_ += seconds_since(t0);

  const int64_t next = step + 1;
  if (background_ && next < end_) {
    pending_step_ = next;
    // The destructor waits for this task, so `this` outlives it (the class cannot be moved).
    pending_ = std::async(std::launch::async, [this, next] {
      const auto b0 = Clock::now();
      Batch b = data_.train_batch(next, batch_size_);
      built_background_us_.fetch_add(static_cast<int64_t>(seconds_since(b0) * 1e6));
      return b;
    });
  }
  return batch;
}

}  // namespace relpos
