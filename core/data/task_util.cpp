#include "core/data/task_util.h"

#include <algorithm>
#include <numeric>

namespace relpos {

const std::vector<int64_t>& EpochSampler::order(int64_t epoch) const {
  if (epoch != cached_epoch_) {
    cached_.resize(n_);
    std::iota(cached_.begin(), cached_.end(), 0);
    Rng rng(derive_seed({static_cast<uint64_t>(seed_), kTagEpoch, static_cast<uint64_t>(epoch)}));
    rng.shuffle(cached_);
    cached_epoch_ = epoch;
  }
  return cached_;
}

std::vector<int64_t> EpochSampler::batch(int64_t index, int64_t batch_size) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> out(batch_size);
  for (int64_t r = 0; r < batch_size; ++r) {
    const int64_t k = index * batch_size + r;
    out[r] = order(k / n_)[k % n_];
  }
  return out;
}

torch::Tensor pack_rows(const std::vector<std::vector<int64_t>>& rows, int64_t fill) {
  size_t t = 0;
  for (const auto& r : rows) t = std::max(t, r.size());
  const int64_t B = static_cast<int64_t>(rows.size());
  torch::Tensor out = torch::full({B, static_cast<int64_t>(t)}, fill, torch::kInt64);  // (B,T)
  auto a = out.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b)
    for (size_t i = 0; i < rows[b].size(); ++i) a[b][i] = rows[b][i];
  return out;
}

torch::Tensor key_mask_for(const std::vector<std::vector<int64_t>>& rows) {
  size_t t = 0, shortest = SIZE_MAX;
  for (const auto& r : rows) {
    t = std::max(t, r.size());
    shortest = std::min(shortest, r.size());
  }
  if (rows.empty() || shortest == t) return {};
  const int64_t B = static_cast<int64_t>(rows.size());
  torch::Tensor mask = torch::zeros({B, static_cast<int64_t>(t)}, torch::kBool);  // (B,T)
  for (int64_t b = 0; b < B; ++b)
    mask[b].narrow(0, 0, static_cast<int64_t>(rows[b].size())).fill_(true);
  return mask;
}

int64_t batch_count(int64_t n, int64_t batch_size, int64_t max_batches) {
  int64_t k = (n + batch_size - 1) / batch_size;
  return max_batches > 0 ? std::min(k, max_batches) : k;
}

std::vector<Batch> example_batches(int64_t n, int64_t batch_size, int64_t max_batches,
                                   const std::function<Batch(const std::vector<int64_t>&)>& make) {
  std::vector<Batch> out;
  for (int64_t b = 0; b < batch_count(n, batch_size, max_batches); ++b) {
    std::vector<int64_t> pos;
    for (int64_t k = b * batch_size; k < std::min(n, (b + 1) * batch_size); ++k) pos.push_back(k);
    out.push_back(make(pos));
  }
  return out;
}

const std::vector<int64_t>& no_stream() {
  static const std::vector<int64_t> none;
  return none;
}

const std::vector<int64_t>& split_part(const DocumentSplit& split, Split part) {
  return part == Split::Train ? split.train : part == Split::Valid ? split.valid : split.test;
}

}  // namespace relpos
