// A tiny end-to-end training run: the run folder, every documented path of run.h5, the final
// weights reproducing the model's attention, determinism and resume equality.
#include <doctest/doctest.h>
#include <torch/nn/module.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/model/model.h"
#include "core/train/objective.h"
#include "core/train/progress.h"
#include "core/train/run_model.h"
#include "core/train/snapshot_capture.h"
#include "core/train/trainer.h"
#include "tests/helpers.h"
#include "tests/tiny_run.h"
#include "tests/text_file.h"

using namespace relpos;
using test::read_text;
namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// tests/tiny_run.h's run at 20 steps, with a checkpoint every 10 and snapshots at 50 %.
std::vector<std::string> tiny_overrides(const std::string& cache) {
  auto o = test::tiny_run(cache, 20);
  o.insert(o.end(), {"train.checkpoint_every=10", "snapshots.every_percent=50"});
  return o;
}

struct TrainerTempDir {
  fs::path path;
  explicit TrainerTempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("relpos_test_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TrainerTempDir() { fs::remove_all(path); }
  std::string str(const std::string& sub = "") const { return (path / sub).string(); }
};

TrainResult train_tiny(const std::string& out, const std::vector<std::string>& extra,
                       const std::string& cache, int64_t stop_after = 0, bool resume = false) {
  auto sets = tiny_overrides(cache);
  sets.insert(sets.end(), extra.begin(), extra.end());
  TrainOptions o;
  o.out_dir = out;
  o.quiet = true;
  o.stop_after = stop_after;
  o.resume = resume;
  LoadedConfig cfg = resume ? load_run_config(out, {}) : load_config({test::config_path("base.yaml")}, sets);
  return train(cfg, o);
}

std::vector<double> train_losses(const std::string& dir) {
  std::vector<double> out;
  std::ifstream in(run_metrics_path(dir));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    out.push_back(j.at("train_loss").get<double>());
  }
  return out;
}

}  // namespace

TEST_CASE("a tiny training run writes every documented part of its run folder and run.h5") {
  TrainerTempDir tmp("e2e");
  const std::string dir = tmp.str("run");
  TrainResult r = train_tiny(dir, {}, tmp.str("cache"));
  CHECK(r.finished);
  CHECK(r.steps == 20);
  CHECK(r.valid.count("loss"));
  CHECK(r.valid.count("accuracy"));
  for (const auto& f : {"config.yaml", "metrics.jsonl", "checkpoint.pt", "run.h5", "result.json"})
    CHECK_MESSAGE(fs::exists(fs::path(dir) / f), f);
  CHECK(train_losses(dir).size() == 20);

  // The stored config is the resolved config and parses back to the same thing.
  const Config stored = load_run_config(dir).config;
  CHECK(stored.position.types == std::vector<std::string>{"learned", "tisa"});
  CHECK(stored.train.steps == 20);

  auto f = RunFileReader::open(run_h5_path(dir));
  CHECK(f->schema_version() == schema::kSchemaVersion);
  CHECK(f->root_attribute(schema::kAttrPositionTypes) == "learned+tisa");
  CHECK(f->root_attribute(schema::kAttrConfig).find("learned") != std::string::npos);
  CHECK_FALSE(f->root_attribute(schema::kAttrGitCommit).empty());
  CHECK_FALSE(f->root_attribute(schema::kAttrTorchVersion).empty());
  CHECK_FALSE(f->root_attribute(schema::kAttrCreated).empty());

  auto [steps, values] = f->metric("train_loss");
  CHECK(steps.size() == 20);
  CHECK(steps.front() == 1);
  CHECK(steps.back() == 20);
  auto [vsteps, vvalues] = f->metric("valid_loss");
  CHECK(vsteps == std::vector<int64_t>{10, 20});

  const int64_t L = 2, H = 2, T = 32;
  auto probe = f->dataset("/probe/tokens");
  CHECK(probe.value.sizes() == torch::IntArrayRef({2, T}));

  CHECK(f->snapshot_steps() == std::vector<int64_t>{0, 10, 20});
  for (int64_t step : f->snapshot_steps()) {
    const std::string base = "/snapshots/step_" + std::to_string(step);
    auto att = f->dataset(base + "/attention");
    REQUIRE(att.value.sizes() == torch::IntArrayRef({L, H, T, T}));
    auto rows = att.value.to(torch::kDouble).sum(-1);  // (L,H,T)
    CHECK(torch::allclose(rows, torch::ones_like(rows), 1e-5, 1e-5));
    auto learned = f->dataset(base + "/position_scores/learned");
    CHECK(learned.value.sizes() == torch::IntArrayRef({1, H, T, T}));
    auto tisa = f->dataset(base + "/position_scores/tisa");
    CHECK(tisa.value.sizes() == torch::IntArrayRef({L, H, T, T}));
    CHECK(f->dataset(base + "/position/learned/table").value.sizes() == torch::IntArrayRef({32, 32}));
    auto fprof = f->dataset(base + "/position/tisa/f");
    CHECK(fprof.dims == std::vector<std::string>{"layer", "head", "distance"});
    CHECK(fprof.value.sizes() == torch::IntArrayRef({L, H, 101}));
  }
  // Snapshots differ as training moves the parameters.
  CHECK_FALSE(torch::equal(f->dataset("/snapshots/step_0/position/tisa/a").value,
                           f->dataset("/snapshots/step_20/position/tisa/a").value));

  // The final weights alone reproduce the model: load them into a fresh model and recompute
  // the probe-averaged attention of the last snapshot.
  torch::manual_seed(12345);
  Model fresh(stored, 261);
  {
    torch::NoGradGuard guard;
    for (auto& p : fresh->named_parameters()) {
      auto w = f->dataset("/weights/" + p.key());
      REQUIRE_MESSAGE(w.value.sizes() == p.value().sizes(), p.key());
      p.value().copy_(w.value);
    }
  }
  Batch b;
  b.tokens = probe.value.to(torch::kLong);
  auto snap = compute_snapshot(fresh, b, stored.snapshots, torch::kCPU);
  auto att20 = f->dataset("/snapshots/step_20/attention").value;
  CHECK(torch::allclose(snap.attention, att20, 1e-5, 1e-6));
}

