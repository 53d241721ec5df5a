// The analysis of run files written with RunFileWriter (the HDF5 layer the training writes
// through), compared with direct computations here; and the `relpos analyze` command.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "analysis/run_source.h"
#include "core/config/config.h"
#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"
#include "core/util/process.h"
#include "tests/analysis_sample.h"
#include "tests/child_log.h"
#include "tests/helpers.h"
#include "tests/text_file.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::analysis;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kL = 2, kH = 2, kT = 6;

// A run with model width 16 and a learned table of 8 positions (8·16 = 128 positional
// parameters) plus alibi (none), seq_len 6, snapshots at 0 and 10.
std::string write_run(const fs::path& dir, int64_t seed, double final_loss, bool causal) {
  fs::create_directories(dir);
  const Config cfg = load_config({test::config_path("base.yaml")},
                                 {"position.type=learned+alibi", "position.learned.max_len=8",
                                  "model.width=16", "model.heads=2", "task.seq_len=6",
                                  std::string("model.mode=") + (causal ? "decoder" : "encoder"),
                                  std::string("task.type=") + (causal ? "clm" : "mlm")})
                         .config;
  RunAttributes attrs;
  attrs.config_yaml = to_yaml(cfg);
  attrs.position_types = "learned+alibi";
  attrs.seed = seed;
  attrs.torch_version = "1.13.0";
  attrs.git_commit = "feedbeef";
  attrs.created = "2024-05-01T12:00:00Z";
  // The count the trainer writes (learned: 8 positions x width 16; alibi has none). The causal
  // run's file is one written before the attribute existed: its count is unknown.
  if (!causal) attrs.positional_parameters = 8 * 16;
  auto w = RunFileWriter::create((dir / "run.h5").string(), attrs);
  w->append_metric("valid_loss", 0, 5.0);
  w->append_metric("valid_loss", 10, final_loss);
  w->append_metric("elapsed_s", 10, 30.0 + seed);
  w->write_probe(torch::arange(2 * kT, torch::kInt64).reshape({2, kT}), {});
  torch::manual_seed(seed);
  for (int64_t step : {0, 10}) {
    auto logits = torch::randn({kL, kH, kT, kT});  // (L,H,T,T)
    if (causal)
      logits = logits.masked_fill(torch::ones({kT, kT}).triu(1).to(torch::kBool), -INFINITY);
    const auto attention = torch::softmax(logits * (step + 1), -1);  // (L,H,T,T)
    const auto pos = torch::arange(kT, torch::kFloat32);
    const auto dist = (pos.unsqueeze(0) - pos.unsqueeze(1)).abs();  // (T,T)
    const auto alibi = (-torch::tensor({0.5f, 0.25f}).view({1, kH, 1, 1}) * dist)
                           .expand({kL, kH, kT, kT})
                           .contiguous();
    std::map<std::string, std::vector<NamedTensor>> position;
    position["learned"] = {{"table", torch::randn({8, 16}), {"position", "channel"}}};
    position["alibi"] = {{"distances", torch::arange(-5, 6, torch::kFloat32), {"distance"}},
                         {"profile",
                          -torch::tensor({0.5f, 0.25f}).view({kH, 1}) *
                              torch::arange(-5, 6, torch::kFloat32).abs().view({1, -1}),
                          {"head", "distance"}}};
    w->write_snapshot(
        step, attention,
        {{"learned", torch::randn({1, kH, kT, kT}), {"layer", "head", "query", "key"}},
         {"alibi", alibi, {"layer", "head", "query", "key"}}},
        position);
  }
  w->write_eval(
      "extrapolation",
      {{"length", torch::tensor({6, 12}, torch::kInt64), {}},
       {"applicable", torch::tensor({1, seed == 1 ? 0 : 1}, torch::kInt64), {}},
       {"valid_loss", torch::tensor({final_loss, seed == 1 ? 99.0 : 4.0}, torch::kFloat64), {}}},
      {{"task", causal ? "clm" : "mlm"}, {"train_length", "6"}});
  w->close();
  if (seed > 1)  // as `relpos train` writes it when a run finishes
    std::ofstream(dir / "result.json")
        << "{\n  \"steps\": 10,\n  \"train_seconds\": " << 100 + seed << ",\n  \"valid\": {}\n}\n";
  return (dir / "run.h5").string();
}

}  // namespace

