// The collaborators of train() (core/train/trainer.cpp), each on its own: the non-finite step
// policy (nonfinite.h), the validation batches and probe (validation.h), the recorder of
// metrics, run.h5 and checkpoints (recorder.h), and where the parameters start (restore.h).
// The whole trainer, resume, interrupts and failures: test_trainer, test_interrupt,
// test_run_failures.
#include <doctest/doctest.h>

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/data/task.h"
#include "core/io/run_paths.h"
#include "core/io/schema.h"
#include "core/model/fused_attention.h"
#include "core/model/model.h"
#include "core/task/task_registry.h"
#include "core/train/nonfinite.h"
#include "core/train/objective.h"
#include "core/train/optim.h"
#include "core/train/recorder.h"
#include "core/train/restore.h"
#include "core/train/trainer.h"
#include "core/train/validation.h"
#include "core/util/signals.h"
#include "tests/small_model.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what() + std::string(" | hint: ") + e.hint();
  }
  return "no error";
}

// The tiny run's config (tests/tiny_run.h) with `extra` overrides.
Config tiny_config(const TempFolder& dir, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets = tiny_run(dir.str("cache"), 20);
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_config({config_path("base.yaml")}, sets).config;
}

}  // namespace

TEST_CASE("train parts: non-finite steps are skipped up to the limit, or stop the run") {
  TrainConfig skipping;
  skipping.skip_nonfinite = true;
  NonFiniteSteps skip(skipping, "runs/x");
  for (int64_t i = 1; i < NonFiniteSteps::kMaxConsecutiveSkips; ++i) CHECK(skip.skip());
  CHECK_FALSE(skip.skip());  // the 20th in a row: the model has diverged
  skip.finite();
  CHECK(skip.skip());

  CHECK(NonFiniteSteps::describe(4, NAN, 0, false) == "step 4: the loss is not finite (nan)");
  CHECK(NonFiniteSteps::describe(4, 2.5, INFINITY, false) ==
        "step 4: the gradient norm is not finite (inf)");
  CHECK(NonFiniteSteps::describe(4, NAN, 0, true) ==
        "step 4: the batch has no target token, so its loss is not finite (nan): every token of "
        "its rows is [UNK] or another special token");

  const std::string what = "step 4: the loss is not finite (nan)";
  CHECK(error_of([&] { skip.fail(what, false, 3); }) ==
        "step 4: the loss is not finite (nan); 20 batches in a row were not finite, so the model "
        "has diverged; stopped; the last good checkpoint (step 3) is kept in runs/x | hint: lower "
        "train.lr or raise train.warmup, and start again with --overwrite");
  NonFiniteSteps stop(TrainConfig{}, "runs/x");
  CHECK_FALSE(stop.skip());
  CHECK(error_of([&] { stop.fail(what, false, 3); }) ==
        "step 4: the loss is not finite (nan); stopped; the last good checkpoint (step 3) is kept "
        "in runs/x | hint: continue from it with a lower learning rate: relpos train --resume "
        "--out runs/x --set train.lr=..., or set train.skip_nonfinite=true to skip such batches");
  CHECK_THROWS_AS(stop.fail(what, true, 3), DataError);

  ::setenv("RELPOS_DEBUG_NONFINITE_STEPS", "3,7", 1);
  const NonFiniteSteps hooked(TrainConfig{}, "runs/x");
  CHECK(hooked.injected(3));
  CHECK(hooked.injected(7));
  CHECK_FALSE(hooked.injected(4));
  ::setenv("RELPOS_DEBUG_NONFINITE_STEPS", "3,x", 1);
  CHECK(error_of([] { NonFiniteSteps(TrainConfig{}, "runs/x"); }).rfind(
            "RELPOS_DEBUG_NONFINITE_STEPS='3,x': expected step numbers >= 1, comma-separated",
            0) == 0);
  ::unsetenv("RELPOS_DEBUG_NONFINITE_STEPS");
}

