// `relpos eval --run FOLDER` on a sweep or experiment folder: every finished run below it is
// evaluated (each as `relpos eval --run RUN` would), unfinished ones are named and skipped, and a
// folder without runs is an error.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/io/run_paths.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

TEST_CASE("relpos eval --run SWEEP_DIR evaluates every finished run in it, --jobs at a time") {
  TempFolder tmp("eval_folder");
  const auto sets = tiny_run(tmp.str("cache"), 2);
  const std::string root = tmp.str("sweep");
  train_here(sets, root + "/stage/a");
  train_here(sets, root + "/stage/b");
  train_here(sets, root + "/c", /*stop_after=*/1);  // unfinished
  auto [code, out] = run_relpos({"eval", "--run", root, "--jobs", "2", "--lengths", "16,32"},
                                tmp.str("log"), 300);
  REQUIRE_MESSAGE(code == 0, out);
  for (const char* run : {"/stage/a", "/stage/b"}) {
    CAPTURE(run);
    CHECK(fs::exists(root + run + "/eval_extrapolation.csv"));
    CHECK(out.find(root + run + "\n") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(root + "/c/eval_extrapolation.csv"));
  CHECK(out.find("skipped " + root + "/c: unfinished (no result.json)") != std::string::npos);
  CHECK(out.find("evaluated 2 of 2 runs under " + root) != std::string::npos);
  // The per-run tables: the lengths asked for.
  CHECK(out.find("T=16") != std::string::npos);
  CHECK(out.find("T=32") != std::string::npos);

  // A folder with no run in it.
  const std::string empty = tmp.str("empty");
  fs::create_directories(empty);
  auto [code2, out2] = run_relpos({"eval", "--run", empty}, tmp.str("log2"));
  CHECK(code2 == 2);
  CHECK(out2.find("not a run folder (no run.h5), and no finished run folder below it") !=
        std::string::npos);
  // --jobs below 1 is refused before anything runs.
  auto [code3, out3] = run_relpos({"eval", "--run", root, "--jobs", "0"}, tmp.str("log3"));
  CHECK(code3 == 2);
  CHECK(out3.find("--jobs") != std::string::npos);
}
