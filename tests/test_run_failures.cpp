// Runs that cannot go on (issue 7): non-finite losses, an unwritable output folder, a folder
// that holds a run or is in use by another process (a full disk: test_disk_full.cpp). Each stops
// with a message naming what happened, keeps the last good checkpoint, and exits non-zero from
// the executable.
#include <doctest/doctest.h>

#include <cstdlib>
#include <regex>
#include <sstream>

#include "core/io/checkpoint.h"
#include "core/io/run_file.h"
#include "core/util/errors.h"
#include "core/util/folder_lock.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const std::string& n, const std::string& v) : name(n) { ::setenv(n.c_str(), v.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

bool same_parameters(const SavedCheckpoint& a, const SavedCheckpoint& b) {
  if (a.parameters.size() != b.parameters.size()) return false;
  for (const auto& [name, t] : a.parameters)
    if (!torch::equal(t, b.parameters.at(name))) return false;
  return true;
}

}  // namespace

TEST_CASE("non-finite loss: lr=1e30 stops the run naming the step, keeps the last good "
          "checkpoint, exits 2") {
  TempFolder tmp("nonfinite_lr");
  auto sets = tiny_run(tmp.str("cache"), 20);
  sets.insert(sets.end(), {"train.lr=1e30", "train.warmup=0", "train.checkpoint_every=1"});
  const std::string dir = tmp.str("run");
  auto [code, out] = run_relpos(train_args(sets, dir), tmp.str("log"));
  CHECK(code == 2);
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(out, m,
                                    std::regex("error: step ([0-9]+): the (loss|gradient norm) is "
                                               "not finite \\(.*\\); stopped; the last good "
                                               "checkpoint \\(step ([0-9]+)\\) is kept in ")),
                  out);
  const int64_t bad = std::stoll(m[1]), kept = std::stoll(m[3]);
  CHECK(bad >= 2);  // the first step's loss comes from the finite initial parameters
  CHECK(kept == bad - 1);
  CHECK_MESSAGE(contains(out, "hint: continue from it with a lower learning rate: relpos train "
                              "--resume --out " + dir),
                out);
  const auto saved = load_saved(dir);
  CHECK(saved.state.step == kept);
  for (const auto& [name, p] : saved.parameters) CHECK(torch::isfinite(p).all().item<bool>());
  CHECK_FALSE(run_finished(dir));
  CHECK(RunFileReader::open(run_h5_path(dir))->snapshot_steps().front() == 0);
  CHECK_FALSE(fs::exists(run_h5_path(dir) + ".shadow"));  // closed cleanly
}

TEST_CASE("non-finite loss at a chosen step (RELPOS_DEBUG_NONFINITE_STEPS): stop, or skip with "
          "train.skip_nonfinite") {
  TempFolder tmp("nonfinite_hook");
  auto sets = tiny_run(tmp.str("cache"), 10);
  sets.push_back("train.checkpoint_every=2");
  // The parameters after 4 good steps, from a run stopped there.
  train_here(sets, tmp.str("four"), /*stop_after=*/4);
  const auto after_four = load_saved(tmp.str("four"));
  {
    ScopedEnv env("RELPOS_DEBUG_NONFINITE_STEPS", "5");
    const std::string expected = "step 5: the loss is not finite (nan); stopped; the last good "
                                 "checkpoint (step 4) is kept in " + tmp.str("stop");
    CHECK_THROWS_WITH_AS(train_here(sets, tmp.str("stop")), expected.c_str(), RunError);
    const auto kept = load_saved(tmp.str("stop"));
    CHECK(kept.state.step == 4);
    CHECK(same_parameters(kept, after_four));
    CHECK(logged(tmp.str("stop"), "train_loss").back().first == 4);
  }
  {
    // At the very first step the kept checkpoint is step 0's, written before training.
    ScopedEnv env("RELPOS_DEBUG_NONFINITE_STEPS", "1");
    const std::string expected = "step 1: the loss is not finite (nan); stopped; the last good "
                                 "checkpoint (step 0) is kept in " + tmp.str("first");
    CHECK_THROWS_WITH_AS(train_here(sets, tmp.str("first")), expected.c_str(), RunError);
    CHECK(load_saved(tmp.str("first")).state.step == 0);
  }
  {
    // Skipping: the skipped step changes nothing — after steps 1-4 and a skipped step 5 the
    // parameters are those after step 4 — and the run goes on to the end.
    ScopedEnv env("RELPOS_DEBUG_NONFINITE_STEPS", "5,8");
    auto skip = sets;
    skip.push_back("train.skip_nonfinite=true");
    train_here(skip, tmp.str("skip5"), /*stop_after=*/5);
    CHECK(same_parameters(load_saved(tmp.str("skip5")), after_four));
    const TrainResult r = train_here(skip, tmp.str("skip"));
    CHECK(r.finished);
    CHECK(r.steps == 10);
    CHECK(r.skipped_batches == 2);
    const auto losses = logged(tmp.str("skip"), "train_loss");
    REQUIRE(losses.size() == 10);
    for (const auto& [step, loss] : losses)
      CHECK_MESSAGE(std::isnan(loss) == (step == 5 || step == 8), step);  // null when skipped
    CHECK(logged(tmp.str("skip"), "skipped_batches").back() == std::make_pair(int64_t{10}, 2.0));
    std::ifstream result(run_result_path(tmp.str("skip")));
    CHECK(nlohmann::json::parse(result).at("skipped_batches") == 2);
  }
}