TEST_CASE("train parts: validation batches, the probe, and an evaluation an interrupt cuts short") {
  TempFolder dir("parts_validation");
  const Config whole = tiny_config(dir, {"train.eval_batches=0"});
  const auto data = make_task_data(whole);
  std::vector<std::string> notes;
  auto note = [&](const std::string& m) { notes.push_back(m); };
  const Validation all(whole, *data, note);
  CHECK(notes.empty());
  CHECK(all.batches().size() == data->eval_batches(Split::Valid, 4, 0).size());
  CHECK(all.probe().tokens.size(0) == 2);   // snapshots.probe_size
  CHECK(all.probe().tokens.size(1) == 32);  // task.seq_len
  CHECK(all.probe_length() == 32);

  const Config part = tiny_config(dir, {"train.eval_batches=1", "snapshots.probe_len=16"});
  REQUIRE(all.batches().size() > 1);
  const Validation first(part, *data, note);
  CHECK(first.batches().size() == 1);
  CHECK(first.probe().tokens.size(1) == 16);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "validation: the first 4 rows of the validation split per evaluation "
                    "(train.eval_batches 1 x train.batch_size 4); train.eval_batches=0 scores "
                    "all of it");

  // The evaluation is the accumulator's over the same batches; the model ends in training mode.
  torch::manual_seed(2);
  Model model(whole, data->vocab_size());
  model->train();
  const auto valid = first.evaluate(model, torch::kCPU);
  REQUIRE(valid);
  CHECK(model->is_training());
  CHECK(*valid == evaluate(model, *data, whole.task.type, Split::Valid, first.batches(), torch::kCPU));
  install_interrupt_handlers();
  ::raise(SIGTERM);
  CHECK_FALSE(first.evaluate(model, torch::kCPU).has_value());
  CHECK(model->is_training());
  clear_interrupt();

  // No validation split, no probe: the error says why.
  const Config none = tiny_config(dir, {"data.valid_fraction=0"});
  const auto no_valid = make_task_data(none);
  CHECK(error_of([&] { Validation(none, *no_valid, note); })
            .find("the validation split is empty, so there is no probe set for snapshots") == 0);
}

TEST_CASE("train parts: the recorder writes metrics, run.h5 and checkpoints, or nothing off rank 0") {
  TempFolder dir("parts_recorder");
  const Config cfg = tiny_config(dir);
  torch::manual_seed(4);
  Model model(cfg, 300);
  auto optimizer = make_optimizer(*model, cfg.train);
  TrainState state;
  ProgressLine progress(cfg.train.steps, /*quiet=*/true);
  RecorderSetup setup{dir.str("run"), true, 2, false, to_yaml(cfg), torch::kCPU};
  fs::create_directories(setup.dir);
  {
    RunRecorder rec(setup, cfg, state, model, *optimizer, progress);
    rec.log(1, {{"train_loss", 2.5}, {"lr", 0.001}});
    CHECK(rec.snapshot_due(0));
    CHECK(rec.snapshot_due(20));
    CHECK_FALSE(rec.snapshot_due(3));  // every 10 % of 20 steps: 0, 2, 4, ...
    rec.checkpoint(1);
    CHECK(rec.last_checkpoint() == 1);
    CHECK(state.step == 1);
    CHECK(error_of([&] { rec.stop_interrupted(2, true); }) ==
          "interrupted by a signal to another rank at step 2 of 20: checkpoint saved and run.h5 "
          "closed in " + setup.dir + " | hint: continue with: relpos train --resume --out " +
          setup.dir + " (and the same --nproc)");
  }
  // run.h5: the metrics and the positional parameter count (learned 32 x 32 table; tisa
  // 3 x 5 kernels x 2 heads x 2 layers).
  auto reader = RunFileReader::open(run_h5_path(setup.dir));
  CHECK(reader->attribute("/", schema::kAttrPositionalParameters) ==
        std::to_string(32 * 32 + 3 * 5 * 2 * 2));
  // The attention path the steps took (learned+tisa: fused where LibTorch has the kernel).
  CHECK(reader->attribute("/", schema::kAttrAttention) ==
        (fused_attention_available() ? "fused" : "eager"));
  CHECK(reader->metric("train_loss").second == std::vector<double>{2.5});
  std::ifstream log(run_metrics_path(setup.dir));
  std::string line;
  REQUIRE(std::getline(log, line));
  const auto j = nlohmann::json::parse(line);
  CHECK(j["step"] == 1);
  CHECK(j["train_loss"] == 2.5);
  // The interrupt's checkpoint: step 2, the evaluation still to do.
  Model back(cfg, 300);
  auto opt2 = make_optimizer(*back, cfg.train);
  const TrainState saved = load_checkpoint(run_checkpoint_path(setup.dir), *back, *opt2);
  CHECK(saved.step == 2);
  CHECK(saved.pending_post_step);

  // Another rank: the same calls, nothing in the folder.
  TempFolder other("parts_recorder_rank1");
  RecorderSetup rank1 = setup;
  rank1.dir = other.str("run");
  rank1.main = false;
  fs::create_directories(rank1.dir);
  {
    RunRecorder rec(rank1, cfg, state, model, *optimizer, progress);
    rec.log(1, {{"train_loss", 2.5}});
    rec.checkpoint(1);
    rec.finish(1);
  }
  CHECK(fs::is_empty(rank1.dir));
}