TEST_CASE("same config and seed give the same loss curve / resuming gives the same losses") {
  TrainerTempDir tmp("resume");
  const std::string cache = tmp.str("cache");
  train_tiny(tmp.str("a"), {}, cache);
  train_tiny(tmp.str("b"), {}, cache);
  const auto a = train_losses(tmp.str("a"));
  CHECK(a == train_losses(tmp.str("b")));

  // Another seed gives another curve (the check above can fail).
  train_tiny(tmp.str("c"), {"seed=2"}, cache);
  CHECK(a != train_losses(tmp.str("c")));

  // Stop after 10 steps, then resume to 20.
  TrainResult half = train_tiny(tmp.str("d"), {}, cache, /*stop_after=*/10);
  CHECK_FALSE(half.finished);
  CHECK_FALSE(run_finished(tmp.str("d")));
  TrainResult rest = train_tiny(tmp.str("d"), {}, cache, 0, /*resume=*/true);
  CHECK(rest.finished);
  CHECK(train_losses(tmp.str("d")) == a);
}

TEST_CASE("--resume may change training settings only, and config.yaml records them") {
  TrainerTempDir tmp("resume_config");
  const std::string cache = tmp.str("cache");
  const std::string dir = tmp.str("r");
  train_tiny(dir, {"train.steps=6", "snapshots.every_percent=0"}, cache, /*stop_after=*/2);
  TrainOptions o;
  o.out_dir = dir;
  o.quiet = true;
  o.resume = true;
  // --set of a model, data or seed key: refused, naming each change.
  CHECK_THROWS_WITH_AS(train(load_run_config(dir, {"seed=7", "model.dropout=0.3"}), o),
                       doctest::Contains("than it started with (run.h5's config): model.dropout: "
                                         "0.1 -> 0.3; seed: 1 -> 7"),
                       ConfigError);
  // An edited config.yaml: refused the same way (run.h5 keeps the config the run started with).
  const std::string yaml = read_text(run_config_path(dir));
  std::string edited = yaml;
  const size_t at = edited.find("\nseed: 1\n");
  REQUIRE(at != std::string::npos);
  edited.replace(at, 9, "\nseed: 5\n");
  write_text(run_config_path(dir), edited);
  CHECK_THROWS_WITH_AS(train(load_run_config(dir, {}), o), doctest::Contains("seed: 1 -> 5"),
                       ConfigError);
  write_text(run_config_path(dir), yaml);
  // A training setting may change, and config.yaml then says so.
  CHECK(train(load_run_config(dir, {"train.lr=0.002"}), o).finished);
  CHECK(load_run_config(dir).config.train.lr == 0.002);
  // ... and so does run.h5, which analysis reads (its config used to stay the starting one).
  CHECK(RunFileReader::open(run_h5_path(dir))->root_attribute("config") ==
        read_text(run_config_path(dir)));
}

