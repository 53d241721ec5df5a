// Helpers shared by the task implementations: seeded streams, epoch sampling, padding.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/data/rng.h"
#include "core/data/split.h"
#include "core/data/task.h"

namespace relpos {

constexpr int64_t kIgnoreIndex = -100;  // target of positions without loss

// Tags that keep the random streams of different uses apart.
enum : uint64_t {
  kTagTrain = 0x747261696eULL,
  kTagEval = 0x6576616cULL,
  kTagEpoch = 0x65706f63ULL
};

// The generator of training batch `index`: a pure function of (seed, index).
inline Rng train_rng(int64_t seed, int64_t index) {
  return Rng(derive_seed({static_cast<uint64_t>(seed), kTagTrain, static_cast<uint64_t>(index)}));
}
// The generator of evaluation item `item` of `split` (fixed by the data seed, not the run seed,
// so every run of a sweep is evaluated on the same items).
inline Rng eval_rng(int64_t data_seed, Split split, int64_t group, int64_t item) {
  return Rng(derive_seed({static_cast<uint64_t>(data_seed), kTagEval, static_cast<uint64_t>(split),
                          static_cast<uint64_t>(group), static_cast<uint64_t>(item)}));
}

// Training examples in epochs: example k of the run (k = index * B + row) is
// order(epoch)[k % n] with epoch = k / n and order(epoch) a permutation seeded by (seed, epoch).
class EpochSampler {
 public:
  EpochSampler(int64_t n, int64_t seed) : n_(n), seed_(seed) {}
  // Positions (0..n-1) of the rows of training batch `index`.
  std::vector<int64_t> batch(int64_t index, int64_t batch_size) const;

 private:
  const std::vector<int64_t>& order(int64_t epoch) const;  // caller holds mu_
  int64_t n_, seed_;
  mutable std::mutex mu_;
  mutable int64_t cached_epoch_ = -1;
  mutable std::vector<int64_t> cached_;
};

// Rows of ids -> (B,T) int64 with T the longest row, shorter rows filled with `fill`.
torch::Tensor pack_rows(const std::vector<std::vector<int64_t>>& rows, int64_t fill);
// (B,T) bool, true at real tokens; undefined when every row has the same length.
torch::Tensor key_mask_for(const std::vector<std::vector<int64_t>>& rows);

// The number of batches of `batch_size` over `n` items, capped by max_batches (0 = no cap).
int64_t batch_count(int64_t n, int64_t batch_size, int64_t max_batches);

// Evaluation batches of a task whose split is a list of examples (classify, span_qa): examples
// 0..n-1 in order, `batch_size` at a time, at most max_batches (0 = all), each made by
// `make(positions)`.
std::vector<Batch> example_batches(int64_t n, int64_t batch_size, int64_t max_batches,
                                   const std::function<Batch(const std::vector<int64_t>&)>& make);

// The token stream of a task that has none (its evaluation is by example).
const std::vector<int64_t>& no_stream();

// The documents of one part of a split.
const std::vector<int64_t>& split_part(const DocumentSplit& split, Split part);

}  // namespace relpos