TEST_CASE("train parts: --init-from loads by name and refuses a model that is mostly new") {
  TempFolder dir("parts_restore");
  std::vector<std::string> sets = tiny_run(dir.str("cache"), 2);
  train_here(sets, dir.str("pre"));
  std::vector<std::string> said;
  auto say = [&](const std::string& m) { said.push_back(m); };

  // The same model with another position encoding: the transformer loads, tisa is new.
  sets.push_back("position.type=learned");
  const Config same = load_config({config_path("base.yaml")}, sets).config;
  Model model(same, 261);  // the byte tokenizer's vocabulary: 5 special ids and 256 bytes
  const InitFromRecord rec = init_from_run(dir.str("pre"), *model, say);
  CHECK(rec.source == dir.str("pre"));
  CHECK(rec.initialised.empty());
  CHECK_FALSE(rec.unused.empty());  // tisa's a, b, c
  REQUIRE(said.size() == 1);
  CHECK(said[0].rfind("initialised from " + dir.str("pre") + ": ", 0) == 0);

  sets.push_back("model.width=48");
  const Config wider = load_config({config_path("base.yaml")}, sets).config;
  Model other(wider, 261);
  CHECK(error_of([&] { init_from_run(dir.str("pre"), *other, say); })
            .find("--init-from " + dir.str("pre") + ": only ") == 0);

  // --resume: only train.*, eval.* & co. may change; the rest is named.
  std::vector<std::string> resume = tiny_run(dir.str("cache"), 4);
  CHECK(check_resume_config(dir.str("pre"), load_config({config_path("base.yaml")}, resume).config) ==
        std::vector<std::string>{"train.steps: 2 -> 4"});
  // The attention path is how the steps run, not what they compute: it may change too.
  auto with_path = resume;
  with_path.push_back("model.attention_impl=eager");
  CHECK(check_resume_config(dir.str("pre"),
                            load_config({config_path("base.yaml")}, with_path).config)
            .size() == 2);  // train.steps and model.attention_impl, both allowed
  resume.push_back("model.layers=3");
  CHECK(error_of([&] {
          check_resume_config(dir.str("pre"), load_config({config_path("base.yaml")}, resume).config);
        }).find("--resume would continue the run with a different model, data or task than it "
                "started with (run.h5's config): model.layers: 2 -> 3") != std::string::npos);
}
