// The SLURM array job of `relpos sweep --emit-slurm`, without SLURM: shellcheck finds nothing in
// it; an element run by hand resumes a half-finished run folder and finishes it with the losses
// of an uninterrupted run; SIGUSR1 (the time-limit warning) makes the element stop relpos at a
// checkpoint and requeue itself through `scontrol` (a stand-in on PATH), a bounded number of
// times.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/util/process.h"
#include "tests/child_log.h"
#include "tests/dist_run.h"
#include "tests/helpers.h"
#include "tests/process_util.h"
#include "tests/text_file.h"
#include "tests/tiny_run.h"

extern char** environ;

using namespace relpos;
namespace fs = std::filesystem;

namespace {

void write_executable(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
}

// Writes the array job of a two-point grid (seed=1,2) over `sets` into DIR/job.sh.
std::string emit(const test::TempFolder& tmp, const std::vector<std::string>& sets) {
  const std::string script = tmp.str("job.sh");
  std::vector<std::string> args{"sweep", "--out", tmp.str("exp"), "--emit-slurm", script, "--grid",
                                "seed=1,2", "--config", test::config_path("base.yaml")};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  const ChildResult r = test::call_relpos(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return script;
}

// This process's environment with `set` ("NAME=value") replacing the same names: bash takes
// the last of two equal names, so the child gets each name once.
std::vector<std::string> environment_with(const std::vector<std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    bool replaced = false;
    for (const auto& s : set) replaced |= kv.substr(0, kv.find('=') + 1) == s.substr(0, s.find('=') + 1);
    if (!replaced) env.push_back(kv);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

}  // namespace

TEST_CASE("slurm: the array job asks for a warning signal, requeues itself and is shellcheck-clean") {
  test::TempFolder tmp("slurm_lint");
  const std::string script = emit(tmp, test::dist::tiny_sets(tmp.str("cache")));
  const std::string text = test::read_text(script);
  CHECK(test::contains(text, "#SBATCH --signal=B:USR1@120\n"));
  CHECK(test::contains(text, "#SBATCH --requeue\n"));
  CHECK(test::contains(text, "trap on_usr1 USR1\n"));
  CHECK(test::contains(text, "trap on_term TERM\n"));
  CHECK(test::contains(text, "scontrol requeue"));
  CHECK(test::contains(text, "SLURM_RESTART_COUNT"));

  const std::string shellcheck = "/usr/bin/shellcheck";
  if (!fs::exists(shellcheck)) {
    MESSAGE("shellcheck is not installed (scripts/setup.sh installs it): the lint part is skipped");
    return;
  }
  // Both forms: points whose config names a thread count (threads=1 here), and points that take
  // the element's CPUs (threads=0: the script then reads SLURM_CPUS_PER_TASK).
  for (const std::string threads : {"threads=1", "threads=0"}) {
    auto sets = test::dist::tiny_sets(tmp.str("cache"));
    sets.push_back(threads);
    const std::string job = emit(tmp, sets);
    CHECK(test::contains(test::read_text(job), "THREADS=\"${SLURM_CPUS_PER_TASK:-1}\"") ==
          (threads == "threads=0"));
    const ChildResult lint =
        test::call_program(shellcheck, {"--shell=bash", "--severity=style", job});
    INFO(threads);
    INFO(lint.out);
    INFO(lint.err);
    CHECK(lint.exit_code == 0);
    CHECK(lint.out.empty());
  }
}

TEST_CASE("slurm: an array element resumes a half-finished run folder and finishes it") {
  test::TempFolder tmp("slurm_resume");
  const auto sets = test::dist::tiny_sets(tmp.str("cache"));
  const std::string script = emit(tmp, sets);
  // Grid point 1 (seed=2) trained in this process up to step 2 of 4 and stopped with its
  // checkpoint, as a preempted element leaves it; the same point uninterrupted, for reference.
  auto point = sets;
  point.push_back("seed=2");
  const std::string dir = tmp.str("exp/seed2");
  test::train_here(point, dir, /*stop_after=*/2);
  REQUIRE(fs::exists(run_checkpoint_path(dir)));
  REQUIRE_FALSE(run_finished(dir));
  test::train_here(point, tmp.str("reference"));

  // A stand-in for relpos that logs its arguments, so the test sees --resume was asked for.
  const std::string wrapper = tmp.str("relpos_wrapper.sh"), calls = tmp.str("calls.txt");
  write_executable(wrapper, "#!/bin/bash\necho \"$*\" >> " + calls + "\nexec " + RELPOS_BINARY +
                                " \"$@\"\n");
  const ChildResult job =
      test::call_program("/bin/bash", {script},
                         {"SLURM_ARRAY_TASK_ID=1", "SLURM_CPUS_PER_TASK=1", "RELPOS=" + wrapper});
  INFO(job.out);
  INFO(job.err);
  REQUIRE(job.exit_code == 0);
  CHECK(test::contains(job.out, "seed2: resuming from " + dir + "/checkpoint.pt"));
  const std::string called = test::read_text(calls);
  CHECK(test::contains(called, "train --out " + dir + " --quiet --resume --set threads=1"));
  CHECK_FALSE(test::contains(called, "--overwrite"));
  REQUIRE(run_finished(dir));
  const auto ref = test::dist::train_losses(tmp.str("reference")), got = test::dist::train_losses(dir);
  REQUIRE(ref.size() == 4);
  REQUIRE(got.size() == ref.size());
  for (size_t i = 0; i < ref.size(); ++i) CHECK(got[i] == doctest::Approx(ref[i]).epsilon(1e-6));

  // Point 0 has no folder yet: a fresh start (--overwrite and the configs), not a resume.
  const ChildResult fresh =
      test::call_program("/bin/bash", {script},
                         {"SLURM_ARRAY_TASK_ID=0", "SLURM_CPUS_PER_TASK=1", "RELPOS=" + wrapper});
  INFO(fresh.err);
  REQUIRE(fresh.exit_code == 0);
  CHECK(test::contains(test::read_text(calls),
                       "train --out " + tmp.str("exp/seed1") + " --quiet --overwrite --config"));
  CHECK(run_finished(tmp.str("exp/seed1")));
}

namespace {

// Runs element 0 of `script` under bash (scontrol from `bin`), sends bash `sig` once relpos
// logged two more steps into `dir`, and returns bash's exit status and its output.
std::pair<int, std::string> signalled_element(const std::string& script, const std::string& dir,
                                              const std::string& bin, int sig,
                                              const std::string& restart_count) {
  const std::string log = (fs::path(bin).parent_path() / "element.log").string();
  fs::remove(log);
  const int64_t logged_before = test::dist::train_losses_if_any(dir);
  const char* path = std::getenv("PATH");
  SpawnOptions o;
  o.env = environment_with({"PATH=" + bin + ":" + (path ? path : "/usr/bin:/bin"),
                            "SLURM_ARRAY_TASK_ID=0", "SLURM_CPUS_PER_TASK=1", "SLURM_JOB_ID=4242",
                            "SLURM_RESTART_COUNT=" + restart_count});
  o.only_env = true;
  o.log_file = log;
  const pid_t pid = spawn_child({"/bin/bash", script}, o);
  int status = 0;
  bool ended = false;  // before the signal: the element failed early
  test::wait_until([&] { return test::dist::train_losses_if_any(dir) >= logged_before + 2; },
                   test::kPatienceS,
                   [&] {
                     ended = waitpid(pid, &status, WNOHANG) == pid;
                     return !ended;
                   });
  if (!ended) {
    kill(pid, sig);
    waitpid(pid, &status, 0);
  }
  const std::string out = test::read_text(log);
  test::ChildLog::instance().note({"/bin/bash", script}, test::wait_status_text(status), out);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

// A script whose element 0 trains far longer than a test waits, with a stand-in scontrol (in
// `bin`) that records what it was asked in `asked`; `dir` is element 0's run folder.
struct LongElement {
  std::string script, bin, asked, dir;
};
LongElement long_element(const test::TempFolder& tmp) {
  auto sets = test::dist::tiny_sets(tmp.str("cache"));
  sets.insert(sets.end(), {"train.steps=100000", "train.checkpoint_every=100000"});
  LongElement e{emit(tmp, sets), tmp.str("bin"), tmp.str("scontrol.txt"), tmp.str("exp/seed1")};
  fs::create_directories(e.bin);
  write_executable(e.bin + "/scontrol", "#!/bin/bash\necho \"$*\" >> " + e.asked + "\n");
  return e;
}

}  // namespace

TEST_CASE("slurm: SIGUSR1 before the time limit checkpoints the run and requeues the element, a bounded number of times") {
  test::TempFolder tmp("slurm_usr1");
  const LongElement e = long_element(tmp);
  const std::string &script = e.script, &bin = e.bin, &asked = e.asked, &dir = e.dir;

  auto interrupted_element = [&](const std::string& restart_count) {
    return signalled_element(script, dir, bin, SIGUSR1, restart_count);
  };

  const auto first = interrupted_element("0");
  const int code = first.first;
  const std::string err = first.second;
  INFO(err);
  CHECK(code == 0);
  CHECK(test::contains(err, "seed1: the time limit is near: stopping at a checkpoint"));
  CHECK(
      test::contains(err, "interrupted"));  // relpos's own message: it got SIGTERM and checkpointed
  CHECK(test::contains(err, "seed1: requeueing (requeue 1 of 3)"));
  CHECK(test::read_text(asked) == "requeue 4242\n");
  REQUIRE(fs::exists(run_checkpoint_path(dir)));
  CHECK_FALSE(run_finished(dir));

  // The requeued element (SLURM_RESTART_COUNT=3, the default bound) resumes, and on the next
  // warning stops at a checkpoint again but does not requeue.
  const auto second = interrupted_element("3");
  const int code2 = second.first;
  const std::string err2 = second.second;
  INFO(err2);
  CHECK(code2 == 1);
  CHECK(test::contains(err2, "seed1: resuming from " + dir + "/checkpoint.pt"));
  CHECK(test::contains(err2, "not requeued: requeued 3 times already (RELPOS_MAX_REQUEUES=3)"));
  CHECK(test::read_text(asked) == "requeue 4242\n");  // unchanged
  // Every step was logged once, in order: the second attempt continued from the checkpoint.
  std::ifstream metrics(run_metrics_path(dir));
  int64_t expect = 1;
  for (std::string line; std::getline(metrics, line); ++expect)
    CHECK(nlohmann::json::parse(line).at("step").get<int64_t>() == expect);
  CHECK(expect - 1 >= 4);
}

TEST_CASE(
    "slurm: SIGTERM to the job (preemption, scancel) checkpoints the run and leaves the requeue to "
    "SLURM") {
  test::TempFolder tmp("slurm_term");
  const LongElement e = long_element(tmp);
  const std::string &script = e.script, &bin = e.bin, &asked = e.asked, &dir = e.dir;
  const auto result = signalled_element(script, dir, bin, SIGTERM, "0");
  const int code = result.first;
  const std::string err = result.second;  // not a structured binding: INFO captures it
  INFO(err);
  // relpos stopped at a checkpoint on the forwarded SIGTERM and exited 128 + 15; the element
  // exits with its status and asks scontrol nothing: SLURM requeues a preempted job itself.
  CHECK(code == 128 + SIGTERM);
  CHECK(test::contains(err, "seed1: SIGTERM (preempted or cancelled): stopping at a checkpoint"));
  CHECK(test::contains(err, "interrupted"));
  CHECK_FALSE(fs::exists(asked));
  REQUIRE(fs::exists(run_checkpoint_path(dir)));
  CHECK_FALSE(run_finished(dir));
}
