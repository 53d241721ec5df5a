// Sweeps: the grid's points and folder names, and which run folders a sweep skips (docs/experiments.md).
#include <doctest/doctest.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/data/task.h"
#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"
#include "core/util/sampling_stats.h"
#include "core/util/threads.h"
#include "core/task/task_registry.h"
#include "experiments/experiment_context.h"
#include "experiments/report_util.h"
#include "experiments/sweep.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

TEST_CASE("sweep: the grid is the cartesian product, first axis outermost, named by value") {
  const auto points = expand_grid({parse_grid_axis("position.type=learned+tisa,rope"),
                                   parse_grid_axis("seed=1,2"),
                                   parse_grid_axis("model.layers=4")});
  const std::vector<std::pair<std::string, std::vector<std::string>>> expect{
      {"learned+tisa-seed1-layers4", {"position.type=learned+tisa", "seed=1", "model.layers=4"}},
      {"learned+tisa-seed2-layers4", {"position.type=learned+tisa", "seed=2", "model.layers=4"}},
      {"rope-seed1-layers4", {"position.type=rope", "seed=1", "model.layers=4"}},
      {"rope-seed2-layers4", {"position.type=rope", "seed=2", "model.layers=4"}}};
  REQUIRE(points.size() == expect.size());
  for (size_t i = 0; i < points.size(); ++i) {
    CHECK(points[i].name == expect[i].first);
    CHECK(points[i].overrides == expect[i].second);
  }
  CHECK(expand_grid({}).at(0).name == "run");
}

TEST_CASE("sweep: a malformed --grid is an error naming it") {
  for (const std::string bad : {"seed", "=1,2", "seed=", "seed=1,,2", "seed=1,1"}) {
    CAPTURE(bad);
    try {
      parse_grid_axis(bad);
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find("--grid '" + bad + "'") != std::string::npos);
    }
  }
  // The same key on two axes: the later --set would silently win in every run.
  CHECK_THROWS_WITH_AS(expand_grid({parse_grid_axis("seed=1"), parse_grid_axis("model.layers=2"),
                                    parse_grid_axis("seed=2,3")}),
                       "--grid: the key 'seed' has two axes (a later one would override the "
                       "earlier one's values)",
                       ConfigError);
}

TEST_CASE("sweep: two grid points that map to one run folder are an error naming both") {
  // Was: both ran in data.corpus=a_b's folder, the second as a resume of the first.
  CHECK_THROWS_WITH_AS(expand_grid({parse_grid_axis("data.corpus=a/b,a:b")}),
                       "--grid: the points data.corpus=a/b and data.corpus=a:b map to the same "
                       "run folder 'corpusa_b'",
                       ConfigError);
  // Across axes: (x-y, z) and (x, y-z) are both x-y-z.
  CHECK_THROWS_WITH_AS(expand_grid({parse_grid_axis("position.type=x-y,x"),
                                    parse_grid_axis("task.type=z,y-z")}),
                       "--grid: the points position.type=x-y task.type=z and position.type=x "
                       "task.type=y-z map to the same run folder 'x-y-z'",
                       ConfigError);
  CHECK(expand_grid({parse_grid_axis("data.corpus=a/b,a+b")}).size() == 2);
}

