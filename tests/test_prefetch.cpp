// BatchPrefetcher: batch s+1 is built on another thread while s trains, and what get(s)
// returns is exactly train_batch(s) whatever the order of requests.
#include <doctest/doctest.h>
#include <torch/types.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/data/tokenizer.h"
#include "core/train/prefetch.h"
#include "core/util/errors.h"

using namespace relpos;

namespace {

// A task whose training batch `s` is (rows, 3) filled with s, that records which steps it built
// and on which thread, and fails with a DataError at one step.
class RecordingTask : public TaskData {
 public:
  explicit RecordingTask(int64_t failing_step = -1) : failing_(failing_step) {}
  const Tokenizer& tokenizer() const override { return *tok_; }
  Batch train_batch(int64_t index, int64_t batch_size) const override {
    {
      std::lock_guard<std::mutex> g(mu_);
      built_.push_back(index);
      threads_.insert(std::this_thread::get_id());
      if (std::this_thread::get_id() != caller_) background_steps_.insert(index);
    }
    if (index == failing_) throw DataError("step " + std::to_string(index) + " cannot be built", "");
    Batch b;
    b.tokens = torch::full({batch_size, 3}, index, torch::kInt64);  // (B,T)
    return b;
  }
  std::vector<Batch> eval_batches(Split, int64_t, int64_t, int64_t) const override { return {}; }
  const std::vector<int64_t>& stream(Split) const override { return empty_; }
  std::string describe() const override { return "recording"; }
  std::vector<int64_t> split_documents(Split) const override { return {}; }
  std::vector<std::string> split_document_names(Split) const override { return {}; }

  std::vector<int64_t> built() const {
    std::lock_guard<std::mutex> g(mu_);
    return built_;
  }
  std::set<int64_t> background_steps() const {
    std::lock_guard<std::mutex> g(mu_);
    return background_steps_;
  }

 private:
  int64_t failing_;
  std::unique_ptr<Tokenizer> tok_ = make_bytes_tokenizer();
  std::vector<int64_t> empty_;
  std::thread::id caller_ = std::this_thread::get_id();
  mutable std::mutex mu_;
  mutable std::vector<int64_t> built_;
  mutable std::set<std::thread::id> threads_;
  mutable std::set<int64_t> background_steps_;
};

int64_t step_of(const Batch& b) {
  // Every entry holds the step it was built for.
  CHECK(b.tokens.min().item<int64_t>() == b.tokens.max().item<int64_t>());
  return b.tokens.max().item<int64_t>();
}

}  // namespace

TEST_CASE("prefetch: consecutive steps come back in order, each next one built on another thread") {
  RecordingTask task;
  {
    BatchPrefetcher batches(task, 4, 6);
    for (int64_t s = 0; s < 6; ++s) {
      const Batch b = batches.get(s);
      CHECK(step_of(b) == s);
      CHECK(b.tokens.size(0) == 4);
    }
    CHECK(batches.seconds_built() >= 0);
    CHECK(batches.seconds_waited() >= 0);
  }
  // Step 0 on the caller's thread (nothing was prefetched yet); 1..5 in the background; the
  // end (6) is never built.
  CHECK(task.built() == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(task.background_steps() == std::set<int64_t>{1, 2, 3, 4, 5});
}

TEST_CASE("prefetch: a jump (resume, another step) drops the prefetched batch and builds the one asked for") {
  RecordingTask task;
  BatchPrefetcher batches(task, 2, 100);
  CHECK(step_of(batches.get(3)) == 3);   // prefetches 4
  CHECK(step_of(batches.get(10)) == 10);  // 4 dropped, 10 built now
  CHECK(step_of(batches.get(11)) == 11);  // the prefetched one
  CHECK(step_of(batches.get(11)) == 11);  // asked again: built again, same content
}

TEST_CASE("prefetch: an error while building a batch in the background reaches the caller at that step") {
  RecordingTask task(2);
  BatchPrefetcher batches(task, 2, 10);
  CHECK(step_of(batches.get(0)) == 0);
  CHECK(step_of(batches.get(1)) == 1);  // starts building 2, which fails
  CHECK_THROWS_WITH_AS(batches.get(2), doctest::Contains("step 2 cannot be built"), DataError);
  CHECK(task.background_steps().count(2) == 1);
}

TEST_CASE("prefetch: with background off every batch is built on the caller's thread") {
  RecordingTask task;
  BatchPrefetcher batches(task, 2, 5, false);
  for (int64_t s = 0; s < 5; ++s) CHECK(step_of(batches.get(s)) == s);
  CHECK(task.background_steps().empty());
  CHECK(task.built() == std::vector<int64_t>{0, 1, 2, 3, 4});
}