TEST_CASE("--init-from a run of another model size is an error, and writes nothing") {
  TrainerTempDir tmp("init_size");
  const std::string cache = tmp.str("cache");
  train_tiny(tmp.str("pre"), {"train.steps=2", "snapshots.every_percent=0"}, cache);
  auto sets = tiny_overrides(cache);
  for (const char* s : {"train.steps=2", "model.width=64", "model.ff_width=128"}) sets.push_back(s);
  TrainOptions o;
  o.out_dir = tmp.str("ft");
  o.quiet = true;
  o.init_from = tmp.str("pre");
  CHECK_THROWS_WITH_AS(train(load_config({test::config_path("base.yaml")}, sets), o),
                       doctest::Contains("parameters of this model are in its checkpoint with the "
                                         "same shape"),
                       ConfigError);
  CHECK_FALSE(fs::exists(run_config_path(o.out_dir)));  // a rerun is not blocked
  // The same sizes with another position variant (the paper's drop-in) loads.
  auto same = tiny_overrides(cache);
  for (const char* s : {"train.steps=2", "position.type=learned+huang_m4"}) same.push_back(s);
  CHECK(train(load_config({test::config_path("base.yaml")}, same), o).finished);
}

TEST_CASE("an output folder holding a run is not overwritten silently") {
  TrainerTempDir tmp("guard");
  const std::string cache = tmp.str("cache");
  train_tiny(tmp.str("a"), {"train.steps=2", "snapshots.every_percent=0"}, cache);
  CHECK_THROWS_WITH_AS(train_tiny(tmp.str("a"), {"train.steps=2"}, cache),
                       doctest::Contains("holds a finished run"), RunError);
  // An emptied result.json does not make a run finished.
  const std::string result = read_text(run_result_path(tmp.str("a")));
  CHECK(result.find("\"steps\": 2") != std::string::npos);
  write_text(run_result_path(tmp.str("a")), "");
  CHECK_FALSE(run_finished(tmp.str("a")));
  write_text(run_result_path(tmp.str("a")), "{\"steps\": \"two\"}");
  CHECK_FALSE(run_finished(tmp.str("a")));
  write_text(run_result_path(tmp.str("a")), result);
  CHECK(run_finished(tmp.str("a")));
  train_tiny(tmp.str("b"), {"train.steps=4", "snapshots.every_percent=0"}, cache, /*stop_after=*/2);
  CHECK_THROWS_WITH_AS(train_tiny(tmp.str("b"), {"train.steps=4"}, cache),
                       doctest::Contains("holds an unfinished run"), RunError);
  // --resume cannot cut a run back below the step its checkpoint reached.
  TrainOptions o;
  o.out_dir = tmp.str("b");
  o.quiet = true;
  o.resume = true;
  CHECK_THROWS_WITH_AS(train(load_run_config(o.out_dir, {"train.steps=1"}), o),
                       doctest::Contains("train.steps: 1 is below step 2, which the checkpoint in"),
                       ConfigError);
  CHECK(train(load_run_config(o.out_dir, {}), o).finished);  // still resumable as it was
  // Resuming a finished run is refused, and its result.json stays as it was.
  const std::string result_before = read_text(run_result_path(o.out_dir));
  CHECK_THROWS_WITH_AS(train(load_run_config(o.out_dir, {}), o),
                       doctest::Contains("the run already finished its 4 steps; nothing to resume"),
                       RunError);
  CHECK(read_text(run_result_path(o.out_dir)) == result_before);

  // A run stopped exactly at what becomes its last step (--set train.steps=<checkpoint step>)
  // gets the final evaluation on resuming, instead of a result.json without validation metrics.
  train_tiny(tmp.str("c"), {"train.steps=6", "train.eval_every=100", "snapshots.every_percent=0"},
             cache,
             /*stop_after=*/3);
  o.out_dir = tmp.str("c");
  const TrainResult at_end = train(load_run_config(o.out_dir, {"train.steps=3"}), o);
  CHECK(at_end.finished);
  CHECK(at_end.steps == 3);
  CHECK(at_end.valid.count("loss") == 1);
  const auto result_json = nlohmann::json::parse(read_text(run_result_path(o.out_dir)));
  CHECK(result_json.dump().find("\"loss\"") != std::string::npos);
  std::ifstream metrics(run_metrics_path(o.out_dir));
  std::string line, last;
  while (std::getline(metrics, line)) last = line;
  const auto final_line = nlohmann::json::parse(last);
  CHECK(final_line.at("step").get<int64_t>() == 3);
  CHECK(final_line.contains("valid_loss"));
  CHECK_FALSE(final_line.contains("train_loss"));  // no step was trained after the checkpoint

  // --init-from the output folder itself, with --overwrite, is refused before anything is
  // removed (it used to delete the run it was to start from); --init-from with --resume too.
  TrainOptions f;
  f.out_dir = tmp.str("a");
  f.quiet = true;
  f.overwrite = true;
  f.init_from = tmp.str("a") + "/.";
  CHECK_THROWS_WITH_AS(train(load_run_config(f.out_dir, {}), f),
                       doctest::Contains("is the output folder itself"), ConfigError);
  CHECK(run_finished(tmp.str("a")));
  o.init_from = tmp.str("a");
  CHECK_THROWS_WITH_AS(train(load_run_config(o.out_dir, {}), o),
                       doctest::Contains("--init-from starts a new run"), ConfigError);
}

