// Child processes. Every fork of relpos goes through here: `relpos bench` children (output and
// resource usage captured), data-parallel ranks and sweep runs (started, then reaped by their
// launcher's loop), gnuplot (output captured, in a folder of its own), git for the commit a run
// records and for the files a committed report may link, and the isolated first read of a run
// file's metadata (a function run in a forked child, no exec).
//
// Everything a child needs (argv, environment) is built before fork(): after it the child makes
// only async-signal-safe calls until it execs or leaves with _exit.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace relpos {

struct ChildLimits {
  int timeout_s = 0;          // > 0: SIGALRM after this many seconds (it survives exec)
  double max_memory_mb = 0;   // > 0: address-space limit (RLIMIT_AS), so that a configuration
                              // too big for the machine fails its allocation instead of
                              // calling the OOM killer onto the machine
};

// How a child starts. The defaults: this process's environment, working directory and output.
struct SpawnOptions {
  std::vector<std::string> env;   // "NAME=value", put before this process's environment
                                  // (getenv() takes the first NAME=)
  bool only_env = false;          // `env` is the child's whole environment
  std::string cwd;                // working directory ("" = ours); exit status 126 if unusable
  std::string log_file;           // stdout and stderr appended to this file ("" = inherited)
  bool new_process_group = false; // setpgid(0, 0): a Ctrl-C at the terminal reaches us only
  // SIGTERM to the child when this process dies (Linux: PR_SET_PDEATHSIG), so that a run still
  // checkpoints after its launcher was killed; a child whose parent is already gone leaves at
  // once with status 128 + SIGTERM.
  bool stop_with_parent = false;
  bool ignore_interrupt = false;  // SIGINT ignored (an inherited SIG_IGN that relpos keeps)
  ChildLimits limits;
};

// Starts argv[0] (a path, not searched in PATH) with `argv`; returns its process id without
// waiting. Exit status 127: it could not be executed. Throws RunError when fork() fails.
pid_t spawn_child(const std::vector<std::string>& argv, const SpawnOptions& options = {});

struct ChildResult {
  int exit_code = -1;       // when the child exited normally, else -1
  int signal = 0;           // the signal that ended it (SIGKILL: likely the OOM killer), else 0
  bool timed_out = false;   // ended by the time limit (SIGALRM)
  double max_rss_mb = 0;    // ru_maxrss: the child's peak resident memory
  double user_s = 0, system_s = 0;
  double wall_s = 0;
  std::string out, err;     // everything it wrote to stdout and stderr

  bool ok() const { return exit_code == 0; }
  // The exit code, or 128 + the signal (as a shell reports it).
  int status() const { return signal != 0 ? 128 + signal : exit_code; }
  // "exit code 2", "killed by signal 9 (SIGKILL: out of memory?)", "timed out after 600 s", ...
  // With an address-space limit (max_memory_mb > 0), a child ended by a signal is said to have
  // run under it: an allocation refused by the limit often ends as SIGSEGV or SIGABRT.
  std::string describe(int timeout_s, double max_memory_mb = 0) const;
};

// Starts argv[0] with `argv` and waits for it, capturing stdout and stderr (`merge_output`: both
// into `out`, in the order written) and its resource usage. `options.log_file` is ignored.
// Throws RunError only when the child cannot be started.
ChildResult run_child(const std::vector<std::string>& argv, const SpawnOptions& options,
                      bool merge_output = false);
// The same for `program` with `args` (argv[1..]), `limits` and `extra_env` added to ours.
ChildResult run_child(const std::string& program, const std::vector<std::string>& args,
                      const ChildLimits& limits = {},
                      const std::vector<std::string>& extra_env = {});

// A child that ended, as waitpid() reports it.
struct ChildExit {
  pid_t pid = 0;
  int status = 0;  // the raw wait status
  int code() const;  // exit code, or 128 + the signal
};
// Reaps one child of this process that has ended, without blocking: nullopt when none has (or
// there is no child left). Launchers poll it so that a signal is seen within milliseconds.
std::optional<ChildExit> reap_child();

// The outcome of call_in_child.
struct ForkedCall {
  bool timed_out = false;  // still running after the time limit (then killed)
  int signal = 0;          // the signal that ended it (a crash), else 0
  std::string error;       // what `fn` returned: "" for success
};
// Runs `fn` in a forked child (no exec: the child touches only what `fn` does and leaves with
// _exit, so it never flushes or closes anything of ours) and waits at most `timeout_s` seconds.
// For code that may crash or hang on bad input. nullopt when no child could be started (then
// the caller does the work itself).
std::optional<ForkedCall> call_in_child(const std::function<std::string()>& fn, int timeout_s);

}  // namespace relpos