TEST_CASE("train.skip_nonfinite gives up when the model has diverged (20 batches in a row)") {
  TempFolder tmp("nonfinite_diverged");
  auto sets = tiny_run(tmp.str("cache"), 40);
  sets.insert(sets.end(), {"train.lr=1e30", "train.warmup=0", "train.skip_nonfinite=true"});
  CHECK_THROWS_WITH_AS(train_here(sets, tmp.str("run")),
                       doctest::Contains("20 batches in a row were not finite, so the model has "
                                         "diverged; stopped; the last good checkpoint (step 20)"),
                       RunError);
}

TEST_CASE("an unwritable output folder is refused before anything starts") {
  TempFolder tmp("unwritable");
  auto sets = tiny_run(tmp.str("cache"), 4);
  {
    std::ofstream(tmp.str("a_file")) << "x";
    auto [code, out] = run_relpos(train_args(sets, tmp.str("a_file/run")), tmp.str("log1"));
    CHECK(code == 2);
    CHECK_MESSAGE(contains(out, "error: " + tmp.str("a_file/run") +
                                    ": cannot create the output folder: Not a directory"),
                  out);
    CHECK_MESSAGE(contains(out, "hint: choose a writable --out"), out);
  }
  {
    auto [code, out] = run_relpos(train_args(sets, tmp.str("a_file")), tmp.str("log2"));
    CHECK(code == 2);
    CHECK_MESSAGE(contains(out, "error: " + tmp.str("a_file") + ": exists and is not a folder"), out);
  }
  {
    auto [code, out] = run_relpos(train_args(sets, "/proc/relpos_run"), tmp.str("log3"));
    CHECK(code == 2);
    CHECK_MESSAGE(contains(out, "error: /proc/relpos_run: cannot create the output folder"), out);
  }
  TmpfsMount ro(tmp.str("ro"), "1m", /*ro=*/true);
  if (!ro.ok()) {
    MESSAGE("skipped the read-only mount case, not tested: a tmpfs cannot be mounted here ("
            << ro.why_not() << ")");
    return;
  }
  auto [code, out] = run_relpos(train_args(sets, tmp.str("ro")), tmp.str("log4"));
  CHECK(code == 2);
  CHECK_MESSAGE(contains(out, "error: " + tmp.str("ro") +
                                  ": the output folder is not writable: Read-only file system"),
                out);
}

TEST_CASE("a data problem found while preparing the probe leaves the run folder empty, so the "
          "same command runs once it is fixed") {
  TempFolder tmp("probe_first");
  const std::string dir = tmp.str("run");
  auto sets = tiny_run(tmp.str("cache"), 2);
  auto no_valid = sets;
  no_valid.push_back("data.valid_fraction=0");
  CHECK_THROWS_AS(train_here(no_valid, dir), DataError);
  // Nothing of a run was written: config.yaml, run.h5 and metrics.jsonl made the folder "hold an
  // unfinished run", which a rerun refused and --resume could not continue (no checkpoint).
  CHECK_FALSE(fs::exists(run_config_path(dir)));
  CHECK_FALSE(fs::exists(run_h5_path(dir)));
  CHECK_FALSE(fs::exists(run_metrics_path(dir)));
  CHECK_FALSE(fs::exists(run_checkpoint_path(dir)));
  // The folder did not exist before: the failed run removes it again, lock file and all.
  CHECK_FALSE(fs::exists(dir));
  const TrainResult r = train_here(sets, dir);  // no --overwrite
  CHECK(r.steps == 2);
}

