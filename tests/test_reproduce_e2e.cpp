// Every named experiment end to end at a tiny size (2 training steps, one variant, one seed) on
// the built-in data: `relpos reproduce` must run every stage — sweep, length evaluation,
// analysis, report — and exit 0 with a report that has its sections and the command that made
// it. This catches a stage that breaks the pipeline without the cost of a real mini run (a few
// CPU seconds each). Skips when the built-in corpora are not fetched.
#include <doctest/doctest.h>

#include <filesystem>

#include "core/util/process.h"
#include "tests/data_helpers.h"
#include "tests/tiny_run.h"
#include "tests/text_file.h"

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

ChildResult reproduce(const std::string& name, const std::string& out, const std::string& grid) {
  return run_child(RELPOS_BINARY,
                   {"reproduce", name, "--scale", "mini", "--out", out, "--quiet", "--set",
                    "data.cache_dir=" + cache_dir(), "--set", "train.steps=2", "--set",
                    "train.eval_batches=1", "--set", "eval.max_tokens=2048", "--set",
                    "sweep.grid=" + grid},
                   {600, 0});
}

// Every Markdown link and image of a report, "[text](target)", resolves to a file beside it
// (tables, figures, stage reports, commands.txt): a report must not link what it did not write.
void check_links_resolve(const fs::path& report) {
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
  CHECK_MESSAGE(links > 0, report.string());
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

// One named experiment at a tiny size, in a folder of its own (a test case each, so that ctest
// runs them in parallel).
struct E2eCase {
  std::string name, grid;
  std::vector<std::string> sections;  // report headings it must have
  int runs;                           // run folders it trains
};

void reproduce_end_to_end(const E2eCase& c) {
  if (!have_builtin_data()) return;
  TempFolder tmp("reproduce_e2e_" + c.name);
  const std::string out = tmp.str(c.name);
  const ChildResult r = reproduce(c.name, out, c.grid);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("report: " + out + "/report.md") != std::string::npos);
  const std::string report = read_text(out + "/report.md");
  for (const auto& s : c.sections) CHECK_MESSAGE(report.find(s) != std::string::npos, s);
  CHECK(report.find("relpos reproduce " + c.name) != std::string::npos);  // the command
  CHECK(read_text(out + "/commands.txt").find("commit") != std::string::npos);
  CHECK(count_finished_runs(out) == c.runs);
  // The report ends with its claims, one verdict per claim; every link of every report
  // (stages included) resolves.
  CHECK(report.rfind("\n## ") == report.rfind("\n## Claims"));
  CHECK(fs::exists(fs::path(out) / "claims.json"));
  for (const auto& e : fs::recursive_directory_iterator(out))
    if (e.path().filename() == "report.md") check_links_resolve(e.path());
  // CLAIMS.md beside the experiment: one row per claim, linking its report.
  const std::string index = read_text(tmp.str("CLAIMS.md"));
  CHECK(index.find("](" + c.name + "/report.md)") != std::string::npos);
  if (c.name == "quickstart")  // its one claim, the regime check
    CHECK(index.find("\"learned and sinusoidal beat none\"") != std::string::npos);
}

}  // namespace

TEST_CASE("reproduce: quickstart runs end to end at a tiny size") {
  reproduce_end_to_end(
      {"quickstart", "[\"position.type=alibi\"]", {"## Tables", "## Figures", "## Claims"}, 1});
}

TEST_CASE("reproduce: invariance runs end to end at a tiny size") {
  reproduce_end_to_end({"invariance", "[\"position.type=learned+tisa\", \"seed=1\"]",
                        {"## Tables", "## Runs", "## Claims"}, 1});
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