TEST_CASE("sweep: finished runs are skipped, and a folder with result.json but no run.h5 is retrained") {
  TempFolder tmp("sweep_skip");
  auto sets = tiny_run(tmp.str("cache"), 4);
  std::vector<std::string> args{"sweep", "--config", config_path("base.yaml"), "--out",
                                tmp.str("sw"), "--grid", "seed=1,2", "--jobs", "1"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  auto [code, out] = run_relpos(args, tmp.str("sweep1.log"));
  REQUIRE_MESSAGE(code == 0, out);
  const std::string a = tmp.str("sw/seed1"), b = tmp.str("sw/seed2");
  REQUIRE(run_finished(a));
  REQUIRE(run_finished(b));
  const auto a_time = fs::last_write_time(fs::path(a) / "run.h5");

  // As committed results hold them: run.h5 and the checkpoint removed, result.json kept.
  fs::remove(fs::path(b) / "run.h5");
  fs::remove(fs::path(b) / "checkpoint.pt");
  CHECK_FALSE(run_finished(b));
  auto [code2, out2] = run_relpos(args, tmp.str("sweep2.log"));
  REQUIRE_MESSAGE(code2 == 0, out2);
  CHECK(out2.find("1 already finished") != std::string::npos);
  CHECK(fs::last_write_time(fs::path(a) / "run.h5") == a_time);  // not touched
  CHECK(run_finished(b));                                        // trained again
  // commands.txt lists what was run: both runs the first time, then only seed2's run.
  std::ifstream cmds(tmp.str("sw/commands.txt"));
  std::vector<std::string> lines;
  for (std::string l; std::getline(cmds, l);) lines.push_back(l);
  REQUIRE(lines.size() == 4);
  CHECK(lines[2] == "# already finished, not run again: " + a);
  CHECK(lines[3].find("--out " + b) != std::string::npos);
  CHECK(lines[3].find("relpos") != std::string::npos);

  // The experiment's config changed since: the finished runs belong to the old one, so the
  // sweep refuses before starting anything, naming the folders and the key.
  auto changed = args;
  changed.insert(changed.end(), {"--set", "train.steps=5"});
  auto [code3, out3] = run_relpos(changed, tmp.str("sweep3.log"));
  CHECK(code3 != 0);
  CHECK(out3.find("2 run folder(s)") != std::string::npos);
  CHECK(out3.find("sw/seed1 (train.steps: 4 -> 5)") != std::string::npos);
  CHECK(out3.find("delete those run folders") != std::string::npos);
  CHECK(fs::last_write_time(fs::path(a) / "run.h5") == a_time);
  // Only the thread count, the CPU allocator and a parameter of a variant these runs do not use
  // differ: not a different experiment.
  auto threads = args;
  threads.insert(threads.end(), {"--threads", "2", "--set", "position.sinusoidal.scale=0.5",
                                 "--set", "cpu_allocator=system"});
  auto [code4, out4] = run_relpos(threads, tmp.str("sweep4.log"));
  CHECK_MESSAGE(code4 == 0, out4);
  CHECK(out4.find("2 already finished") != std::string::npos);
}

namespace {

// The cells of one CSV line (no quoted commas in these files but the overrides cell, which is
// quoted and holds none).
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') cell += '"', ++i;  // ""
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.push_back(cell), cell.clear();
    else cell += c;
  }
  out.push_back(cell);
  return out;
}

