// Every named experiment end to end at a tiny size (2 training steps, one variant, one seed) on
// the built-in data: `relpos reproduce` must run every stage — sweep, length evaluation,
// analysis, report — and exit 0 with a report that has its sections and the command that made
// it. This catches a stage that breaks the pipeline without the cost of a real mini run (a few
// CPU seconds each). Skips when the built-in corpora are not fetched.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "core/util/process.h"
#include "tests/child_log.h"
#include "tests/data_helpers.h"
#include "tests/text_file.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

bool have_builtin_data() {
  for (const char* rel : {"sotu/package/data", "sentiment/package/test/fixtures"})
    if (!fs::exists(cache_dir() + "/" + rel)) {
      MESSAGE("skipped: " << cache_dir() << "/" << rel << " is missing (run scripts/fetch_data.sh)");
      return false;
    }
  return true;
}

// The scale that `extra` names (--scale S), else mini.
std::string scale_of(const std::vector<std::string>& extra) {
  const auto it = std::find(extra.begin(), extra.end(), "--scale");
  return it != extra.end() && it + 1 != extra.end() ? *(it + 1) : "mini";
}

// `extra`: more arguments, e.g. --scale gpu (instead of mini) or --no-figures.
ChildResult reproduce(const std::string& name, const std::string& out, const std::string& grid,
                      const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"reproduce",
                                name,
                                "--out",
                                out,
                                "--quiet",
                                "--set",
                                "data.cache_dir=" + cache_dir(),
                                "--set",
                                "train.steps=2",
                                "--set",
                                "train.eval_batches=1",
                                "--set",
                                "eval.max_tokens=2048",
                                "--set",
                                "sweep.grid=" + grid};
  args.insert(args.end(), extra.begin(), extra.end());
  if (scale_of(extra) == "mini") args.insert(args.end(), {"--scale", "mini"});
  // Every stage of an experiment: a few times the patience of a single training run.
  return call_relpos(args, {}, 3 * kPatienceS);
}

// Every Markdown link and image of a report, "[text](target)", resolves to a file beside it
// (tables, figures, stage reports, commands.txt): a report must not link what it did not write.
// `some_links`: it has at least one (a report without figures may have none).
void check_links_resolve(const fs::path& report, bool some_links = true) {
  const std::string md = read_text(report.string());
  size_t links = 0;
  for (size_t at = md.find("]("); at != std::string::npos; at = md.find("](", at + 2)) {
    const size_t end = md.find(')', at);
    REQUIRE(end != std::string::npos);
    const std::string target = md.substr(at + 2, end - at - 2);
    if (target.rfind("http", 0) == 0) continue;
    ++links;
    CHECK_MESSAGE(fs::exists(report.parent_path() / target), report.string() << " links " << target);
  }
  if (some_links) CHECK_MESSAGE(links > 0, report.string());
}

// Every run folder below `dir` (a folder holding config.yaml) has finished (result.json).
int count_finished_runs(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() == "config.yaml") {
      CHECK_MESSAGE(fs::exists(e.path().parent_path() / "result.json"), e.path().parent_path());
      ++n;
    }
  return n;
}

// The gpu scale (configs/experiments/*/gpu.yaml, scripts/run-experiments-gpu.sh) at its model
// size on the CPU, 2 steps, in its bf16 precision: the configs load and run, and --no-figures
// leaves every figure out (the GPU machine has no gnuplot) while every link still resolves.
std::vector<std::string> gpu_scale_on_cpu() {
  return {"--scale", "gpu", "--no-figures", "--set", "device=cpu", "--set", "train.batch_size=2"};
}

void check_no_figures(const std::string& out) {
  for (const auto& e : fs::recursive_directory_iterator(out))
    CHECK_MESSAGE(e.path().extension() != ".png", e.path());
  CHECK(read_text(out + "/commands.txt").find("--scale gpu") != std::string::npos);
  CHECK(read_text(out + "/commands.txt").find("--no-figures") != std::string::npos);
}

// One named experiment at a tiny size, in a folder of its own (a test case each, so that ctest
// runs them in parallel).
struct E2eCase {
  std::string name, grid;
  std::vector<std::string> sections;  // report headings it must have
  int runs;                           // run folders it trains
  std::vector<std::string> extra = {};   // more arguments of reproduce
  std::vector<std::string> absent = {};  // what its report and claims.json must not have
};

void reproduce_end_to_end(const E2eCase& c) {
  if (!have_builtin_data()) return;
  const std::string scale = scale_of(c.extra);  // a folder per scale: ctest runs them at once
  TempFolder tmp("reproduce_e2e_" + c.name + (scale == "mini" ? "" : "_" + scale));
  const std::string out = tmp.str(c.name);
  const bool figures = std::find(c.extra.begin(), c.extra.end(), "--no-figures") == c.extra.end();
  const ChildResult r = reproduce(c.name, out, c.grid, c.extra);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("report: " + out + "/report.md") != std::string::npos);
  const std::string report = read_text(out + "/report.md");
  for (const auto& s : c.sections) CHECK_MESSAGE(report.find(s) != std::string::npos, s);
  const std::string claims = read_text(out + "/claims.json");
  for (const auto& s : c.absent) CHECK_MESSAGE((report + claims).find(s) == std::string::npos, s);
  if (!figures) {
    check_no_figures(out);
    // The analysed folder's report says so where it would list the runs' figures (huang2020's:
    // its stage's).
    const std::string stage = out + "/pretrain/report.md";
    CHECK(read_text(fs::exists(stage) ? stage : out + "/report.md")
              .find("No figures: the analysis ran without them (--no-figures)") !=
          std::string::npos);
  }
  CHECK(report.find("relpos reproduce " + c.name) != std::string::npos);  // the command
  CHECK(read_text(out + "/commands.txt").find("commit") != std::string::npos);
  CHECK(count_finished_runs(out) == c.runs);
  // The report ends with its claims, one verdict per claim; every link of every report
  // (stages included) resolves.
  CHECK(report.rfind("\n## ") == report.rfind("\n## Claims"));
  CHECK(fs::exists(fs::path(out) / "claims.json"));
  for (const auto& e : fs::recursive_directory_iterator(out))
    if (e.path().filename() == "report.md") check_links_resolve(e.path(), figures);
  // CLAIMS.md beside the experiment: one row per claim, linking its report.
  const std::string index = read_text(tmp.str("CLAIMS.md"));
  CHECK(index.find("](" + c.name + "/report.md)") != std::string::npos);
  if (c.name == "invariance")  // its training_length stage: a row per variant and length
    CHECK(read_text(out + "/training_length/report.md")
              .find(", train.steps=") != std::string::npos);
  if (c.name == "quickstart")  // its one claim, the regime check
    CHECK(index.find("\"learned and sinusoidal beat none\"") != std::string::npos);
}

}  // namespace

