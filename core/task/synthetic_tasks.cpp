// The synthetic tasks of length generalization: copy, reverse, sort, shift, recall,
// marker_distance (their sequences: core/data/synthetic_sequences.h). Training lengths are
// [task.min_len, task.max_len], test lengths reach task.test_max_len; the data are the task's
// own symbols, no corpus and no tokenizer.
//   head: Lm (the output is predicted at its positions: [MASK]s for encoders, teacher forcing
//     for decoders)
//   loss: cross-entropy over the output positions
//   metrics: sequence accuracy (every output token right; primary), token accuracy, loss; and
//     seq_accuracy@N per test length
//   other lengths: the task's own test lengths (task.eval_lengths)
#include <fmt/format.h>

#include <memory>

#include "core/data/tasks.h"
#include "core/task/task_registry.h"

namespace relpos {

namespace {

// A synthetic task generates its data: no file may be given for its validation or test split.
void reject_files(const Config& c, const SourceMap* src) {
  const DataConfig& d = c.data;
  for (const auto& [key, corpus] : {std::pair<const char*, const std::string&>{
                                        "data.valid_corpus", d.valid_corpus},
                                    {"data.test_corpus", d.test_corpus}})
    if (!corpus.empty())
      config_fail(src, key, "the synthetic tasks generate their own data",
                  fmt::format("'{}' for task '{}'", corpus, c.task.type), "\"\" (no file)");
}

// Every recall example at a length needs that many distinct keys.
void check_recall(const Config& c, const SourceMap* src) {
  const TaskConfig& t = c.task;
  if (t.synthetic_vocab < t.test_max_len)
    config_fail(src, "task.synthetic_vocab", "recall needs a distinct key per pair at every length",
                fmt::format("{} symbols with test_max_len {}", t.synthetic_vocab, t.test_max_len),
                fmt::format(">= {} (task.test_max_len)", t.test_max_len));
  // The snapshot probe is one example at the probe length (snapshots.probe_len, or
  // task.seq_len when 0): that many pairs need as many distinct keys.
  const int64_t probe = c.snapshots.probe_len > 0 ? c.snapshots.probe_len : t.seq_len;
  if (t.synthetic_vocab < probe)
    config_fail(src, c.snapshots.probe_len > 0 ? "snapshots.probe_len" : "task.seq_len",
                "the recall probe (one example of this many key-value pairs) needs a distinct "
                "key per pair",
                fmt::format("{} pairs with task.synthetic_vocab {}", probe, t.synthetic_vocab),
                fmt::format("<= {} (task.synthetic_vocab)", t.synthetic_vocab));
}

void check_marker_distance(const Config& c, const SourceMap* src) {
  if (c.task.min_len < 2)
    config_fail(src, "task.min_len", "marker_distance needs room for two markers",
                std::to_string(c.task.min_len), ">= 2");
}

TaskInfo synthetic_task(const std::string& name, const std::string& summary,
                        void (*check)(const Config&, const SourceMap*)) {
  TaskInfo t;
  t.name = name;
  t.summary = summary;
  t.head = HeadKind::Lm;
  t.loss = "cross-entropy over the output positions";
  t.metrics = {{"seq_accuracy", "sequence accuracy", "", true, /*split_outcomes=*/true},
               {"accuracy", "token accuracy", "", true},
               {"loss", "loss", "nats per target", false}};
  t.per_length_eval = true;
  t.tokenized = false;
  t.length_eval = LengthEval::TaskLengths;
  t.validate = [check](const Config& c, const SourceMap* src) {
    if (check) check(c, src);
    reject_files(c, src);
  };
  t.make_data = [](const Config& c) { return make_synthetic_task(c); };
  return t;
}

}  // namespace

void register_synthetic(TaskRegistry& r) {
  r.add(synthetic_task("copy", "output the input symbols", nullptr));
  r.add(synthetic_task("reverse", "output the input reversed", nullptr));
  r.add(synthetic_task("sort", "output the input sorted", nullptr));
  r.add(synthetic_task("shift", "output the input rotated left by task.shift", nullptr));
  TaskInfo recall = synthetic_task("recall", "associative recall: the value of each queried key",
                                   check_recall);
  recall.length_unit = "key-value pairs";
  recall.scoring_note = [](const Config& c) {
    const int64_t q = c.task.recall_queries;
    if (q == 1) return std::string("recall asks one query per example.");
    return fmt::format(
        "recall asks {} per example, and a sequence counts as right when every value is.",
        q == 0 ? std::string("for the value of every key")
               : fmt::format("{} queries (every key when n is smaller)", q));
  };
  r.add(std::move(recall));
  r.add(synthetic_task("marker_distance", "the distance between two markers",
                       check_marker_distance));
}

}  // namespace relpos
