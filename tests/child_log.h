// The tests' child processes: how long a test waits for one, and what each did, so that a
// failing test case tells why without a rerun. Every child a test starts through the helpers
// here (call_relpos, call_program) or through tests/process_util.h (Child, run_relpos) is
// noted; when a test case fails, the listener in tests/main.cpp prints the last children it
// ran, each with its command, how it ended (exit code, signal, time limit) and the end of its
// stderr.
#pragma once

#include <sys/wait.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/util/process.h"

namespace relpos::test {

// How long a test waits for a child process to end, or for a line, a file or an exit it waits
// on, before it calls the child hung. A wait ends as soon as its event happens, so the bound
// costs nothing when the test passes; it is set for a machine several times slower than the
// developers' with another job on its cores (issue 53). No test asserts how long anything took.
inline constexpr int kPatienceS = 600;

// One child process a test case ran.
struct ChildNote {
  std::string command;  // the argv, joined by spaces (the program's path first)
  std::string ending;   // "exit code 2", "killed by signal 9 (...)", "timed out after 600 s", ...
  std::string err;      // the end of its stderr (or of its merged output)
};

// The children of the running test case (tests/main.cpp clears it when a test case starts).
class ChildLog {
 public:
  static ChildLog& instance() {
    static ChildLog log;
    return log;
  }
  void note(const std::vector<std::string>& argv, const std::string& ending,
            const std::string& err) {
    std::string command;
    for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
    constexpr size_t kKeep = 4000;  // the end of the output: where the error is
    std::string tail = err.size() > kKeep ? "[...]" + err.substr(err.size() - kKeep) : err;
    std::lock_guard<std::mutex> lock(mutex_);
    notes_.push_back({command, ending, tail});
  }
  std::vector<ChildNote> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<ChildNote> out;
    out.swap(notes_);
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<ChildNote> notes_;
};

// "exit code 3", or "killed by signal 9 (Killed)", for a status from waitpid().
inline std::string wait_status_text(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  return "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
}

// run_child(program, args) with `timeout_s` as its limit and `env` added to ours; noted in the
// ChildLog. Use INFO(r.err) or CHECK_MESSAGE(..., r.err) as well where a check reads the output.
inline ChildResult call_program(const std::string& program, const std::vector<std::string>& args,
                                const std::vector<std::string>& env = {},
                                int timeout_s = kPatienceS) {
  ChildLimits limits;
  limits.timeout_s = timeout_s;
  const ChildResult r = run_child(program, args, limits, env);
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildLog::instance().note(argv, r.describe(timeout_s), r.err);
  return r;
}

// The relpos executable under test (RELPOS_BINARY) with `args`, as call_program.
inline ChildResult call_relpos(const std::vector<std::string>& args,
                               const std::vector<std::string>& env = {},
                               int timeout_s = kPatienceS) {
  return call_program(RELPOS_BINARY, args, env, timeout_s);
}

}  // namespace relpos::test