TEST_CASE("a run file written by RunFileWriter is analysed like a direct computation") {
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    const fs::path dir = test::analysis_scratch(causal ? "runfile_causal" : "runfile");
    write_run(dir, 1, 3.0, causal);
    AnalyzeOptions o;
    o.figures = false;
    bool experiment = true;
    const ExperimentResult ex = analyze_folder(dir.string(), o, {}, &experiment);
    CHECK_FALSE(experiment);
    REQUIRE(ex.runs.size() == 1);
    const RunResult& r = ex.runs[0];
    CHECK(r.info.causal == causal);
    CHECK(r.info.seed == 1);
    CHECK(r.info.train_length == 6);
    CHECK(r.info.positional_parameters == (causal ? -1 : 8 * 16));
    CHECK(r.steps == std::vector<int64_t>{0, 10});
    CHECK(r.metric == "valid_loss");
    CHECK(r.training_time_s == 31.0);

    // Direct: read the datasets back with the reader and measure them with the brute-force
    // definition in tests/analysis_sample.h.
    auto reader = RunFileReader::open((dir / "run.h5").string());
    for (int k = 0; k < 2; ++k) {
      const int64_t step = r.steps[k];
      const auto att =
          reader->dataset("/snapshots/step_" + std::to_string(step) + "/attention").value;
      double head_avg = 0, per_head = 0;
      for (int64_t l = 0; l < kL; ++l) {
        head_avg += test::naive_invariance(att[l].to(torch::kFloat64).mean(0), causal) / kL;
        for (int64_t h = 0; h < kH; ++h)
          per_head += test::naive_invariance(att[l][h], causal) / (kL * kH);
      }
      CHECK(r.invariance.at("attention")[k] == doctest::Approx(head_avg).epsilon(1e-9));
      CHECK(r.invariance.at("attention_heads")[k] == doctest::Approx(per_head).epsilon(1e-9));
      const auto scores =
          reader->dataset("/snapshots/step_" + std::to_string(step) + "/position_scores/learned")
              .value;
      double s = 0;
      for (int64_t h = 0; h < kH; ++h) s += test::naive_invariance(scores[0][h], causal) / kH;
      CHECK(r.invariance.at("scores:learned")[k] == doctest::Approx(s).epsilon(1e-9));
      CHECK(r.invariance.at("scores:alibi")[k] == doctest::Approx(1.0));
      // P·Pᵀ over the probe length T = 6 of the 8 table rows
      const auto p =
          reader->dataset("/snapshots/step_" + std::to_string(step) + "/position/learned/table")
              .value.to(torch::kFloat64);
      auto g = torch::zeros({kT, kT}, torch::kFloat64);
      for (int64_t i = 0; i < kT; ++i)
        for (int64_t j = 0; j < kT; ++j) g[i][j] = (p[i] * p[j]).sum();
      CHECK(r.invariance.at("gram:learned")[k] ==
            doctest::Approx(test::naive_invariance(g, false)).epsilon(1e-9));
    }
    CHECK(r.info.extrapolation.length == std::vector<double>{6, 12});
    REQUIRE(r.info.extrapolation.columns.size() == 1);  // "applicable" is a mask, not a metric
    CHECK(std::isnan(r.info.extrapolation.columns[0].second[1]));
    CHECK(r.info.extrapolation.attrs.at("task") == (causal ? "clm" : "mlm"));
    CHECK(fs::exists(dir / "analysis.h5"));
    CHECK(fs::exists(dir / "tables" / "invariance_summary.md"));
    fs::remove_all(dir);
  }
}

