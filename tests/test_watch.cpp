// `relpos watch` (analysis/watch.h, docs/training.md "Watching runs"): the loss curve's block
// characters against their formula, and the real executable on a finished tiny sweep, a stopped
// run, a folder a sweep still holds, and paths that are not folders of runs.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "analysis/watch.h"
#include "core/io/run_paths.h"
#include "core/util/errors.h"
#include "core/util/folder_lock.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

// The eight blocks, lowest first (U+2581..U+2588).
const std::vector<std::string> kLevels = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

std::string blocks(const std::vector<int>& levels) {
  std::string s;
  for (int l : levels) s += l < 0 ? " " : kLevels[static_cast<size_t>(l)];
  return s;
}

// The curve of at most 24 losses, one column each, from the formula of analysis/watch.h.
std::string naive_curve(const std::vector<std::pair<int64_t, double>>& losses) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& [step, v] : losses) lo = std::min(lo, v), hi = std::max(hi, v);
  std::vector<int> levels;
  for (const auto& [step, v] : losses)
    levels.push_back(std::min(7, static_cast<int>(std::floor(8 * (v - lo) / (hi - lo)))));
  return blocks(levels);
}

// The line `relpos watch` prints for the run `name`: the last line of `out` that starts with it.
std::string line_of(const std::string& out, const std::string& name) {
  std::string found, line;
  std::istringstream in(out);
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) found = line;
  return found;
}

}  // namespace

TEST_CASE("watch: the loss curve is the parts' means scaled from the lowest block to the highest") {
  using analysis::sparkline;
  // One value per column: level floor(8 (v − min) / (max − min)), the maximum at the top block.
  CHECK(sparkline({0, 1, 2, 3, 4, 5, 6, 7}, 24) == blocks({0, 1, 2, 3, 4, 5, 6, 7}));
  CHECK(sparkline({3, 1, 2}, 24) == blocks({7, 0, 4}));  // (2−1)/(3−1)·8 = 4
  // 8 values in 4 columns: means 0.5, 2.5, 4.5, 6.5 -> levels 0, 2 (2.67), 5 (5.33), 7.
  CHECK(sparkline({0, 1, 2, 3, 4, 5, 6, 7}, 4) == blocks({0, 2, 5, 7}));
  // 5 values in 2 columns: parts [0, 2) and [2, 5): means 1.5 and 4.
  CHECK(sparkline({1, 2, 3, 4, 5}, 2) == blocks({0, 7}));
  // A part without a finite value is blank; NaN values do not enter a mean; all equal: middle.
  CHECK(sparkline({2, NAN, 4}, 3) == blocks({0, -1, 7}));
  CHECK(sparkline({NAN, 1, 3, 5}, 2) == blocks({0, 7}));  // means 1 and 4
  CHECK(sparkline({5, 5, 5}, 8) == blocks({3, 3, 3}));
  CHECK(sparkline({}, 8).empty());
}

TEST_CASE("relpos watch: a finished sweep and a stopped run are printed in their final state, "
          "and the watch exits 0; --once prints once") {
  TempFolder tmp("watch_sweep");
  const auto sets = tiny_run(tmp.str("cache"), 6);
  const std::string exp = tmp.str("exp");
  std::vector<std::string> args{"sweep", "--config", config_path("base.yaml"), "--out", exp,
                                "--grid", "seed=1,2", "--jobs", "2", "--threads", "1"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  auto [code, out] = run_relpos(args, tmp.str("sweep.log"), 300);
  REQUIRE_MESSAGE(code == 0, out);
  // A third run, stopped at its step-3 checkpoint (no result.json), in a folder of its own.
  REQUIRE_FALSE(train_here(tiny_run(tmp.str("cache"), 6), exp + "/extra/stopped", 3).finished);

  auto [wcode, wout] = run_relpos({"watch", exp, "--interval", "0.1"}, tmp.str("watch.log"));
  INFO(wout);
  CHECK(wcode == 0);
  CHECK(wout.find('\033') == std::string::npos);  // not a terminal: no escape codes
  for (const char* run : {"seed1", "seed2"}) {
    CAPTURE(run);
    const std::string line = line_of(wout, run);
    const double loss = logged(exp + "/" + run, "train_loss").back().second;
    CHECK(contains(line, "step 6/6 100%"));
    CHECK(contains(line, fmt::format("loss {:.4f}", loss)));
    CHECK(contains(line, "tok/s"));
    CHECK(contains(line, "took "));
    CHECK(contains(line, naive_curve(logged(exp + "/" + run, "train_loss"))));
    CHECK(line.substr(line.size() - 9) == " finished");
  }
  const std::string stopped = line_of(wout, "extra/stopped");
  CHECK(contains(stopped, "step 3/6  50%"));
  CHECK(stopped.substr(stopped.size() - 8) == " stopped");
  CHECK(contains(wout, "watch: every run has ended; 3 run(s): 0 running, 2 finished, 1 stopped"));

  auto [ocode, oout] = run_relpos({"watch", exp + "/seed1", "--once"}, tmp.str("once.log"));
  CHECK(ocode == 0);
  CHECK_MESSAGE(contains(oout, "1 run(s): 0 running, 1 finished, 0 stopped"), oout);
  CHECK(contains(line_of(oout, "seed1"), "step 6/6 100%"));
}

TEST_CASE("relpos watch: waits while a sweep holds the folder, and ends once it lets go") {
  TempFolder tmp("watch_busy");
  const std::string exp = tmp.str("exp");
  REQUIRE(train_here(tiny_run(tmp.str("cache"), 3), exp + "/a").finished);
  auto lock = std::make_unique<FolderLock>(exp, "sweep");
  Child watch({"watch", exp, "--interval", "0.1"}, tmp.str("watch.log"));
  REQUIRE(wait_until([&] { return contains(watch.output(), " finished"); }, kPatienceS,
                     [&] { return watch.running(); }));
  // Many looks later it still waits: the sweep's lock is held by a live process (this one).
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  CHECK(watch.running());
  lock.reset();
  CHECK(watch.wait(60) == 0);
  CHECK_MESSAGE(contains(watch.output(), "1 run(s): 0 running, 1 finished"), watch.output());
}

TEST_CASE("relpos watch: a missing path, a file and a folder without runs are errors naming "
          "the path") {
  TempFolder tmp("watch_bad");
  std::ofstream(tmp.str("file.txt")) << "x";
  fs::create_directories(tmp.str("empty/sub"));
  const std::string hint = "give a run folder";
  // The executable: exit status 2, the error and the hint.
  auto [code, out] = run_relpos({"watch", tmp.str("missing"), "--once"}, tmp.str("bad.log"));
  CHECK(code == 2);
  CHECK_MESSAGE(contains(out, "error: watch: " + tmp.str("missing") + ": no such folder"), out);
  CHECK_MESSAGE(contains(out, "hint: " + hint), out);
  // The other cases in this process.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {tmp.str("file.txt"), "watch: " + tmp.str("file.txt") + ": not a folder (it is a regular file)"},
      {tmp.str("empty"), "watch: " + tmp.str("empty") +
                             ": no run folder in it (none holds config.yaml or metrics.jsonl) "
                             "and no sweep at work"}};
  for (const auto& [path, message] : cases) {
    CAPTURE(path);
    std::ostringstream sink;
    analysis::WatchOptions o;
    o.once = true;
    try {
      analysis::watch_runs(path, o, sink);
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()) == message);
      CHECK(contains(e.hint(), hint));
    }
  }
}
