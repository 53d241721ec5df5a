// The task registry (core/task/task_registry.h): what each task declares is what the code does with
// it — the head the model gets, the metrics the evaluation reports, the model mode validate()
// demands — and the registry refuses unknown and duplicate names with the known ones listed.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "core/util/sampling_stats.h"
#include "core/config/config.h"
#include "core/data/task.h"
#include "core/model/model.h"
#include "core/task/task_registry.h"
#include "core/train/extrapolation.h"
#include "core/train/objective.h"
#include "core/util/errors.h"
#include "tests/data_helpers.h"

using namespace relpos;
using relpos::test::data_fixture;

namespace {

// A small config of `type` on a fixture of the kind it reads (built-in data for none).
Config config_for(const TaskInfo& t) {
  Config c;
  c.task.type = t.name;
  c.model.mode = t.mode == ModelMode::Causal ? "decoder" : "encoder";
  c.model.layers = 1;
  c.model.width = 16;
  c.model.heads = 2;
  c.model.ff_width = 16;
  c.data.tokenizer = "bytes";
  c.data.valid_fraction = c.data.test_fraction = 0.2;
  c.task.seq_len = t.tokenized ? 48 : 12;  // a synthetic probe: seq_len pairs for recall
  c.task.eval_examples = 4;
  c.task.max_len = 6;
  c.task.test_max_len = 12;
  c.task.synthetic_vocab = 16;
  switch (t.head) {
    case HeadKind::Lm:
      c.data.corpus = t.tokenized ? data_fixture("spm_train.txt") : "";
      break;
    case HeadKind::Classifier:
      c.data.corpus = data_fixture("tsv/single.tsv");
      break;
    case HeadKind::Span:
      c.data.corpus = data_fixture("squad/good.json");
      c.data.valid_fraction = c.data.test_fraction = 0;  // a few articles: all for training
      break;
  }
  validate(c, nullptr);
  return c;
}

std::string task_config_error(const std::vector<std::string>& sets) {
  try {
    load_config({relpos::test::config_path("base.yaml")}, sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("tasks: every task declares its metrics, the primary first, losses lower-is-better") {
  const auto names = TaskRegistry::get().names();
  REQUIRE(names.size() >= 10);  // mlm, clm, classify, span_qa and the six synthetic tasks
  for (const auto& name : names) {
    CAPTURE(name);
    const TaskInfo& t = task_info(name);
    CHECK(t.name == name);
    CHECK_FALSE(t.summary.empty());
    CHECK_FALSE(t.loss.empty());
    REQUIRE_FALSE(t.metrics.empty());
    CHECK(&t.primary() == &t.metrics.front());
    std::set<std::string> seen;
    for (const auto& m : t.metrics) {
      CAPTURE(m.name);
      CHECK(seen.insert(m.name).second);
      CHECK(t.metric(m.name) == &m);
      // A loss or a perplexity is better when lower; every other metric here counts hits.
      CHECK(m.higher_is_better == !(m.name == "loss" || m.name == "ppl"));
      CHECK_FALSE(m.axis_label().empty());
    }
    CHECK(t.make_data);
  }
  CHECK(task_info("mlm").metric("loss")->axis_label() == "masked-token loss (nats)");
  CHECK(task_info("span_qa").primary().axis_label() == "F1 (%)");
  CHECK(common_metric("ppl_sliding")->axis_label() == "perplexity (sliding window)");
  CHECK(common_metric("em") == nullptr);
}

TEST_CASE("tasks: the model gets the head its task names, and evaluation reports its metrics") {
  for (const auto& name : TaskRegistry::get().names()) {
    CAPTURE(name);
    const TaskInfo& t = task_info(name);
    const Config c = config_for(t);
    const auto data = make_task_data(c);
    torch::manual_seed(1);
    Model model(c, data->vocab_size());
    CHECK(model->kind() == t.head);
    const char* head = t.head == HeadKind::Lm           ? "lm_head"
                       : t.head == HeadKind::Classifier ? "classifier_head"
                                                        : "span_head";
    bool has_head = false;
    for (const auto& p : model->named_parameters()) has_head |= p.key().rfind(head, 0) == 0;
    CHECK(has_head);

    // The metrics of an evaluation are the declared ones (plus seq_accuracy@N per test length
    // for a task evaluated per length), no more, no fewer; beside them come the statistics of
    // their sampling error (items, loss_sd, ...: core/util/sampling_stats.h), which are not
    // metrics and must each belong to a declared metric's evaluation.
    // The training split, which every fixture fills (the synthetic tasks: their test lengths).
    const Split split = t.per_length_eval ? Split::Valid : Split::Train;
    const auto batches = data->eval_batches(split, 4, 2);
    REQUIRE_FALSE(batches.empty());
    const auto metrics = evaluate(model, *data, name, split, batches, torch::kCPU);
    std::set<std::string> reported, declared, sampling;
    bool per_length = false;
    for (const auto& [k, v] : metrics) {
      if (k.find('@') != std::string::npos) {
        per_length = true;
        continue;
      }
      if (is_sampling_statistic(k)) {
        sampling.insert(k);
        continue;
      }
      reported.insert(k);
    }
    for (const auto& m : t.metrics) declared.insert(m.name);
    CHECK(reported == declared);
    // Every evaluation says how many items it scored; a mean loss says its per-item spread.
    CHECK(sampling.count("items") == 1);
    if (declared.count("loss")) CHECK(sampling.count("loss_sd") == 1);
    CHECK(per_length == t.per_length_eval);
  }
}

TEST_CASE("tasks: the model mode, the probe and the default lengths come from the registry") {
  for (const auto& name : TaskRegistry::get().names()) {
    CAPTURE(name);
    const TaskInfo& t = task_info(name);
    const Config c = config_for(t);
    // eval's default lengths: the task's own test lengths, else 1x, 2x and 4x task.seq_len.
    const auto o = extrapolation_options(c);
    const int64_t T = c.task.seq_len;
    if (t.length_eval == LengthEval::TaskLengths)
      CHECK(o.lengths.empty());
    else
      CHECK(o.lengths == std::vector<int64_t>{T, 2 * T, 4 * T});
  }
  CHECK(task_config_error({"task.type=clm", "model.mode=encoder"})
            .find("task.type: the clm task needs a causal model (got 'clm' with model.mode "
                  "encoder; expected model.mode: decoder)") != std::string::npos);
  CHECK(task_config_error({"task.type=span_qa", "model.mode=decoder", "data.corpus=wordnet_qa"})
            .find("task.type: this task needs a bidirectional model (got 'span_qa' with "
                  "model.mode decoder; expected model.mode: encoder)") != std::string::npos);
  CHECK(task_config_error({"task.type=mlm", "snapshots.probe_len=1"})
            .find("snapshots.probe_len: too short for an mlm probe ([CLS] and at least one text "
                  "token) (got 1; expected >= 2, or 0 for task.seq_len)") != std::string::npos);
}

TEST_CASE(
    "tasks: recall counts key-value pairs and says how it is scored; the others say nothing") {
  for (const auto& name : TaskRegistry::get().names()) {
    CAPTURE(name);
    const TaskInfo& t = task_info(name);
    CHECK(t.length_unit == (name == "recall" ? "key-value pairs" : "input symbols"));
    CHECK(static_cast<bool>(t.scoring_note) == (name == "recall"));
  }
  const TaskInfo& recall = task_info("recall");
  Config c = config_for(recall);
  c.task.recall_queries = 1;
  CHECK(recall.scoring_note(c) == "recall asks one query per example.");
  c.task.recall_queries = 8;
  CHECK(recall.scoring_note(c) ==
        "recall asks 8 queries (every key when n is smaller) per example, and a sequence counts "
        "as right when every value is.");
  c.task.recall_queries = 0;
  CHECK(recall.scoring_note(c) ==
        "recall asks for the value of every key per example, and a sequence counts as right when "
        "every value is.");
}

TEST_CASE("tasks: an unknown task lists the known ones, and a name registered twice is refused") {
  std::string known;
  for (const auto& n : TaskRegistry::get().names()) known += (known.empty() ? "" : " | ") + n;
  CHECK(task_config_error({"task.type=translate"})
            .find("task.type: unknown value (got 'translate'; expected one of " + known + ")") !=
        std::string::npos);
  CHECK_THROWS_WITH_AS(task_info("translate"),
                       doctest::Contains("task.type: unknown value (got 'translate'"),
                       ConfigError);

  TaskRegistry r;
  TaskInfo t = task_info("copy");
  r.add(t);
  CHECK_THROWS_WITH_AS(r.add(t), "task registered twice: copy", std::logic_error);
  t.name = "nothing_to_report";
  t.metrics.clear();
  CHECK_THROWS_WITH_AS(r.add(t), "task without metrics: nothing_to_report", std::logic_error);
}

TEST_CASE("tasks: the pre-training task of a model mode is the LM task that requires it") {
  // An imported checkpoint's config names the objective it was pre-trained with.
  const TaskInfo& causal = pretraining_task(ModelMode::Causal);
  const TaskInfo& bidirectional = pretraining_task(ModelMode::Bidirectional);
  CHECK(causal.name == "clm");
  CHECK(bidirectional.name == "mlm");
  CHECK(causal.head == HeadKind::Lm);
  CHECK(bidirectional.mode == ModelMode::Bidirectional);
  CHECK_THROWS_AS(pretraining_task(ModelMode::Any), std::logic_error);
}
