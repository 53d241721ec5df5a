// `relpos train --nproc N [--nnodes M]`: the command line every rank runs, the launch of the
// ranks with restarts from the last checkpoint (core/dist/elastic.h), and what a job restarted by
// an outside launcher (torchrun, a requeued SLURM job) does. app/cmd_train.cpp parses the options
// and calls these; docs/scaling.md describes the behaviour.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace relpos {

// One `relpos train` invocation as a command line: what every rank of a launch runs.
struct TrainCommand {
  std::vector<std::string> configs;  // --config files
  std::vector<std::string> sets;     // --set overrides
  std::string out_dir;               // the run folder
  std::string init_from;             // --init-from run folder ("" : none)
  std::string device;                // --device ("" : the config's)
  bool resume = false, overwrite = false, quiet = false;

  // argv: this executable, "train", and the options above.
  std::vector<std::string> argv() const;
};

struct DataParallelOptions {
  int64_t nproc = 1, nnodes = 1, node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 0;   // 0: a free port of this machine (one node)
  int64_t max_restarts = 0;  // restarts of every rank from the last checkpoint
  bool distributed() const { return nproc > 1 || nnodes > 1; }
};

// Starts the ranks of `command` and waits for them, restarting them up to max_restarts times;
// `global_batch` is train.batch_size, which must split over the ranks. Returns 0 when the run
// finished; throws Interrupted (the ranks stopped at a checkpoint) or RunError (a rank failed,
// with the command that continues the run) otherwise.
int launch_training(const TrainCommand& command, const DataParallelOptions& options,
                    int64_t global_batch);

// A job restarted by its launcher (TORCHELASTIC_RESTART_COUNT or SLURM_RESTART_COUNT above 0)
// runs the very command of its first attempt: when that attempt left a checkpoint in the run
// folder, the command becomes --resume (the run's own config.yaml; --config, --overwrite and
// --init-from belonged to the first attempt) and rank 0 says so. Otherwise nothing changes.
void resume_after_launcher_restart(TrainCommand& command);

}  // namespace relpos
