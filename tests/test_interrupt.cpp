// Interrupted runs lose nothing (issue 7), tested on the real `relpos` executable in a child
// process: SIGTERM/SIGINT mid-run and mid-evaluation, SIGKILL at several moments, and a sweep
// stopped by SIGTERM and by SIGKILL, and `relpos reproduce` stopped in its sweep and between
// stages; each time the resumed run ends with the losses of an uninterrupted one.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <regex>

#include "core/io/checkpoint.h"
#include "core/io/run_file.h"
#include "core/util/folder_lock.h"
#include "core/util/signals.h"
#include "experiments/experiment_context.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

std::vector<int64_t> snapshot_steps_of(const std::string& dir) {
  return RunFileReader::open(run_h5_path(dir))->snapshot_steps();
}

// The step in "interrupted by SIG... at step N of M", or -1.
int64_t interrupted_step(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("at step ([0-9]+) of"))) return -1;
  return std::stoll(m[1]);
}

// Everything a finished run logged equals the reference run: train and valid losses in
// metrics.jsonl and run.h5, the snapshots, the final weights.
void check_same_run(const std::string& dir, const std::string& ref) {
  CHECK(run_finished(dir));
  for (const char* name : {"train_loss", "valid_loss", "valid_accuracy", "lr"}) {
    CAPTURE(name);
    const auto got = logged(dir, name), want = logged(ref, name);
    REQUIRE(got.size() == want.size());
    CHECK(got == want);
  }
  auto a = RunFileReader::open(run_h5_path(dir)), b = RunFileReader::open(run_h5_path(ref));
  CHECK(a->metric("train_loss") == b->metric("train_loss"));
  CHECK(a->metric("valid_loss") == b->metric("valid_loss"));
  CHECK(a->snapshot_steps() == b->snapshot_steps());
  for (int64_t s : b->snapshot_steps()) {
    const std::string g = "/snapshots/step_" + std::to_string(s) + "/attention";
    CHECK_MESSAGE(torch::equal(a->dataset(g).value, b->dataset(g).value), g);
  }
  for (const auto& name : b->children("/weights"))
    CHECK_MESSAGE(torch::equal(a->dataset("/weights/" + name).value,
                               b->dataset("/weights/" + name).value),
                  name);
}

// `relpos train --resume` on DIR to the end (output in LOG), then check_same_run against REF.
void resume_to_end(const std::string& dir, const std::string& log, const std::string& ref) {
  auto [code, out] = run_relpos({"train", "--resume", "--out", dir, "--quiet"}, log);
  REQUIRE_MESSAGE(code == 0, out);
  check_same_run(dir, ref);
}

// 4 steps of tiny_run() evaluating every step on a corpus whose validation split is long enough
// for an evaluation to take ~0.3 s, against a few ms for a training step: a signal sent just
// after a step's checkpoint lands in the next step's training or evaluation, and either way
// stops the run inside that evaluation (see signal_in_second_evaluation).
std::vector<std::string> long_evaluation_run(const TempFolder& tmp) {
  {
    std::ofstream corpus(tmp.str("corpus.txt"));
    for (int d = 0; d < 300; ++d) {
      for (int w = 0; w < 40; ++w) corpus << "word" << (d * 7 + w * 13) % 97 << (w % 9 ? " " : ". ");
      corpus << "\n\n";
    }
  }
  auto sets = tiny_run(tmp.str("cache"), 4);
  sets.insert(sets.end(), {"data.corpus=" + tmp.str("corpus.txt"), "data.valid_fraction=0.5",
                           "train.eval_every=1", "train.eval_batches=400",
                           "train.checkpoint_every=1"});
  return sets;
}

