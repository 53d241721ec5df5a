// The task registry: name -> every fact about a task (model head, loss, metrics, batching, probe,
// evaluation at other lengths, figure labels, data). One file per task family declares its
// entries (core/task/mlm.cpp, clm.cpp, classify.cpp, span_qa.cpp, synthetic.cpp), registered in
// one explicit function, build_task_registry() in registry.cpp. The trainer, `relpos eval`, analysis,
// figures and experiments ask the registry instead of comparing task names.
//
// Adding a task: a file here with its TaskInfo and a register function, one line in
// registry.cpp, its TaskData in core/data/ (task.h), a test, and a row in docs/data.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.h"

namespace relpos {

class TaskData;

// The output head a task puts on the transformer (core/model/heads.h), which fixes its loss:
//   Lm: cross-entropy over the positions with a target;
//   Classifier: cross-entropy of the class logits pooled at Batch::pool_index;
//   Span: (CE(start) + CE(end)) / 2 over the row's positions.
enum class HeadKind { Lm, Classifier, Span };

// The model a task needs (model.mode).
enum class ModelMode { Any, Causal, Bidirectional };

// How `relpos eval` scores a run at lengths other than the one it trained at
// (core/train/extrapolation.h).
enum class LengthEval {
  CausalStream,  // perplexity over the test stream: nonoverlapping chunks, and a sliding window
                 // with --stride
  MaskedStream,  // masked-token loss and accuracy on windows of the test stream
  Examples,      // every test example, laid out in rows of L tokens
  TaskLengths,   // the task's own test lengths (its examples come at each length)
};

// One metric of a task's evaluation, as metrics.jsonl and run.h5 name it (after valid_/test_).
struct MetricInfo {
  std::string name;          // "accuracy"
  std::string quantity;      // what it counts, for axis labels: "masked-token accuracy"
  std::string unit;          // "nats", "%"; "" for a fraction in [0, 1], a ratio or a count
  bool higher_is_better = true;
  // Whether its runs tend to split between seeds: a synthetic task's sequence counts only when
  // every output token is right, so a seed solves the task or does not, and a mean with its
  // interval would describe no run. Pooled tables list every run's value instead.
  bool split_outcomes = false;
  // "masked-token loss (nats)"; the quantity alone without a unit.
  std::string axis_label() const;
};

struct TaskInfo {
  std::string name;     // task.type
  std::string summary;  // one line: what the model learns to do
  HeadKind head = HeadKind::Lm;
  std::string loss;     // the training loss in words (its formula: HeadKind)
  // Every metric the evaluation reports, the primary one first (early stopping, analysis's
  // default metric). Metrics not listed here that any task may show: common_metric().
  std::vector<MetricInfo> metrics;
  ModelMode mode = ModelMode::Any;
  // Batching and padding: every row is task.seq_len tokens long (windows of a token stream), so
  // one layer's attention scores bound a batch's memory before the run starts; otherwise rows
  // are padded to the batch's longest (Batch::key_mask).
  bool fixed_length_rows = false;
  // Validation batches come per test length (train.eval_batches caps each length), and the
  // evaluation adds seq_accuracy@LENGTH per length.
  bool per_length_eval = false;
  // Text goes through data.tokenizer; false: the task makes its own symbols (no corpus, no
  // tokenizer model to keep).
  bool tokenized = true;
  // The snapshot probe: snapshots.probe_size validation rows of snapshots.probe_len tokens
  // (task.seq_len when 0), at least min_probe_len long; `probe` says what a row must hold.
  int64_t min_probe_len = 1;
  std::string probe = "one token";
  LengthEval length_eval = LengthEval::Examples;
  // With LengthEval::TaskLengths: what a task length counts (a figure's axis: "task length n
  // (<length_unit>)").
  std::string length_unit = "input symbols";
  // How the task is scored under this config, in a sentence for a report's notes ("" = nothing
  // beyond its metrics); may be empty.
  std::function<std::string(const Config&)> scoring_note;
  // Rules this task adds to validate() (corpus kind, lengths); may be empty.
  std::function<void(const Config&, const SourceMap*)> validate;
  // Builds the task's data (corpus, split, tokenizer): core/data/tasks.h.
  std::function<std::unique_ptr<TaskData>(const Config&)> make_data;

  const MetricInfo& primary() const { return metrics.front(); }
  // One of `metrics`, or nullptr.
  const MetricInfo* metric(const std::string& name) const;
};

class TaskRegistry {
 public:
  // The registry with every built-in task (built once).
  static const TaskRegistry& get();

  void add(TaskInfo info);  // throws std::logic_error on a duplicate name
  const TaskInfo* find(const std::string& name) const;
  // Like find(), but an unknown name throws ConfigError at `path` listing the known names.
  const TaskInfo& at(const std::string& name, const std::string& path = "task.type",
                     const SourceMap* sources = nullptr) const;
  std::vector<std::string> names() const;

 private:
  std::vector<TaskInfo> tasks_;
};

// TaskRegistry::get().at(type).
const TaskInfo& task_info(const std::string& type);

// The language-model pre-training task of a model mode (Causal: clm, Bidirectional: mlm): the
// one tokenized task with an LM head and fixed-length rows that requires `mode`. Throws
// std::logic_error when none or several are registered.
const TaskInfo& pretraining_task(ModelMode mode);

// Metrics whose meaning is the same for every task that reports them (the evaluation protocol's
// columns: ppl, ppl_sliding, loss_sliding, and loss, accuracy, seq_accuracy in general words),
// or nullptr. A task's own entry in TaskInfo::metrics says more.
const MetricInfo* common_metric(const std::string& name);

// For TaskInfo::validate: fails when data.corpus, data.valid_corpus or data.test_corpus names one
// of `unfit` (built-in corpora of another kind), saying what the task needs.
void reject_corpora(const Config& c, const SourceMap* src, const std::vector<std::string>& unfit,
                    const std::string& need);

// Loads (fetching/caching what is needed) the corpus and tokenizer of `cfg` and builds its
// task. Throws ConfigError for an unknown task, DataError naming the file and what is wrong.
std::unique_ptr<TaskData> make_task_data(const Config& cfg);

}  // namespace relpos
