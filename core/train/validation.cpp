#include "core/train/validation.h"

#include <fmt/format.h>

#include "core/task/task_registry.h"
#include "core/train/objective.h"
#include "core/util/errors.h"
#include "core/util/precision.h"
#include "core/util/signals.h"

namespace relpos {

namespace {

// Why the validation split gives no probe example, for the error that stops the run.
DataError no_probe_error(const Config& cfg, const TaskData& data, int64_t probe_len) {
  const size_t train = data.split_documents(Split::Train).size();
  const size_t valid = data.split_documents(Split::Valid).size();
  const size_t test = data.split_documents(Split::Test).size();
  if (valid == 0)
    return DataError(
        fmt::format("the validation split is empty, so there is no probe set for snapshots "
                    "(corpus '{}' splits into {} training, 0 validation and {} test documents "
                    "with data.valid_fraction {})",
                    cfg.data.corpus, train, test, cfg.data.valid_fraction),
        "a split unit is a document (a text piece, a TSV row, a SQuAD article): give more of them, "
        "a larger data.valid_fraction, or a validation file in data.valid_corpus");
  return DataError(fmt::format("the validation split ({} documents) gives no example of length {} "
                               "for the snapshot probe",
                               valid, probe_len),
                   "set snapshots.probe_len to a length the task can fill");
}

}  // namespace

Validation::Validation(const Config& cfg, const TaskData& data,
                       const std::function<void(const std::string&)>& note)
    : cfg_(cfg), data_(data) {
  probe_length_ = cfg.snapshots.probe_len > 0 ? cfg.snapshots.probe_len : cfg.task.seq_len;
  auto probes = data.eval_batches(Split::Valid, cfg.snapshots.probe_size, 1, probe_length_);
  if (probes.empty()) throw no_probe_error(cfg, data, probe_length_);
  probe_ = probes.front();
  // One batch more than asked tells whether the evaluations see the whole validation split.
  // (A per-length task caps the batches per test length: every length keeps its own.)
  const bool per_length = task_info(cfg.task.type).per_length_eval;
  const int64_t asked = cfg.train.eval_batches;
  batches_ = data.eval_batches(Split::Valid, cfg.train.batch_size,
                               asked == 0 || per_length ? asked : asked + 1);
  if (!per_length && asked > 0 && static_cast<int64_t>(batches_.size()) > asked) {
    batches_.resize(static_cast<size_t>(asked));
    int64_t rows = 0;
    for (const auto& b : batches_) rows += b.tokens.size(0);
    note(fmt::format(
        "validation: the first {} rows of the validation split per evaluation "
        "(train.eval_batches {} x train.batch_size {}); train.eval_batches=0 scores all of it",
        rows, asked, cfg.train.batch_size));
  }
}

std::optional<std::map<std::string, double>> Validation::evaluate(Model& model,
                                                                  torch::Device device) const {
  model->eval();
  const PrecisionScope precision(cfg_.precision, device);
  MetricAccumulator acc(cfg_.task.type, &data_, Split::Valid);
  for (const auto& b : batches_) {
    if (interrupt_requested()) {
      model->train();
      return std::nullopt;
    }
    acc.add(model, to_device(b, device));
  }
  model->train();
  return acc.result();
}

}  // namespace relpos
