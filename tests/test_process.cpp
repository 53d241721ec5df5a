// core/util/process.h: the one helper every child process of relpos goes through (bench
// children, data-parallel ranks, sweep runs, gnuplot, the isolated run-file read). Its exit
// codes, signals, time limit and captured output are tested in test_bench.cpp; here the
// options the other callers need, each observed from outside the child.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/util/process.h"
#include "tests/child_log.h"
#include "tests/io_test_util.h"

using namespace relpos;
namespace fs = std::filesystem;

namespace {

// Waits (at most the tests' patience) for `pid` to end through reap_child(), as a launcher's
// loop does.
std::optional<ChildExit> reap(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(test::kPatienceS);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto done = reap_child()) {
      if (done->pid == pid) return done;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::nullopt;
}

// Field 5 of /proc/PID/stat: the process group.
pid_t process_group_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream rest(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
  std::string state;
  pid_t ppid = 0, pgrp = 0;
  rest >> state >> ppid >> pgrp;
  return pgrp;
}

}  // namespace

TEST_CASE("process: a working folder, merged output, and the exit codes of a failed start") {
  test::ScratchDir dir("process_cwd");
  SpawnOptions in_dir;
  in_dir.cwd = dir.path.string();
  const ChildResult r =
      run_child({"/bin/sh", "-c", "pwd; echo err >&2; echo out"}, in_dir, /*merge_output=*/true);
  CHECK(r.exit_code == 0);
  CHECK(r.out == fs::canonical(dir.path).string() + "\nerr\nout\n");
  CHECK(r.err.empty());

  SpawnOptions missing_dir;
  missing_dir.cwd = (dir.path / "nope").string();
  CHECK(run_child({"/bin/sh", "-c", "true"}, missing_dir).exit_code == 126);

  const ChildResult no_program = run_child({(dir.path / "no-such-program").string()}, {});
  CHECK(no_program.exit_code == 127);
  CHECK(no_program.status() == 127);
  CHECK(no_program.err == "relpos: cannot execute the child program\n");
}

TEST_CASE("process: the environment is added to ours, or replaces it") {
  ::setenv("RELPOS_PROCESS_TEST", "ours", 1);
  SpawnOptions added;
  added.env = {"RELPOS_ADDED=1"};
  CHECK(run_child({"/bin/sh", "-c", "echo $RELPOS_ADDED $RELPOS_PROCESS_TEST"}, added).out ==
        "1 ours\n");
  SpawnOptions only;
  only.env = {"RELPOS_ADDED=2"};
  only.only_env = true;
  CHECK(run_child({"/usr/bin/env"}, only).out == "RELPOS_ADDED=2\n");
  ::unsetenv("RELPOS_PROCESS_TEST");
}

TEST_CASE("process: a started child logs to its file, has its own group, and is reaped") {
  test::ScratchDir dir("process_spawn");
  SpawnOptions o;
  o.log_file = dir.file("child.log");
  o.new_process_group = true;
  std::ofstream(o.log_file) << "before\n";  // appended to, not replaced
  const pid_t pid = spawn_child({"/bin/sh", "-c", "echo out; echo err >&2; sleep 1; exit 3"}, o);
  // setpgid runs in the child right after fork, and the child lives 1 s after it: wait for it
  // (the group stays readable while the ended child awaits its reaping).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(test::kPatienceS);
  while (process_group_of(pid) != pid && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(process_group_of(pid) == pid);
  CHECK(process_group_of(::getpid()) != pid);
  const auto done = reap(pid);
  REQUIRE(done);
  CHECK(done->code() == 3);
  std::ifstream in(o.log_file);
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(log == "before\nout\nerr\n");

  // A child ended by a signal: 128 + the signal, as a shell says.
  const pid_t killed = spawn_child({"/bin/sh", "-c", "kill -TERM $$"}, {});
  const auto gone = reap(killed);
  REQUIRE(gone);
  CHECK(gone->code() == 128 + SIGTERM);
}

TEST_CASE("process: an ignored SIGINT stays ignored in the child") {
  const std::vector<std::string> argv = {"/bin/sh", "-c", "kill -INT $$; echo alive"};
  SpawnOptions ignoring;
  ignoring.ignore_interrupt = true;
  const ChildResult kept = run_child(argv, ignoring);
  CHECK(kept.exit_code == 0);
  CHECK(kept.out == "alive\n");
  const ChildResult plain = run_child(argv, {});
  CHECK(plain.signal == SIGINT);
  CHECK(plain.out.empty());
}

TEST_CASE("process: a function run in a forked child reports success, errors, crashes, hangs") {
  const auto ok = call_in_child([] { return std::string(); }, test::kPatienceS);
  REQUIRE(ok);
  CHECK(ok->error.empty());
  CHECK_FALSE(ok->timed_out);
  CHECK(ok->signal == 0);

  const auto said = call_in_child([] { return std::string("the heap is torn"); }, test::kPatienceS);
  REQUIRE(said);
  CHECK(said->error == "the heap is torn");

  const auto threw = call_in_child([]() -> std::string { throw std::runtime_error("bad bytes"); },
                                   test::kPatienceS);
  REQUIRE(threw);
  CHECK(threw->error == "bad bytes");

  const auto crashed = call_in_child(
      []() -> std::string {
        ::signal(SIGSEGV, SIG_DFL);  // not doctest's crash handler: the child just dies
        ::raise(SIGSEGV);
        return {};
      },
      test::kPatienceS);
  REQUIRE(crashed);
  CHECK(crashed->signal == SIGSEGV);

  // A child that would sleep 60 s: timed_out says the 1 s limit ended it (no clock is read
  // here: on a slow machine the call may take longer than the limit).
  const auto hung = call_in_child(
      []() -> std::string {
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return {};
      },
      1);
  REQUIRE(hung);
  CHECK(hung->timed_out);
}
