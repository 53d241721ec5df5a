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
  // With an address-space limit (max_memory_mb > 0), a child ended by a signal is said to have
  // run under it: an allocation refused by the limit often ends as SIGSEGV or SIGABRT.
  std::string describe(int timeout_s, double max_memory_mb = 0) const;
};

struct ChildLimits {
  int timeout_s = 0;          // > 0: SIGALRM after this many seconds
  double max_memory_mb = 0;   // > 0: address-space limit (RLIMIT_AS), so that a configuration
                              // too big for the machine fails its allocation instead of
                              // calling the OOM killer onto the machine
};

// Runs `program` with `args` (argv[1..]) and `extra_env` ("NAME=value", added to this process's
// environment), waiting for it to end. Throws RunError only when the child cannot be started.
ChildResult run_child(const std::string& program, const std::vector<std::string>& args,
                      const ChildLimits& limits = {},
                      const std::vector<std::string>& extra_env = {});

// Physical memory of the machine in MB (0 if unknown).
double physical_memory_mb();

// Absolute path of the running executable (/proc/self/exe).
std::string self_executable();

}  // namespace relpos