TEST_CASE("relpos analyze and relpos report on an experiment folder of run files") {
  const fs::path dir = test::analysis_scratch("cli");
  write_run(dir / "learned+alibi-s1", 1, 3.0, false);
  write_run(dir / "learned+alibi-s2", 2, 3.5, false);
  const ChildResult analyzed = test::call_relpos({"analyze", dir.string(), "--no-figures"});
  REQUIRE_MESSAGE(analyzed.exit_code == 0, analyzed.err);
  const auto results = test::read_lines(dir / "tables" / "results.md");
  REQUIRE(results.size() > 4);
  // final valid_loss 3.0 and 3.5 -> 3.2500 ± 12.7062 · 0.3536 / √2 = 3.1766; 128 positional
  // parameters; training time 31 s (seed 1: the elapsed_s metric) and 102 s (seed 2:
  // result.json wins) -> 66.5 ± 451.1
  CHECK(results[4].rfind("| learned+alibi | 2 | 3.2500 ± 3.1766 |", 0) == 0);
  CHECK(results[4].find("| 128 | 66.5 ± 451.1 |") != std::string::npos);
  const auto extra = test::read_lines(dir / "tables" / "extrapolation_valid_loss.md");
  // seed 1 is not applicable at 12 (its 99 is masked)
  CHECK(extra[4] == "| learned+alibi | 2 | 3.250 ± 3.177 | 4.000 |");
  CHECK(fs::exists(dir / "learned+alibi-s2" / "analysis.h5"));
  std::ofstream(dir / "commands.txt") << "relpos sweep ...\n";
  const ChildResult reported = test::call_relpos({"report", dir.string()});
  REQUIRE_MESSAGE(reported.exit_code == 0, reported.err);
  const auto report = test::read_lines(dir / "report.md");
  CHECK(std::find(report.begin(), report.end(), "relpos sweep ...") != report.end());
  CHECK(fs::exists(dir / "report.html"));

  // A folder without runs: the error names it.
  const fs::path empty = dir / "empty";
  fs::create_directories(empty);
  const ChildResult none = test::call_relpos({"analyze", empty.string()});
  CHECK(none.exit_code != 0);
  REQUIRE_MESSAGE(!none.err.empty(), none.out);
  CHECK(none.err.substr(0, none.err.find('\n')) ==
        "error: " + empty.string() + " holds no run.h5 and no run folders (folders with a run.h5)");
  fs::remove_all(dir);
}