TEST_CASE("metrics log: resuming keeps records up to the step and names damaged lines") {
  TrainerTempDir tmp("metrics_log");
  const std::string path = tmp.str("metrics.jsonl");
  write_text(path,
             "{\"step\":0,\"train_loss\":5}\n"
             "garbage from an editor\n"
             "{\"step\":10,\"train_loss\":4}\n"
             "{\"train_loss\":3}\n"
             "{\"step\":20,\"train_loss\":3}\n"
             "{\"step\":30,\"tra");  // torn by a kill: dropped without a word
  MetricsLog log(path, 10);
  // Lines 2 and 4 are not records; the torn last line (6) is expected after a crash.
  REQUIRE(log.damaged_lines().size() == 2);
  CHECK(log.damaged_lines()[0] == "line 2: 'garbage from an editor'");
  CHECK(log.damaged_lines()[1] == "line 4: '{\"train_loss\":3}'");
  log.write(20, {{"train_loss", 2.5}});
  CHECK(read_text(path) ==
        "{\"step\":0,\"train_loss\":5}\n{\"step\":10,\"train_loss\":4}\n"
        "{\"step\":20,\"train_loss\":2.5}\n");
}

TEST_CASE("train.eval_batches=0 validates on the whole validation split") {
  TrainerTempDir tmp("eval_whole_split");
  const std::string dir = tmp.str("r");
  auto sets = test::tiny_run(tmp.str("cache"), 2);
  sets.insert(sets.end(), {"train.eval_batches=0", "train.eval_every=2", "snapshots.every_percent=0"});
  REQUIRE(test::train_here(sets, dir).finished);
  const auto logged_loss = test::logged(dir, "valid_loss");
  REQUIRE_FALSE(logged_loss.empty());
  LoadedRun run = load_run(dir);
  const auto all = run.data->eval_batches(Split::Valid, 4, 0);
  REQUIRE(all.size() > 2);  // more than tiny_run's train.eval_batches=2 would see
  const auto direct = evaluate(run.model, *run.data, "mlm", Split::Valid, all, run.device);
  CHECK(logged_loss.back().second == doctest::Approx(direct.at("loss")).epsilon(1e-6));
}

TEST_CASE("synthetic tasks validate at every test length, whatever train.eval_batches") {
  TrainerTempDir tmp("eval_synthetic_lengths");
  auto sets = test::tiny_run(tmp.str("cache"), 2);
  sets.insert(sets.end(), {"task.type=copy", "task.seq_len=40", "task.min_len=4", "task.max_len=8",
                           "task.eval_lengths=[4,8,16]", "task.eval_examples=8",
                           "train.eval_batches=1", "train.eval_every=2", "position.type=alibi",
                           "snapshots.every_percent=0", "snapshots.probe_len=40"});
  REQUIRE(test::train_here(sets, tmp.str("r")).finished);
  // One batch per length: the validation used to keep the first batch (length 4) only.
  for (const char* m : {"valid_seq_accuracy@4", "valid_seq_accuracy@8", "valid_seq_accuracy@16"})
    CHECK_MESSAGE(!test::logged(tmp.str("r"), m).empty(), m);
}
