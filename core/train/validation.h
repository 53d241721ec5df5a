// The evaluator of a training run: the snapshot probe and the validation batches, both fixed
// when the run starts, and the validation metrics at each evaluation (docs/training.md,
// "Evaluation").
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/data/task.h"
#include "core/model/model.h"

namespace relpos {

class Validation {
 public:
  // The probe: snapshots.probe_size validation rows of snapshots.probe_len tokens (task.seq_len
  // when 0); a DataError says why when the validation split has none. The batches: at most
  // train.eval_batches of train.batch_size rows (0: the whole split; a task with per-length
  // evaluation caps each length); `note` is told when they are only the first part of the split.
  Validation(const Config& cfg, const TaskData& data,
             const std::function<void(const std::string&)>& note);

  const Batch& probe() const { return probe_; }
  int64_t probe_length() const { return probe_length_; }
  const std::vector<Batch>& batches() const { return batches_; }

  // The validation metrics of `model` (eval mode and cfg.precision while it runs, training mode
  // after), or nullopt when an interrupt arrived during the evaluation: it stops between
  // batches.
  std::optional<std::map<std::string, double>> evaluate(Model& model, torch::Device device) const;

 private:
  const Config& cfg_;
  const TaskData& data_;
  int64_t probe_length_ = 0;
  Batch probe_;
  std::vector<Batch> batches_;
};

}  // namespace relpos