// Sends SIGINT to `child` (a run of long_evaluation_run writing to DIR) once step 1's checkpoint
// is on disk, the last thing step 1 does. Waiting for that file, not for the metrics line
// written before it, keeps a slow checkpoint (an fsync on a busy disk) from taking the signal at
// step 1. The 60 ms after it let the run pass its check between steps (microseconds after the
// rename), so the signal lands in step 2's training or in its evaluation, which lasts
// hundreds of ms even on a fast machine; both stop the run inside that evaluation.
void signal_in_second_evaluation(Child& child, const std::string& dir) {
  const bool step_one_saved = wait_until(
      [&] {
        try {
          return checkpoint_step(run_checkpoint_path(dir)) >= 1;
        } catch (const Error&) {
          return false;  // not written yet
        }
      },
      kPatienceS, [&] { return child.running(); });
  REQUIRE_MESSAGE(step_one_saved, child.output());
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  child.signal(SIGINT);
}

}  // namespace

TEST_CASE("relpos train: SIGTERM mid-run checkpoints, exits 143 naming the resume command / "
          "--resume ends with the uninterrupted losses") {
  TempFolder tmp("sigterm");
  const auto sets = tiny_run(tmp.str("cache"));
  train_here(sets, tmp.str("ref"));
  const std::string dir = tmp.str("run");

  Child child(train_args(sets, dir), tmp.str("train.log"));
  REQUIRE(wait_until([&] { return count_lines(run_metrics_path(dir)) >= 13; }, kPatienceS,
                     [&] { return child.running(); }));
  child.signal(SIGTERM);
  const int code = child.wait();
  const std::string out = child.output();
  CHECK_MESSAGE(code == 143, out);
  CHECK_MESSAGE(contains(out, "error: interrupted by SIGTERM at step "), out);
  CHECK_MESSAGE(contains(out, "checkpoint saved and run.h5 closed in " + dir), out);
  CHECK_MESSAGE(contains(out, "hint: continue with: relpos train --resume --out " + dir), out);
  const int64_t step = interrupted_step(out);
  CHECK(step >= 13);
  CHECK(step < 60);
  CHECK_FALSE(run_finished(dir));
  CHECK_FALSE(fs::exists(run_h5_path(dir) + ".shadow"));  // closed cleanly
  CHECK_FALSE(fs::exists(run_checkpoint_path(dir) + ".tmp." + std::to_string(child.pid())));
  CHECK(load_saved(dir).state.step == step);  // the checkpoint of the step named
  std::vector<int64_t> snaps;
  for (int64_t s = 0; s <= step; s += 6) snaps.push_back(s);
  CHECK(snapshot_steps_of(dir) == snaps);

  // A second `train` without --resume is refused; --resume finishes the run.
  auto [again, again_out] = run_relpos(train_args(sets, dir), tmp.str("again.log"));
  CHECK(again == 2);
  CHECK_MESSAGE(contains(again_out, "holds an unfinished run"), again_out);
  resume_to_end(dir, tmp.str("resume.log"), tmp.str("ref"));
}

