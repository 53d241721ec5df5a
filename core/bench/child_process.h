// Runs a program as a child process, captures its output and reads its resource usage with
// wait4(): `relpos bench` measures every configuration in a process of its own this way.
#pragma once

#include <string>
#include <vector>

namespace relpos {

struct ChildResult {
  int exit_code = -1;       // when the child exited normally, else -1
  int signal = 0;           // the signal that ended it (SIGKILL: likely the OOM killer), else 0
  bool timed_out = false;   // ended by the time limit (SIGALRM)
  double max_rss_mb = 0;    // ru_maxrss: the child's peak resident memory
  double user_s = 0, system_s = 0;
  double wall_s = 0;
  std::string out, err;     // everything it wrote to stdout and stderr

  bool ok() const { return exit_code == 0; }
  // "exit code 2", "killed by signal 9 (SIGKILL: out of memory?)", "timed out after 600 s", ...
  std::string describe(int timeout_s) const;
};

// Runs `program` with `args` (argv[1..]) and `extra_env` ("NAME=value", added to this process's
// environment), waiting for it to end. timeout_s > 0 ends the child with SIGALRM after that many
// seconds. Throws RunError only when the child cannot be started.
ChildResult run_child(const std::string& program, const std::vector<std::string>& args,
                      int timeout_s = 0, const std::vector<std::string>& extra_env = {});

// Absolute path of the running executable (/proc/self/exe).
std::string self_executable();

}  // namespace relpos