TEST_CASE("reproduce: quickstart runs end to end at a tiny size") {
  reproduce_end_to_end(
      {"quickstart", "[\"position.type=alibi\"]", {"## Tables", "## Figures", "## Claims"}, 1});
}

TEST_CASE("reproduce: invariance runs end to end at a tiny size") {
  // Two runs: the main one and its training_length stage's (the --set grid replaces both grids).
  reproduce_end_to_end({"invariance", "[\"position.type=learned+tisa\", \"seed=1\"]",
                        {"## Tables", "## Runs", "## Claims"}, 2});
}

TEST_CASE("reproduce: extrapolation runs end to end at a tiny size") {
  // learned: its clamped evaluation is a row of its own ("learned (clamped)").
  reproduce_end_to_end({"extrapolation", "[\"position.type=learned\"]",
                        {"## Tables", "## Figures", "## Claims", "| learned (clamped) |"}, 1});
}

TEST_CASE("reproduce: tisa2021 runs end to end at a tiny size") {
  reproduce_end_to_end({"tisa2021", "[\"position.type=tisa\", \"seed=1\"]",
                        {"## Classification with and without TISA",
                         "## Positional parameters of every variant", "## Claims"},
                        2});
}

TEST_CASE("reproduce: huang2020 runs end to end at a tiny size") {
  // The drop-in stage continues each seed's pretrain/learned run: the grid keeps learned.
  reproduce_end_to_end({"huang2020", "[\"position.type=learned\", \"seed=1\"]",
                        {"## Table 1", "## Drop-in", "## Claims"}, 5});
}

TEST_CASE("reproduce: synthetic runs end to end at a tiny size") {
  // One run per task that the mini config's sweep.stages chooses; the report names the others.
  const Config mini =
      load_config({test::config_path("experiments/synthetic/mini.yaml")}).config;
  REQUIRE_FALSE(mini.sweep.stages.empty());
  reproduce_end_to_end(
      {"synthetic", "[\"position.type=alibi\", \"seed=1\"]",
       {"## Sequence accuracy at the longest training length N", "## Per task", "## Claims",
        "(the config's sweep.stages); not run: "},
       static_cast<int>(mini.sweep.stages.size())});
}

TEST_CASE("reproduce: huang2020 at the gpu scale runs its pre-training stage alone, no figures") {
  if (!have_builtin_data()) return;
  // The gpu config's sweep.stages: pretrain; the claims of the other stages are not judged.
  reproduce_end_to_end(
      {"huang2020",
       "[\"position.type=huang_m4\", \"seed=1\"]",
       {"## Table 1: pre-training\n", "## Inductive test",
        "Not run: squad, classify, dropin (the config's sweep.stages",
        "*(huang_m4, first layer: attention averaged over heads (probe set): not "
        "drawn, this invocation ran with --no-figures)*"},
       1,
       gpu_scale_on_cpu(),
       {"huang2020-table1-span-qa", "huang2020-drop-in", "## Drop-in", "squad/report.md"}});
}

TEST_CASE("reproduce: invariance at the gpu scale runs on a CPU at its model size, no figures") {
  reproduce_end_to_end({"invariance",
                        "[\"position.type=learned\", \"seed=1\"]",
                        {"## Tables", "## Claims"},
                        2,
                        gpu_scale_on_cpu()});
}

TEST_CASE("reproduce huang2020: sweep.stages without pretrain is refused before anything trains") {
  TempFolder tmp("reproduce_stages");
  const std::string out = tmp.str("exp");
  const ChildResult r = reproduce("huang2020", out, "[\"position.type=learned\", \"seed=1\"]",
                                  {"--set", "sweep.stages=[squad]"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("sweep.stages: huang2020's other stages start from the runs of its pretrain "
                   "stage, which [squad] leaves out") != std::string::npos);
  CHECK(r.err.find("hint: keep pretrain in sweep.stages") != std::string::npos);
  CHECK_FALSE(fs::exists(fs::path(out) / "squad"));
}

TEST_CASE("reproduce huang2020: a grid without learned is refused before anything trains") {
  TempFolder tmp("reproduce_dropin");
  const std::string out = tmp.str("exp");
  const ChildResult r = reproduce("huang2020", out, "[\"position.type=alibi\", \"seed=1\"]");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("error: sweep.grid: huang2020's drop-in stage continues the pre-trained "
                   "`learned` run of each seed, which the grid [position.type=alibi; seed=1] does "
                   "not make") != std::string::npos);
  CHECK(r.err.find("hint: keep position.type=learned in the grid") != std::string::npos);
  CHECK_FALSE(fs::exists(fs::path(out) / "pretrain"));
}