TEST_CASE("relpos train with a missing corpus exits 2 naming it, and leaves no folder and no "
          "lock file behind") {
  TempFolder tmp("missing_corpus");
  auto sets = tiny_run(tmp.str("cache"), 2);
  sets.push_back("data.corpus=" + tmp.str("no_such_corpus.txt"));
  // A folder the run creates itself goes again.
  const std::string fresh = tmp.str("fresh/run");
  auto [code, out] = run_relpos(train_args(sets, fresh), tmp.str("log1"));
  CHECK(code == 2);
  CHECK(out.find("no_such_corpus.txt") != std::string::npos);
  CHECK_FALSE(fs::exists(fresh));
  // A folder that was there before stays, without the lock file.
  const std::string existing = tmp.str("existing");
  fs::create_directories(existing);
  auto [code2, out2] = run_relpos(train_args(sets, existing), tmp.str("log2"));
  CHECK(code2 == 2);
  CHECK(fs::is_directory(existing));
  CHECK_FALSE(fs::exists(FolderLock::lock_path(existing)));
  CHECK(fs::is_empty(existing));
}

TEST_CASE("relpos train and eval: a finished run is never overwritten silently, and a folder in "
          "use by another relpos process is refused") {
  TempFolder tmp("guard_cli");
  auto sets = tiny_run(tmp.str("cache"), 4);
  sets.push_back("snapshots.every_percent=0");
  const std::string dir = tmp.str("run");
  REQUIRE(run_relpos(train_args(sets, dir), tmp.str("log0")).first == 0);
  const auto before = logged(dir, "train_loss");
  {
    auto [code, out] = run_relpos(train_args(sets, dir), tmp.str("log1"));
    CHECK(code == 2);
    CHECK_MESSAGE(contains(out, "error: " + dir + ": holds a finished run"), out);
    CHECK_MESSAGE(contains(out, "hint: pass --overwrite to replace it, or choose another --out"), out);
    CHECK(logged(dir, "train_loss") == before);
    CHECK(run_finished(dir));
  }
  FolderLock held(dir, "a test holding the lock");
  for (const auto& args : std::vector<std::vector<std::string>>{
           [&] {
             auto a = train_args(sets, dir);
             a.push_back("--overwrite");
             return a;
           }(),
           {"train", "--resume", "--out", dir, "--quiet"},
           {"eval", "--run", dir, "--lengths", "16"}}) {
    CAPTURE(args[0]);
    auto [code, out] = run_relpos(args, tmp.str("log2"));
    CHECK(code == 2);
    CHECK_MESSAGE(contains(out, "error: " + dir + ": another relpos process is using this folder "
                                "(pid " + std::to_string(::getpid()) + ", a test holding the lock)"),
                  out);
    CHECK(contains(out, "hint: wait for it to finish"));
  }
  CHECK(logged(dir, "train_loss") == before);
  CHECK(run_finished(dir));
  CHECK_FALSE(RunFileReader::open(run_h5_path(dir))->exists("/eval/extrapolation"));
}

TEST_CASE("a folder lock: a second holder is refused, and the lock file goes with the lock") {
  TempFolder tmp("folder_lock");
  const std::string dir = tmp.str("run");
  fs::create_directories(dir);
  {
    FolderLock first(dir, "training");
    CHECK(fs::exists(FolderLock::lock_path(dir)));
    CHECK_THROWS_WITH_AS(FolderLock(dir, "evaluation"),
                         doctest::Contains("another relpos process is using this folder (pid "),
                         RunError);
  }
  CHECK_FALSE(fs::exists(FolderLock::lock_path(dir)));
  FolderLock again(dir, "training");  // free again
  CHECK(fs::exists(FolderLock::lock_path(dir)));
}