std::vector<std::string> file_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("sweep: every point gets the same probe set and data split, and the summary holds each run's numbers") {
  TempFolder tmp("sweep_same");
  auto sets = tiny_run(tmp.str("cache"), 4);
  std::vector<std::string> args{"sweep", "--config", config_path("base.yaml"), "--out",
                                tmp.str("sw"), "--grid", "position.type=learned,alibi",
                                "--grid", "seed=1,2", "--jobs", "2"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  auto [code, out] = run_relpos(args, tmp.str("sweep.log"), 300);
  REQUIRE_MESSAGE(code == 0, out);
  const std::vector<std::string> names{"learned-seed1", "learned-seed2", "alibi-seed1",
                                       "alibi-seed2"};
  std::vector<std::string> dirs;
  for (const auto& n : names) {
    dirs.push_back(tmp.str("sw/" + n));
    REQUIRE_MESSAGE(run_finished(dirs.back()), n);
  }

  // The probe set: /probe/tokens (and its key mask, written when the probe has padding) of
  // every run.h5 are the same array.
  auto probe = [](const std::string& dir) {
    auto r = RunFileReader::open(run_h5_path(dir));
    const std::string mask = schema::probe_key_mask_path();
    return std::make_pair(r->dataset(schema::probe_tokens_path()).value,
                          r->exists(mask) ? r->dataset(mask).value : torch::Tensor());
  };
  const auto [tokens0, mask0] = probe(dirs[0]);
  REQUIRE(tokens0.dim() == 2);
  CHECK(tokens0.size(0) == 2);   // snapshots.probe_size
  CHECK(tokens0.size(1) == 32);  // task.seq_len
  // The data split: the documents of each split, from each run's own saved config.
  auto split = [](const std::string& dir) {
    const Config cfg = load_run_config(dir).config;
    const auto data = make_task_data(cfg);
    return std::vector<std::vector<int64_t>>{data->split_documents(Split::Train),
                                             data->split_documents(Split::Valid),
                                             data->split_documents(Split::Test)};
  };
  const auto split0 = split(dirs[0]);
  CHECK_FALSE(split0[1].empty());
  for (size_t k = 1; k < dirs.size(); ++k) {
    CAPTURE(names[k]);
    const Config cfg = load_run_config(dirs[k]).config;
    CHECK(join_names(cfg.position.types, "+") == (k < 2 ? "learned" : "alibi"));  // the points differ
    const auto [tokens, mask] = probe(dirs[k]);
    CHECK(torch::equal(tokens, tokens0));
    CHECK(mask.defined() == mask0.defined());
    if (mask.defined() && mask0.defined()) CHECK(torch::equal(mask, mask0));
    CHECK(split(dirs[k]) == split0);
  }

  // summary.csv and summary.md: one row per point, in grid order, with the numbers of its
  // result.json and its positional parameters (learned: max_len 32 x width 32; alibi: none).
  const auto csv = file_lines(tmp.str("sw/summary.csv"));
  const auto md = file_lines(tmp.str("sw/summary.md"));
  REQUIRE(csv.size() == 1 + names.size());
  REQUIRE(md.size() == 2 + names.size());
  const auto header = csv_cells(csv[0]);
  REQUIRE(header.size() >= 7);
  CHECK(std::vector<std::string>(header.begin(), header.begin() + 5) ==
        std::vector<std::string>{"run", "overrides", "finished", "position_params",
                                 "train_seconds"});
  // A byte-level masked LM: its loss is in nats per byte, and again in bits per byte in the last
  // CSV column and beside the loss in summary.md; every header names its unit.
  CHECK(header.back() == "valid_bits_per_byte");
  const std::map<std::string, std::string> units = {
      {"accuracy", "0–1"}, {"loss", "nats/byte"}, {"ppl", "per byte"}};
  std::string md_header = "| run | overrides | finished | position params | train s |";
  for (size_t c = 5; c + 1 < header.size(); ++c) {
    const std::string m = header[c].substr(6);
    REQUIRE_MESSAGE(units.count(m), m);
    md_header += " valid " + m + " (" + units.at(m) + ") |";
    if (m == "loss") md_header += " valid loss (bits/byte) |";
  }
  CHECK(md[0] == md_header);
  for (size_t k = 0; k < names.size(); ++k) {
    CAPTURE(names[k]);
    std::ifstream rj(fs::path(dirs[k]) / "result.json");
    const auto result = nlohmann::json::parse(rj);
    const auto row = csv_cells(csv[k + 1]);
    REQUIRE(row.size() == header.size());
    const std::string params = k < 2 ? "1024" : "0";
    const std::string secs = fmt::format("{:.1f}", result.at("train_seconds").get<double>());
    CHECK(row[0] == names[k]);
    CHECK(row[1] == fmt::format("position.type={} seed={}", k < 2 ? "learned" : "alibi", k % 2 + 1));
    CHECK(row[2] == "1");
    CHECK(row[3] == params);
    CHECK(row[4] == secs);
    std::string md_row = "| " + names[k] + " | `" + row[1] + "` | yes | " + params + " | " + secs + " |";
    size_t metrics = 0;
    for (size_t c = 5; c + 1 < header.size(); ++c) {
      REQUIRE(header[c].rfind("valid_", 0) == 0);
      const std::string m = header[c].substr(6);
      const bool has = result.at("valid").contains(m);
      const std::string v = has ? fmt::format("{:.4f}", result["valid"][m].get<double>()) : "";
      CHECK(row[c] == v);
      md_row += " " + v + " |";
      metrics += has;
      if (m == "loss") {
        const std::string bits =
            fmt::format("{:.4f}", result["valid"]["loss"].get<double>() / std::log(2.0));
        CHECK(row.back() == bits);
        md_row += " " + bits + " |";
      }
    }
    // Every metric of result.json has a column; what sets their sampling error does not.
    size_t logged = 0;
    for (const auto& [k, v] : result.at("valid").items()) logged += !is_sampling_statistic(k);
    CHECK(metrics == logged);
    CHECK(md[k + 2] == md_row);
  }
}

TEST_CASE("sweep: the summary quotes CSV fields and escapes Markdown cells that need it") {
  TempFolder tmp("summary_escape");
  // Two points whose runs never started (no folder): the names and overrides still appear, and
  // the unknown positional-parameter count is an empty cell.
  SweepRunStatus a, b;
  a.point = {"a,b", {"data.label_names=[\"neg, bad\", pos]", "seed=1"}};
  a.dir = tmp.str("none-a");
  a.seconds = 1.5;
  b.point = {"c|d", {"position.type=alibi"}};
  b.dir = tmp.str("none-b");
  write_sweep_summary(tmp.path.string(), {a, b});
  const auto csv = file_lines(tmp.str("summary.csv"));
  REQUIRE(csv.size() == 3);
  // RFC 4180: a field with a comma or quote is quoted, a quote inside is doubled.
  CHECK(csv[1] == "\"a,b\",\"data.label_names=[\"\"neg, bad\"\", pos] seed=1\",0,,1.5");
  CHECK(csv_cells(csv[1]) ==
        std::vector<std::string>{"a,b", "data.label_names=[\"neg, bad\", pos] seed=1", "0", "", "1.5"});
  CHECK(csv[2] == "c|d,position.type=alibi,0,,0.0");
  const auto md = file_lines(tmp.str("summary.md"));
  REQUIRE(md.size() == 4);
  CHECK(md[2] == "| a,b | `data.label_names=[\"neg, bad\", pos] seed=1` | no |  | 1.5 |");
  CHECK(md[3] == "| c\\|d | `position.type=alibi` | no |  | 0.0 |");
}

TEST_CASE("reproduce: --set STAGE:key=value reaches that stage's runs only") {
  TempFolder tmp("stage_sets");
  ReproduceOptions o;
  o.name = "huang2020";
  o.out_dir = tmp.str("exp");
  o.quiet = true;
  const std::vector<std::string> stages = {"pretrain", "squad", "classify", "dropin"};
  // A ':' after the '=' is part of the value; a list of stages before the ':' names several.
  o.sets = {"seed=7", "squad,classify:train.steps=3", "pretrain:data.corpus=a:b=c",
            "data.cache_dir=C:/data"};
  ExperimentContext ctx(o, stages);
  using V = std::vector<std::string>;
  CHECK(ctx.sets() == V{"seed=7", "data.cache_dir=C:/data"});
  CHECK(ctx.sets_for("squad") == V{"seed=7", "data.cache_dir=C:/data", "train.steps=3"});
  CHECK(ctx.sets_for("classify") == ctx.sets_for("squad"));
  CHECK(ctx.sets_for("pretrain") == V{"seed=7", "data.cache_dir=C:/data", "data.corpus=a:b=c"});
  CHECK(ctx.sets_for("dropin") == ctx.sets());
  CHECK(ctx.config().seed == 7);  // the experiment config sees the global overrides only
  CHECK(ctx.config().data.corpus == "sotu");

  // The report names the data each stage is validated on, with the stage's overrides.
  o.sets = {"squad:data.valid_corpus=dev-v1.1.json"};
  ExperimentContext with_dev(o, stages);
  CHECK(validation_data(with_dev, "squad", with_dev.part_config("squad")) == "'dev-v1.1.json'");
  CHECK(validation_data(with_dev, "classify", with_dev.part_config("classify")) ==
        "a held-out 33.4% of UCI Sentiment Labelled Sentences");  // mini-classify.yaml
  CHECK(training_data(with_dev, "pretrain", with_dev.config_file()) ==
        "the State of the Union corpus");

  o.sets = {"pretrian:seed=1"};
  CHECK_THROWS_WITH_AS(ExperimentContext(o, stages),
                       doctest::Contains("--set pretrian:seed=1: reproduce huang2020 has no "
                                         "stage 'pretrian'"),
                       ConfigError);
  o.name = "quickstart";
  o.sets = {"pretrain:seed=1"};
  CHECK_THROWS_AS(ExperimentContext(o, {}), ConfigError);
}

TEST_CASE("reproduce: sweep.stages chooses stages where they are independent, and only there") {
  TempFolder tmp("stage_choice");
  ReproduceOptions o;
  o.name = "synthetic";
  o.out_dir = tmp.str("exp");
  o.quiet = true;
  const std::vector<std::string> tasks = {"copy",  "reverse", "sort",
                                          "shift", "recall",  "marker_distance"};
  o.sets = {"sweep.stages=[reverse, copy]"};
  ExperimentContext ctx(o, tasks, /*stages_selectable=*/true);
  CHECK(ctx.runs_stage("copy"));
  CHECK(ctx.runs_stage("reverse"));
  CHECK_FALSE(ctx.runs_stage("sort"));
  CHECK_FALSE(ctx.runs_stage("marker_distance"));
  // An empty list runs every stage.
  o.sets = {"sweep.stages=[]"};
  ExperimentContext all(o, tasks, true);
  for (const auto& t : tasks) CHECK(all.runs_stage(t));

  // A name that is not a stage is an error naming the config, the key and the stages.
  o.sets = {"sweep.stages=[copy, revrese]"};
  CHECK_THROWS_WITH_AS(ExperimentContext(o, tasks, true),
                       doctest::Contains("sweep.stages: reproduce synthetic has no stage 'revrese'"),
                       ConfigError);
  // Stages that build on each other (huang2020 fine-tunes its pre-trained runs) cannot be chosen.
  o.name = "huang2020";
  o.sets = {"sweep.stages=[pretrain]"};
  CHECK_THROWS_WITH_AS(ExperimentContext(o, {"pretrain", "squad", "classify", "dropin"}),
                       doctest::Contains("sweep.stages: reproduce huang2020 runs all of its stages"),
                       ConfigError);
  // The config checks the list itself.
  CHECK_THROWS_WITH_AS(load_config({test::config_path("experiments/synthetic/mini.yaml")},
                                   {"sweep.stages=[copy, copy]"}),
                       doctest::Contains("sweep.stages: stage listed twice (got 'copy'"),
                       ConfigError);
}

TEST_CASE("synthetic: the mini config runs some tasks, the paper config all six; claims follow") {
  const Config mini = load_config({test::config_path("experiments/synthetic/mini.yaml")}).config;
  const Config paper = load_config({test::config_path("experiments/synthetic/paper.yaml")}).config;
  CHECK_FALSE(mini.sweep.stages.empty());
  CHECK(paper.sweep.stages.empty());  // `stages: []` replaces the included list
  TempFolder tmp("synthetic_claims");
  const std::vector<std::string> tasks = {"copy",  "reverse", "sort",
                                          "shift", "recall",  "marker_distance"};
  // The claims of the config (stage "*": one per task that runs), as ExperimentContext expands them.
  const auto claims_of = [&](const std::string& scale) {
    ReproduceOptions o;
    o.name = "synthetic";
    o.scale = scale;
    o.out_dir = tmp.str(scale);
    o.quiet = true;
    std::vector<std::string> ids;
    for (const auto& claim : ExperimentContext(o, tasks, true).claims()) ids.push_back(claim.id);
    return ids;
  };
  // A regime claim and a NoPE claim per task that runs, none for the others.
  const auto mini_ids = claims_of("mini");
  CHECK(mini_ids.size() == 2 * mini.sweep.stages.size());
  for (const auto& task : mini.sweep.stages) {
    CHECK(std::count(mini_ids.begin(), mini_ids.end(), "synthetic-" + task + "-regime") == 1);
    CHECK(std::count(mini_ids.begin(), mini_ids.end(), "synthetic-" + task + "-nope") == 1);
  }
  CHECK(std::count(mini_ids.begin(), mini_ids.end(), "synthetic-sort-regime") == 0);
  CHECK(claims_of("paper").size() == 12);
}

TEST_CASE("reproduce: the report names the commits of earlier invocations over finished runs") {
  TempFolder tmp("report_commits");
  ReproduceOptions o;
  o.name = "quickstart";
  o.out_dir = tmp.str("exp");
  o.quiet = true;
  fs::create_directories(o.out_dir);
  // An earlier invocation trained the runs; this one only analyses them again.
  std::ofstream(fs::path(o.out_dir) / "commands.txt")
      << "# 2026-01-01T00:00:00Z  commit 0123456789abcdef  on some CPU\n"
      << "relpos reproduce quickstart --scale mini\n"
      << "# 2026-01-02T00:00:00Z  commit 0123456789abcdef  on some CPU\n";
  ExperimentContext ctx(o);
  const auto read_text = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string md = read_text(write_experiment_report(ctx, "T", "intro", {}));
  CHECK(md.find("Earlier invocations in commands.txt ran at commit(s) `0123456789abcdef`: runs "
                "they finished were not trained again") != std::string::npos);
  fs::remove(fs::path(o.out_dir) / "commands.txt");
  CHECK(read_text(write_experiment_report(ctx, "T", "intro", {})).find("Earlier") ==
        std::string::npos);
}

TEST_CASE("tisa2021: positional parameters at the experiment's size and at ALBERT-base size (its claim's paper_size)") {
  // ALBERT-base (Lan et al. 2020): one block shared by 12 layers, D = 768, H = 12, E = 128.
  // Learned: a 512 × E table = 65,536; TISA: 3 parameters per kernel, 5 kernels, 12 heads, one
  // set for the shared block = 180 (Wennberg & Henter 2021 count 3·S·H per layer).
  const auto row = [](const analysis::Table& t, const std::string& name) {
    for (const auto& r : t.rows)
      if (r[0].text == name) return r[1].samples.at(0);
    FAIL("no row " << name);
    return -1.0;
  };
  const std::string mini = config_path("experiments/tisa2021/mini.yaml");
  const ReportSection two = tisa2021_parameter_section(load_config({mini}).config, mini);
  REQUIRE(two.tables.size() == 2);
  CHECK(two.table_stems == std::vector<std::string>{"parameters_mini", "parameters_paper_size"});
  CHECK(row(two.tables[0], "learned") == 32.0 * 128.0);  // mini.yaml: max_len 32, E = D = 128
  CHECK(row(two.tables[0], "tisa") == 3.0 * 5.0 * 4.0);   // 4 heads
  CHECK(row(two.tables[1], "learned") == 65536.0);
  CHECK(row(two.tables[1], "tisa") == 180.0);
  CHECK(row(two.tables[1], "none") == 0.0);

  // The paper scale is ALBERT-base size: the same table twice would say nothing, so one.
  const std::string paper = config_path("experiments/tisa2021/paper.yaml");
  const ReportSection one = tisa2021_parameter_section(load_config({paper}).config, paper);
  REQUIRE(one.tables.size() == 1);
  CHECK(one.table_stems == std::vector<std::string>{"parameters_paper_size"});
  CHECK(row(one.tables[0], "learned") == 65536.0);
  CHECK(row(one.tables[0], "tisa") == 180.0);
}

TEST_CASE("sweep --init-from a sentencepiece run: finished fine-tunes are skipped on a rerun") {
  // A fine-tune records the pre-trained tokenizer's settings (vocab 400), not its own config's
  // (450): a rerun of the sweep must not take that for a changed config.
  TempFolder tmp("sweep_init_sp");
  auto sets = tiny_run(tmp.str("cache"), 2);
  sets.insert(sets.end(), {"data.corpus=" + fixture_path("data/spm_train.txt"),
                           "data.tokenizer=sentencepiece", "data.vocab_size=400",
                           "snapshots.every_percent=0"});
  REQUIRE(train_here(sets, tmp.str("pre")).finished);
  // As `relpos reproduce` runs a fine-tuning stage (the sweep command has no --init-from).
  SweepOptions o;
  o.configs = {config_path("base.yaml")};
  o.sets = sets;
  o.sets.push_back("data.vocab_size=450");
  o.grid = {parse_grid_axis("seed=1")};
  o.out_dir = tmp.str("ft");
  o.relpos_binary = RELPOS_BINARY;
  o.init_from = tmp.str("pre");
  o.quiet = true;
  auto first = run_sweep(o);
  REQUIRE(first.size() == 1);
  REQUIRE(first[0].finished);
  std::vector<SweepRunStatus> again;
  // Was: "made with another config than this sweep gives them now (data.vocab_size: 400 -> 450)".
  REQUIRE_NOTHROW(again = run_sweep(o));
  REQUIRE(again.size() == 1);
  CHECK(again[0].skipped);
}

namespace {

// This thread (and the children it starts) may run on its first allowed CPU only, until scope
// exit: what `taskset -c N` does to a command.
struct OneCpu {
  cpu_set_t saved;
  bool pinned = false;
  OneCpu() {
    CPU_ZERO(&saved);
    if (sched_getaffinity(0, sizeof saved, &saved) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &saved)) {
        CPU_SET(c, &one);
        break;
      }
    pinned = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~OneCpu() {
    if (pinned) sched_setaffinity(0, sizeof saved, &saved);
  }
};

// The last `threads=N` (the one that wins) of each command in a sweep's commands.txt.
std::vector<std::string> commands_threads(const std::string& sweep_dir) {
  std::ifstream in(fs::path(sweep_dir) / "commands.txt");
  std::vector<std::string> found;
  for (std::string line; std::getline(in, line);) {
    const auto p = line.rfind("threads=");
    if (p != std::string::npos) found.push_back(line.substr(p, line.find(' ', p) - p));
  }
  return found;
}

}  // namespace

TEST_CASE("sweep: a run keeps its config's threads, and automatic threads split the CPUs this process may use") {
  SweepOptions o;
  o.jobs = 1;
  CHECK(sweep_run_threads(o, 1) == 1);  // the config's count, whatever the machine
  CHECK(sweep_run_threads(o, 3) == 3);
  CHECK(sweep_run_threads(o, 0) == automatic_threads());  // threads: 0 means what it means in train
  o.jobs = 2;
  CHECK(sweep_run_threads(o, 0) == std::max(1, physical_cores() / 2));
  o.threads = 2;  // --threads
  CHECK(sweep_run_threads(o, 1) == 2);

  TempFolder tmp("sweep_threads");
  auto sets = tiny_run(tmp.str("cache"), 2);
  sets.back() = "threads=0";  // tiny_run's last override is threads=1
  REQUIRE(sets.back() == "threads=0");
  auto sweep = [&](const std::string& out, const std::string& jobs,
                   const std::vector<std::string>& extra) {
    std::vector<std::string> args{"sweep", "--config", config_path("base.yaml"), "--out", out,
                                  "--grid", "seed=1,2", "--jobs", jobs};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    args.insert(args.end(), extra.begin(), extra.end());
    return run_relpos(args, tmp.str("log"));
  };
  {
    // As under `taskset -c 0`: the sweep used to divide hardware_concurrency() between the jobs
    // and give every run more threads than the one CPU it may use, so every run failed.
    OneCpu one;
    REQUIRE(one.pinned);
    REQUIRE(available_cpus() == 1);
    CHECK(automatic_threads_shared(1) == 1);
    CHECK(automatic_threads_shared(4) == 1);
    auto [code, out] = sweep(tmp.str("auto"), "2", {});
    CHECK_MESSAGE(code == 0, out);
    CHECK(run_finished(tmp.str("auto/seed1")));
    CHECK(run_finished(tmp.str("auto/seed2")));
    CHECK(commands_threads(tmp.str("auto")) == std::vector<std::string>{"threads=1", "threads=1"});

    // An explicit count above that one CPU would fail every run: an error before any starts.
    auto [code2, out2] = sweep(tmp.str("two"), "1", {"--set", "threads=2"});
    CHECK(code2 == 2);
    CHECK_MESSAGE(contains(out2, "error: sweep: seed1: threads 2 is more than the 1 CPU(s) this "
                                 "process may run on"),
                  out2);
    CHECK_FALSE(fs::exists(tmp.str("two")));
  }
  // `--set threads=1` is kept: it used to be overridden by cores / jobs.
  auto [code, out] = sweep(tmp.str("one"), "1", {"--set", "threads=1"});
  CHECK_MESSAGE(code == 0, out);
  CHECK(commands_threads(tmp.str("one")) == std::vector<std::string>{"threads=1", "threads=1"});
  CHECK(load_run_config(tmp.str("one/seed2")).config.threads == 1);
}

TEST_CASE("sweep: the interrupt message says where each run stands, and names no empty group") {
  // Ctrl-C while no run was stopping (between runs, or after the running ones had finished) used
  // to print "0 stopped at a checkpoint ()"; a run stopped by SIGINT (sent to it directly) was
  // counted as stopped without a checkpoint.
  TempFolder tmp("sweep_interrupt_summary");
  auto status = [&](const std::string& name, int code, bool checkpoint, bool finished = false) {
    SweepRunStatus s;
    s.point.name = name;
    s.dir = tmp.str(name);
    fs::create_directories(s.dir);
    if (checkpoint) std::ofstream(run_checkpoint_path(s.dir)) << "x";
    s.exit_code = code;
    s.finished = finished;
    return s;
  };
  const std::vector<SweepRunStatus> between = {status("x", 0, true, true), status("y", 0, false)};
  const std::string quiet = sweep_interrupt_summary(between, "SIGINT", "runs/sw");
  CHECK(quiet == "sweep interrupted by SIGINT: 1 of 2 runs finished, 1 not started yet; in runs/sw");
  const std::vector<SweepRunStatus> ctrl_c = {status("a", 128 + SIGINT, true),
                                              status("b", 128 + SIGINT, true),
                                              status("c", 0, false)};
  CHECK(sweep_interrupt_summary(ctrl_c, "SIGINT", "runs/sw") ==
        "sweep interrupted by SIGINT: 0 of 3 runs finished, 2 stopped at a checkpoint (a, b), 1 "
        "not started yet; in runs/sw");
  const std::vector<SweepRunStatus> mixed = {status("done", 0, true, true),
                                             status("early", 128 + SIGTERM, false),
                                             status("broken", 2, true)};
  CHECK(sweep_interrupt_summary(mixed, "SIGTERM", "out") ==
        "sweep interrupted by SIGTERM: 1 of 3 runs finished, 1 stopped before a first checkpoint, "
        "to start over (early), 1 failed (broken): see their train.log; in out");
  // Many runs: the first names and a count.
  std::vector<SweepRunStatus> many;
  for (int i = 0; i < 10; ++i) many.push_back(status("r" + std::to_string(i), 128 + SIGTERM, true));
  const std::string msg = sweep_interrupt_summary(many, "SIGTERM", "o");
  CHECK(msg.find("10 stopped at a checkpoint (r0, r1, r2, r3, r4, r5, r6, r7 and 2 more)") !=
        std::string::npos);
  CHECK(msg.find("()") == std::string::npos);
}