TEST_CASE("the analysis of a tiny training run matches a direct computation") {
  const fs::path dir = test::analysis_scratch("trained");
  TrainOptions opts;
  opts.out_dir = (dir / "run").string();
  opts.quiet = true;
  const LoadedConfig cfg = load_config({test::config_path("base.yaml")},
                                       {"data.corpus=" + test::fixture_path("trainer/corpus.txt"),
                                        "data.cache_dir=" + (dir / "cache").string(),
                                        "data.tokenizer=bytes",
                                        "data.valid_fraction=0.2",
                                        "data.test_fraction=0.2",
                                        "task.type=clm",
                                        "model.mode=decoder",
                                        "task.seq_len=16",
                                        "model.layers=2",
                                        "model.width=16",
                                        "model.heads=2",
                                        "model.ff_width=32",
                                        "position.type=learned+tisa",
                                        "position.learned.max_len=16",
                                        "train.steps=10",
                                        "train.batch_size=4",
                                        "train.eval_every=5",
                                        "train.eval_batches=2",
                                        "train.log_every=5",
                                        "train.checkpoint_every=10",
                                        "snapshots.every_percent=50",
                                        "snapshots.probe_size=2",
                                        "threads=1"});
  train(cfg, opts);
  AnalyzeOptions o;
  o.figures = false;
  const RunResult r = analyze_folder(opts.out_dir, o, {}, nullptr).runs.at(0);
  CHECK(r.info.causal);
  CHECK(r.metric == "valid_ppl");  // the clm task's primary metric
  // learned: 16 positions x width 16; tisa: 3 parameter sets (a, b, c) x 5 kernels x 2 heads x 2
  // layers
  CHECK(r.info.positional_parameters == 16 * 16 + 3 * 5 * 2 * 2);
  CHECK(std::isfinite(r.training_time_s));
  REQUIRE(r.steps == std::vector<int64_t>{0, 5, 10});
  auto reader = RunFileReader::open(run_h5_path(opts.out_dir));
  for (size_t k = 0; k < r.steps.size(); ++k) {
    const auto att = reader->dataset(schema::attention_path(r.steps[k])).value;  // (L,H,T,T)
    double head_avg = 0;
    for (int64_t l = 0; l < att.size(0); ++l)
      head_avg += test::naive_invariance(att[l].to(torch::kFloat64).mean(0), true) / att.size(0);
    CHECK(r.invariance.at("attention")[k] == doctest::Approx(head_avg).epsilon(1e-9));
    CHECK(r.invariance.at("scores:tisa")[k] == doctest::Approx(1.0));  // f(j - i) is Toeplitz
  }
  // metric interpolated at the snapshot steps: the logged valid_ppl points at 5 and 10
  const auto [steps, values] = reader->metric("valid_ppl");
  REQUIRE(steps == std::vector<int64_t>{5, 10});
  CHECK(std::isnan(r.metric_at_step[0]));  // step 0 lies before the first evaluation
  CHECK(r.metric_at_step[1] == values[0]);
  CHECK(r.metric_at_step[2] == values[1]);
  fs::remove_all(dir);
}

TEST_CASE("run folders are listed in the order of the sweep's commands") {
  const fs::path dir = test::analysis_scratch("order");
  for (const char* name : {"a", "b", "c", "d"}) {
    fs::create_directories(dir / name);
    if (std::string(name) != "d") std::ofstream(dir / name / "run.h5") << "";  // d: no run
  }
  std::ofstream(dir / "commands.txt") << "relpos train --out " << (dir / "b").string()
                                      << " --quiet\nrelpos train --out " << (dir / "a").string()
                                      << "\n";
  std::vector<std::string> names;
  for (const auto& d : find_run_dirs(dir.string())) names.push_back(fs::path(d).filename().string());
  CHECK(names == std::vector<std::string>{"b", "a", "c"});
  fs::remove_all(dir);
}

TEST_CASE("analyze refuses a folder whose runs are of different tasks, naming each task's runs") {
  test::TempFolder tmp("analysis_two_tasks");
  const std::string dir = tmp.str("mixed");
  auto mlm = test::tiny_run(tmp.str("cache"), 2);
  auto clm = mlm;
  clm.insert(clm.end(), {"task.type=clm", "model.mode=decoder"});
  test::train_here(mlm, dir + "/a");
  test::train_here(clm, dir + "/b");
  AnalyzeOptions o;
  o.figures = false;
  const std::string expected = dir + " holds runs of 2 tasks: clm (1 run: b); mlm (1 run: a); "
                                     "their metrics do not share a table";
  CHECK_THROWS_WITH_AS(analyze_folder(dir, o, {}, nullptr), doctest::Contains(expected.c_str()),
                       ConfigError);
  // The command line: exit 2 (a ConfigError), the message and its hint, no tables.
  const ChildResult r = test::call_relpos({"analyze", dir, "--no-figures"});
  CHECK(r.exit_code == 2);
  CHECK(test::contains(r.err, expected));
  CHECK(test::contains(r.err, "put the runs of each task in a folder of their own"));
  CHECK_FALSE(fs::exists(dir + "/tables"));
  // Each run alone is fine, and so is a folder of one task.
  fs::rename(dir + "/b", tmp.str("b"));
  CHECK_NOTHROW(analyze_folder(dir, o, {}, nullptr));
}
