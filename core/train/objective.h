// Task losses and evaluation metrics, by the model's head kind (the task registry,
// core/task/task_registry.h, says which head and which metrics a task has).
//   Lm head: cross-entropy over positions with a target (!= -100); accuracy = correct
//     predictions / targets; a task whose metrics list ppl adds ppl = exp(loss), one that lists
//     seq_accuracy adds it (rows whose every target is right) and seq_accuracy@LENGTH.
//   Classifier: cross-entropy, accuracy, f1 and mcc from the confusion matrix of the argmax
//     predictions (2 classes: F1 of class 1 and the binary MCC; more: macro-F1 and Gorodkin's
//     R_K; edge cases in core/train/classification_metrics.h).
//   Span: (CE(start) + CE(end)) / 2; accuracy (start and end both right), em and f1 (SQuAD
//     v1.1 normalization) of the best span (best_spans, at most task.max_answer_len tokens).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/data/task.h"
#include "core/model/model.h"
#include "core/train/classification_metrics.h"

namespace relpos {

// Copies a batch to `device` (tensors only).
Batch to_device(const Batch& b, torch::Device device);

// Lm head logits only at the positions that have a target: an MLM batch predicts about 15 % of
// its positions, a sliding-window evaluation a stride's worth, and the (rows,V) vocabulary
// projection dominates at a real vocabulary size.
struct TargetLogits {
  torch::Tensor logits;   // (N,V)
  torch::Tensor targets;  // (N)
  torch::Tensor index;    // (N) flat index b*T + t of each row
};
// hidden (B,T,D) from model->hidden(); targets (B,T) with -100 where there is no target.
TargetLogits lm_logits_at_targets(Model& model, const torch::Tensor& hidden,
                                  const torch::Tensor& targets);

// Forward pass and scalar loss of one batch (the batch must be on the model's device).
torch::Tensor batch_loss(Model& model, const Batch& b);
// The number of items batch_loss() averages over: targets other than -100 (lm head), rows
// (classifier, span). Data-parallel ranks weight their gradients by it.
int64_t loss_items(Model& model, const Batch& b);

// span_qa decoding (the SQuAD v1.1 post-processing of BERT): for each row b, the span (s, e)
// with context[b].begin <= s <= e < context[b].end and e - s < max_len that maximizes
// start[b][s] + end[b][e]; only the context tokens the row shows, never [CLS], the question or
// a [SEP]. (0, 0), the [CLS] position, for a row without context tokens.
// start, end: (B,T) logits; context: B ranges (Batch::context_range).
std::vector<std::pair<int64_t, int64_t>> best_spans(const torch::Tensor& start,
                                                    const torch::Tensor& end,
                                                    const std::vector<TokenRange>& context,
                                                    int64_t max_len);

// Sums statistics over evaluation batches; result() turns them into metrics.
class MetricAccumulator {
 public:
  // `task`: a task.type (its registered metrics decide ppl and seq_accuracy; none for a name
  // the registry does not know).
  MetricAccumulator(const std::string& task, const TaskData* data, Split split);
  // Runs the model on `b` (already on the model's device) without gradients and adds it up.
  void add(Model& model, const Batch& b);
  // The metrics, and beside them what sets their sampling error over the evaluation set
  // (core/util/sampling_stats.h): `items` scored, `loss_sd` and (span QA) `f1_sd` per item,
  // `seq_items` and `seq_items@<length>` sequences.
  std::map<std::string, double> result() const;

 private:
  void add_losses(const torch::Tensor& losses);  // (N) per-item losses
  bool perplexity_ = false;         // the task reports ppl
  bool sequence_accuracy_ = false;  // the task reports seq_accuracy
  const TaskData* data_;
  Split split_;
  double loss_sum_ = 0;      // summed per-item losses
  double loss_sq_sum_ = 0;   // summed squared per-item losses (their spread)
  double loss_count_ = 0;    // items the loss is averaged over
  double correct_ = 0, total_ = 0;
  double seq_correct_ = 0, seq_total_ = 0;
  double em_sum_ = 0, f1_sum_ = 0, f1_sq_sum_ = 0, qa_count_ = 0;
  ConfusionMatrix confusion_;  // classifier: sized by the first batch's logits
  std::map<int64_t, std::pair<double, double>> by_length_;  // length -> (rows right, rows)
};

// Evaluates `batches` (in eval mode, no gradients) and returns the metrics.
std::map<std::string, double> evaluate(Model& model, const TaskData& data,
                                       const std::string& task, Split split,
                                       const std::vector<Batch>& batches, torch::Device device);

}  // namespace relpos
