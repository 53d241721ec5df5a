// `relpos train --nproc N --max-restarts R`: torchrun's elastic agent at a fixed group size.
// When an attempt of the launch fails (a rank exited abnormally, or hung and the others gave up
// after RELPOS_DIST_TIMEOUT; core/dist/launch.h stops the rest), every rank is started again from
// the run's last checkpoint (`--resume`), up to R times. Each restart is recorded: one event
// line in DIR/metrics.jsonl, between the steps before and after it
//   {"event":"restart","attempt":1,"time":"2025-01-02T03:04:05Z","resumed_from_step":2,
//    "reason":"rank 1 failed first (rank 1 killed by SIGKILL after 2.1s; ...)"}
// and, once the run finished, the same records as result.json's "restarts" list.
//
// A restart needs something of this launch in the run folder: a checkpoint written since it
// began (or the checkpoint a --resume launch started from), else, for a new run whose ranks
// wrote its config.yaml but no checkpoint yet, the first command again with --overwrite (step 0).
// Ranks that failed before touching the folder (its lock, a config or data error) would fail the
// same way again: that failure is final. An interrupt (Ctrl-C, SIGTERM to the launcher) is never
// restarted. With several nodes each node's launcher restarts its own ranks; the ranks of the
// other nodes lose their peer and fail too, so every launcher restarts and they meet again at
// the same --master-addr/--master-port; node 0's launcher writes the records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dist/launch.h"

namespace relpos {

struct ElasticOptions {
  LaunchOptions launch;                  // launch.args: the first attempt's command
  std::vector<std::string> resume_args;  // a restart from the checkpoint (with --resume)
  // A restart of a new run that has no checkpoint yet: the first command with --overwrite.
  // Empty when the launch itself was a --resume (then resume_args).
  std::vector<std::string> fresh_args;
  std::string run_dir;
  int64_t max_restarts = 0;
  bool write_records = true;  // this node writes the restart records (node 0)
};

struct RestartRecord {
  int64_t attempt = 0;            // 1 for the first restart
  std::string time;               // when it restarted, UTC, ISO 8601
  int64_t resumed_from_step = 0;  // the checkpoint's step; 0 when it started over
  std::string reason;             // why the attempt before it failed (LaunchResult::failure)
};

struct ElasticResult {
  LaunchResult last;                    // the last attempt
  std::vector<RestartRecord> restarts;
  std::vector<std::string> failures;    // every failed attempt's reason, in order
  std::string not_restarted;            // why a failure was final with restarts left ("" else)
  bool ok() const { return last.ok(); }
};

// Runs the attempts. Throws like launch_local, and RunError when a record cannot be written.
ElasticResult launch_elastic(const ElasticOptions& opts);

// Adds the records to DIR/result.json as "restarts" (atomically). Throws RunError naming the
// file when it cannot be read or written.
void record_restarts_in_result(const std::string& dir, const std::vector<RestartRecord>& restarts);

}  // namespace relpos
