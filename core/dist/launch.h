// `relpos train --nproc N`: starts N ranks of a data-parallel run on this machine (like
// torchrun): one child process each, with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT set. The children run in their own process group, so a Ctrl-C
// reaches only the launcher, which forwards one SIGTERM to each (they agree on the step, rank 0
// checkpoints); they get SIGTERM too if the launcher dies. When a rank fails, the launcher gives
// the others `grace_seconds` to fail on their own (a dead peer makes their next collective fail
// at once), then stops them (SIGTERM, then SIGKILL) and reports which rank failed first — not
// counting a rank that failed only because a peer did (exit kPeerLostExitCode or SIGPIPE) when
// another rank fails within 2 s of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace relpos {

struct LaunchOptions {
  int64_t nproc = 1;             // ranks on this node
  int64_t nnodes = 1;            // nodes, each running the same launch
  int64_t node_rank = 0;         // this node: ranks node_rank·nproc .. +nproc-1
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 0;       // 0: a free port of this machine (one node only)
  std::vector<std::string> args; // the command of every rank (args[0] is the executable)
  double grace_seconds = 10;
  int64_t restart_count = 0;     // the ranks' RELPOS_RESTART_COUNT: 0 first, then 1, 2, ...
};

struct RankExit {
  int64_t rank = 0;
  int status = 0;        // exit code, or 128 + signal
  std::string how;       // "exit 0", "exit 2", "killed by SIGKILL", "stopped by the launcher"
  double seconds = 0;    // after the start
};

struct LaunchResult {
  std::vector<RankExit> ranks;   // in the order they ended
  int64_t first_failed = -1;     // the rank that failed first; -1 when all succeeded
  bool interrupted = false;      // the launcher got SIGINT/SIGTERM and forwarded it
  // When the first failure was only a consequence (a rank that lost its peer: exit
  // kPeerLostExitCode or SIGPIPE) and no other rank failed within 2 s: the ranks still running
  // then. They are the likely cause (a hang: the others timed out waiting for them).
  std::vector<int64_t> still_running;
  bool ok() const { return first_failed < 0 && !interrupted; }
  std::string summary() const;   // "rank 1 killed by SIGKILL after 2.1s; rank 0 exit 2 ..."
  // Why a failed launch failed: "rank 1 failed first (<summary>)", or for a hang "rank 0 lost
  // its peer first, while rank 1 still ran (hung?) (<summary>)".
  std::string failure() const;
};

// Starts the ranks and waits for all of them. Throws ConfigError for bad options and RunError
// when a process cannot be started.
LaunchResult launch_local(const LaunchOptions& opts);

// A TCP port that is free on 127.0.0.1 now (bound and released).
int64_t free_tcp_port();

}  // namespace relpos