TEST_CASE("relpos train: SIGKILL at any moment leaves a loadable checkpoint and a readable "
          "run.h5 / --resume ends with the uninterrupted losses") {
  TempFolder tmp("sigkill");
  const auto sets = tiny_run(tmp.str("cache"));
  train_here(sets, tmp.str("ref"));
  const std::string dir = tmp.str("run");
  // Killed three times, at different moments after a metrics line appears, resumed each time.
  const std::vector<std::pair<int64_t, int>> kills{{4, 0}, {17, 3}, {38, 9}};
  for (size_t k = 0; k < kills.size(); ++k) {
    const auto [lines, delay_ms] = kills[k];
    CAPTURE(lines);
    std::vector<std::string> args =
        k == 0 ? train_args(sets, dir)
               : std::vector<std::string>{"train", "--resume", "--out", dir, "--quiet"};
    Child child(args, tmp.str("train.log"));
    REQUIRE(wait_until([&] { return count_lines(run_metrics_path(dir)) >= lines; }, kPatienceS,
                       [&] { return child.running(); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    child.signal(SIGKILL);
    REQUIRE(child.wait() == 128 + SIGKILL);

    // The last complete checkpoint loads; run.h5 (or its shadow) reads, with every snapshot
    // taken before the last logged step (each snapshot is flushed before the next step).
    const auto saved = load_saved(dir);
    const int64_t last_logged = logged(dir, "train_loss").back().first;
    CHECK(saved.state.step % 5 == 0);
    CHECK(saved.state.step <= last_logged);
    CHECK(saved.state.step >= last_logged - 5);
    for (const auto& [name, p] : saved.parameters) CHECK(torch::isfinite(p).all().item<bool>());
    auto reader = RunFileReader::open(run_h5_path(dir));
    const auto snaps = reader->snapshot_steps();
    for (int64_t s = 0; s < last_logged; s += 6)
      CHECK_MESSAGE(std::find(snaps.begin(), snaps.end(), s) != snaps.end(), "snapshot ", s);
    CHECK(reader->metric("train_loss").first.size() + 1 >= static_cast<size_t>(last_logged));
  }
  resume_to_end(dir, tmp.str("end.log"), tmp.str("ref"));
}

TEST_CASE("relpos train: SIGINT during a long evaluation stops within a batch / the resumed run "
          "redoes that evaluation and ends with the uninterrupted losses") {
  TempFolder tmp("sigint_eval");
  const auto sets = long_evaluation_run(tmp);
  train_here(sets, tmp.str("ref"));
  const std::string dir = tmp.str("run");
  Child child(train_args(sets, dir), tmp.str("train.log"));
  signal_in_second_evaluation(child, dir);
  const int code = child.wait();
  const std::string out = child.output();
  CHECK_MESSAGE(code == 130, out);
  CHECK_MESSAGE(contains(out, "error: interrupted by SIGINT at step 2 of 4"), out);
  CHECK_MESSAGE(contains(out, "hint: continue with: relpos train --resume --out " + dir), out);
  // Stopping inside the evaluation is proven by the checkpoint's pending flag below (a signal
  // seen only after the evaluation would stop at the next step with the flag unset); no clock
  // is read: a run that ignored the signal would finish its 4 steps and exit 0.
  // Step 2 was trained but its evaluation was cut short: the checkpoint says so, and nothing of
  // step 2 was logged.
  const auto saved = load_saved(dir);
  CHECK(saved.state.step == 2);
  CHECK(saved.state.pending_post_step);
  CHECK(logged(dir, "train_loss").back().first == 1);

  resume_to_end(dir, tmp.str("resume.log"), tmp.str("ref"));
}

TEST_CASE("relpos train --nproc 2: SIGINT during rank 0's evaluation stops every rank at that "
          "step / rank 0's checkpoint resumes under data parallelism") {
  RELPOS_SKIP_WITHOUT_GLOO();
  TempFolder tmp("sigint_eval_dp");
  const auto sets = long_evaluation_run(tmp);
  const std::string dir = tmp.str("run");
  auto args = train_args(sets, dir);
  args.insert(args.end(), {"--nproc", "2"});
  Child child(args, tmp.str("train.log"));
  signal_in_second_evaluation(child, dir);  // the launcher forwards one SIGTERM to each rank
  const int code = child.wait();
  const std::string out = child.output();
  CHECK_MESSAGE(code == 130, out);
  // Only rank 0 evaluates; rank 1 waits for its word and stops at the same step instead of
  // failing at the next collective when rank 0 leaves.
  CHECK_MESSAGE(contains(out, "rank 0 exit 143"), out);
  CHECK_MESSAGE(contains(out, "rank 1 exit 143"), out);
  CHECK_MESSAGE(!contains(out, "another rank"), out);
  const auto saved = load_saved(dir);
  CHECK(saved.state.step == 2);
  CHECK(saved.state.pending_post_step);
  CHECK(logged(dir, "train_loss").back().first == 1);

  auto resume = std::vector<std::string>{"train", "--resume", "--out", dir, "--quiet", "--nproc", "2"};
  auto [resumed, resumed_out] = run_relpos(resume, tmp.str("resume.log"));
  REQUIRE_MESSAGE(resumed == 0, resumed_out);
  CHECK(run_finished(dir));
  const auto losses = logged(dir, "valid_loss");
  REQUIRE(losses.size() == 4);
  for (int64_t i = 0; i < 4; ++i) CHECK(losses[i].first == i + 1);
}

namespace {

// The pid written in a run folder's lock file by the process that holds it ("pid N, what").
pid_t lock_holder(const std::string& dir) {
  std::ifstream in(FolderLock::lock_path(dir));
  std::string word;
  long pid = 0;
  in >> word >> pid;
  return word == "pid" ? static_cast<pid_t>(pid) : 0;
}

// Pauses each run (SIGSTOP) as soon as its metrics.jsonl has `lines` lines, so that a run that
// the scheduler favours cannot finish while the other is still starting; true once every run
// is paused mid-run. `paused` receives the pids, to be continued (SIGCONT) by the caller.
bool pause_runs_at(const std::vector<std::string>& runs, int64_t lines, Child& sweep,
                   std::vector<pid_t>& paused) {
  std::vector<bool> held(runs.size(), false);
  return wait_until(
      [&] {
        for (size_t i = 0; i < runs.size(); ++i) {
          if (held[i] || count_lines(run_metrics_path(runs[i])) < lines) continue;
          const pid_t pid = lock_holder(runs[i]);
          if (pid <= 0 || ::kill(pid, SIGSTOP) != 0) continue;
          paused.push_back(pid);
          held[i] = true;
        }
        return std::all_of(held.begin(), held.end(), [](bool h) { return h; });
      },
      kPatienceS, [&] { return sweep.running(); });
}

void continue_runs(const std::vector<pid_t>& paused) {
  for (const pid_t pid : paused) ::kill(pid, SIGCONT);
}

}  // namespace

TEST_CASE("relpos sweep: SIGTERM is forwarded, every run checkpoints, the sweep exits 143 / "
          "SIGKILL of the sweep still stops its runs at a checkpoint / the same command continues") {
  TempFolder tmp("sweep");
  // 200 steps, and each run is paused (SIGSTOP) at the line count the test waits for: on a
  // loaded machine one run could otherwise finish before the other had started (seen in CI).
  auto sets = tiny_run(tmp.str("cache"), 200);
  train_here(sets, tmp.str("ref"));  // seed 1, the sweep's first point
  const std::string exp = tmp.str("exp");
  std::vector<std::string> args{"sweep", "--config", config_path("base.yaml"), "--out", exp,
                                "--grid", "seed=1,2", "--jobs", "2", "--threads", "1"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  const std::string run1 = exp + "/seed1", run2 = exp + "/seed2";
  {
    Child sweep(args, tmp.str("sweep1.log"));
    std::vector<pid_t> paused;
    const bool held = pause_runs_at({run1, run2}, 8, sweep, paused);
    if (!held) continue_runs(paused);
    REQUIRE_MESSAGE(held, sweep.output());
    sweep.signal(SIGTERM);
    continue_runs(paused);  // each run finds the forwarded SIGTERM pending
    const int code = sweep.wait();
    const std::string out = sweep.output();
    CHECK_MESSAGE(code == 143, out);
    CHECK_MESSAGE(contains(out, "error: sweep interrupted by SIGTERM: 0 of 2 runs finished, 2 "
                                "stopped at a checkpoint (seed1, seed2)"),
                  out);
    CHECK_MESSAGE(contains(out, "hint: run the same command again to continue"), out);
    for (const auto& run : {run1, run2}) {
      CHECK_FALSE(run_finished(run));
      CHECK(load_saved(run).state.step >= 8);
      std::ifstream log(run + "/train.log");
      std::stringstream ss;
      ss << log.rdbuf();
      CHECK_MESSAGE(contains(ss.str(), "interrupted by SIGTERM at step"), ss.str());
    }
  }
  {
    // kill -9 of the sweep: its runs get SIGTERM from the kernel (parent-death signal), save a
    // checkpoint and stop.
    Child sweep(args, tmp.str("sweep2.log"));
    const int64_t before = count_lines(run_metrics_path(run1));
    std::vector<pid_t> paused;
    const bool held = pause_runs_at({run1, run2}, before + 6, sweep, paused);
    if (!held) continue_runs(paused);
    REQUIRE_MESSAGE(held, sweep.output());
    sweep.signal(SIGKILL);
    CHECK(sweep.wait() == 128 + SIGKILL);
    continue_runs(paused);  // each run finds the parent-death SIGTERM pending
    for (const auto& run : {run1, run2}) {
      // The run has stopped once its folder lock is free.
      CHECK(wait_until(
          [&] {
            try {
              FolderLock probe(run, "test");
              return true;
            } catch (const RunError&) {
              return false;
            }
          },
          kPatienceS));
      std::ifstream log(run + "/train.log");
      std::stringstream ss;
      ss << log.rdbuf();
      CHECK_MESSAGE(contains(ss.str(), "interrupted by SIGTERM"), ss.str());
      CHECK_FALSE(run_finished(run));
    }
  }
  auto [code, out] = run_relpos(args, tmp.str("sweep3.log"));
  REQUIRE_MESSAGE(code == 0, out);
  CHECK(contains(out, "start  seed1 (resuming)"));
  check_same_run(run1, tmp.str("ref"));
  CHECK(run_finished(run2));
  CHECK(logged(run2, "train_loss") != logged(run1, "train_loss"));
}

TEST_CASE("a run resumed twice (from a checkpoint written by a resumed run) ends with the "
          "uninterrupted losses") {
  // Regression: the trainer saved the RNG state it had loaded instead of the current one, so a
  // second resume replayed the dropout masks of the first.
  TempFolder tmp("resume_twice");
  const auto sets = tiny_run(tmp.str("cache"), 20);
  train_here(sets, tmp.str("ref"));
  train_here(sets, tmp.str("run"), /*stop_after=*/5);
  for (int64_t stop : {10, 0}) {
    TrainOptions o;
    o.out_dir = tmp.str("run");
    o.quiet = true;
    o.resume = true;
    o.stop_after = stop;
    train(load_run_config(o.out_dir), o);
  }
  CHECK(logged(tmp.str("run"), "train_loss") == logged(tmp.str("ref"), "train_loss"));
  CHECK(logged(tmp.str("run"), "valid_loss") == logged(tmp.str("ref"), "valid_loss"));
}

TEST_CASE("relpos reproduce: SIGTERM during its sweep checkpoints the running run and exits 143 / "
          "a signal between stages stops before the next stage") {
  TempFolder tmp("reproduce");
  // The quickstart experiment with tiny runs (its grid sets position.type; its config is a
  // causal LM, the tiny runs' masked LM needs the encoder).
  auto sets = tiny_run(tmp.str("cache"), 400);
  sets.erase(std::remove_if(sets.begin(), sets.end(),
                            [](const std::string& s) { return s.rfind("position.type=", 0) == 0; }),
             sets.end());
  sets.push_back("model.mode=encoder");
  const std::string exp = tmp.str("exp");
  std::vector<std::string> args{"reproduce", "quickstart", "--out", exp, "--jobs", "1"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  // The run folder that has logged at least 8 steps, or "".
  auto running_run = [&]() -> std::string {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(exp, ec))
      if (e.is_directory() && count_lines(run_metrics_path(e.path().string())) >= 8)
        return e.path().string();
    return "";
  };
  Child child(args, tmp.str("reproduce.log"));
  REQUIRE(wait_until([&] { return !running_run().empty(); }, kPatienceS,
                     [&] { return child.running(); }));
  child.signal(SIGTERM);
  const int code = child.wait();
  const std::string out = child.output();
  CHECK_MESSAGE(code == 143, out);
  // The grid's size, from quickstart's own config (its axes' values multiplied).
  size_t grid_runs = 1;
  for (const auto& axis :
       load_config({test::config_path("experiments/quickstart/mini.yaml")}).config.sweep.grid)
    grid_runs *= static_cast<size_t>(std::count(axis.begin(), axis.end(), ',') + 1);
  CHECK_MESSAGE(contains(out, "error: sweep interrupted by SIGTERM: 0 of " +
                                  std::to_string(grid_runs) +
                                  " runs finished, 1 stopped at a checkpoint"),
                out);
  CHECK_MESSAGE(contains(out, "hint: run the same command again to continue"), out);
  const std::string run = running_run();
  REQUIRE_FALSE(run.empty());
  CHECK_FALSE(run_finished(run));
  const auto saved = load_saved(run);
  CHECK(saved.state.step >= 8);
  CHECK(saved.state.step < 400);
  CHECK_FALSE(fs::exists(run_h5_path(run) + ".shadow"));  // closed cleanly

  // Between stages (here: before a run's length evaluation) the experiment stops at once.
  ReproduceOptions o;
  o.name = "quickstart";
  o.out_dir = exp;
  o.quiet = true;
  ExperimentContext ctx(o);
  install_interrupt_handlers();
  std::raise(SIGTERM);
  const std::string expected = "reproduce quickstart interrupted by SIGTERM before the length "
                               "evaluation of " + run;
  CHECK_THROWS_WITH_AS(ctx.evaluate_lengths({run}), doctest::Contains(expected.c_str()),
                       Interrupted);
  CHECK_THROWS_AS(ctx.analyze_and_report(exp), Interrupted);
  clear_interrupt();
  CHECK_FALSE(fs::exists(run + "/eval_extrapolation.csv"));
}

namespace {

// True once process `pid` runs relpos (it has exec'd: before that, the forked copy of this test
// runner has doctest's handlers) and has a handler installed for `sig` (SigCgt in /proc).
bool catches_signal(pid_t pid, int sig) {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  if (ec || exe.filename() != fs::path(RELPOS_BINARY).filename()) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("SigCgt:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1)) & 1ULL;
  return false;
}

// Status of a forked child that installs relpos's handlers and raises `first`, then `second`;
// it exits 0 when it survives both with `first` recorded as the interrupt.
int raise_twice(int first, int second) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    install_interrupt_handlers();
    std::raise(first);
    if (!interrupt_requested()) ::_exit(10);
    std::raise(second);
    ::_exit(interrupt_signal() == first ? 0 : 11);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("signals: a repeated SIGTERM is ignored while stopping, a second Ctrl-C ends the process at once") {
  int st = raise_twice(SIGTERM, SIGTERM);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  st = raise_twice(SIGINT, SIGTERM);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  st = raise_twice(SIGINT, SIGINT);
  REQUIRE(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGINT);
  st = raise_twice(SIGTERM, SIGINT);
  REQUIRE(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGINT);
}

TEST_CASE("relpos train: SIGTERM while the data loads stops before anything is written, exit 143") {
  TempFolder tmp("sig_data");
  {
    // About 26 MB of text: reading and encoding it takes long enough to signal during it.
    std::ofstream out(tmp.str("big.txt"));
    const std::string para = "The quick brown fox jumps over the lazy dog near the river bank. ";
    for (int i = 0; i < 400000; ++i) out << para << (i % 50 == 49 ? "\n\n" : "");
  }
  auto sets = tiny_run(tmp.str("cache"));
  sets.front() = "data.corpus=" + tmp.str("big.txt");
  const std::string dir = tmp.str("run");
  Child child(train_args(sets, dir), tmp.str("train.log"));
  // train() installs its handlers first thing, then prepares the folder and loads the data.
  REQUIRE(wait_until([&] { return catches_signal(child.pid(), SIGTERM); }, kPatienceS,
                     [&] { return child.running(); }));
  child.signal(SIGTERM);
  const int code = child.wait();
  const std::string out = child.output();
  CHECK_MESSAGE(code == 143, out);
  CHECK_MESSAGE(contains(out, "interrupted by SIGTERM while loading data, before training started"),
                out);
  CHECK_FALSE(fs::exists(run_checkpoint_path(dir)));
  CHECK_FALSE(fs::exists(run_h5_path(dir)));
  CHECK_FALSE(fs::exists(run_config_path(dir)));
}
