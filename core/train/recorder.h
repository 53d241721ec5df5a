// What a training run leaves in its folder while it trains (docs/training.md, docs/reliability.md):
// run.h5 (metrics, probe, split, --init-from record, snapshots, final weights), metrics.jsonl,
// a TensorBoard event file per invocation (tensorboard_log.h) and checkpoint.pt. Under data parallelism only rank 0 writes: the other ranks' recorder keeps the
// same state and discards the writes, so every rank calls it at the same steps.
#pragma once

#include <torch/optim/optimizer.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/data/task.h"
#include "core/io/checkpoint.h"
#include "core/io/run_file.h"
#include "core/model/model.h"
#include "core/train/progress.h"
#include "core/train/tensorboard_log.h"

namespace relpos {

struct RecorderSetup {
  std::string dir;            // the run folder
  bool main = true;           // this process writes the folder (rank 0)
  int64_t world_size = 1;     // ranks, for the resume hint of an interrupt
  bool resume = false;        // append to the run's files from state.step on
  std::string recorded_yaml;  // the config the run records (run.h5's `config`)
  torch::Device device = torch::kCPU;
};

class RunRecorder {
 public:
  // Opens run.h5 (created, or appended to from `state.step` with --resume) and metrics.jsonl.
  // `state` is the run's train state, which checkpoints save (it outlives the recorder).
  RunRecorder(const RecorderSetup& setup, const Config& cfg, TrainState& state, Model& model,
              torch::optim::Optimizer& optimizer, ProgressLine& progress);

  // The records a run writes once (a resumed run: only those it lacks): the probe, the data
  // split (DIR/split.json and /split) and what --init-from loaded.
  void write_start(const Batch& probe, const TaskData& data, const DataConfig& data_cfg,
                   const std::optional<InitFromRecord>& init_from, bool has_split_record);

  // One logged step: to run.h5's /metrics, metrics.jsonl and the event file.
  void log(int64_t step, const std::map<std::string, double>& values);
  // The snapshot steps of the run (snapshots.*) and one snapshot of `probe`.
  bool snapshot_due(int64_t step) const;
  void snapshot(int64_t step, const Batch& probe);
  // checkpoint.pt at `step`, with the train state and the generators' current states.
  void checkpoint(int64_t step);
  int64_t last_checkpoint() const { return last_checkpoint_; }
  // Training wall time over every invocation of the run so far.
  double elapsed() const;

  // Saves a checkpoint at `step`, closes run.h5 and throws Interrupted with the resume command.
  // `pending`: the step's evaluation was cut short, so a resumed run does that step's
  // evaluation, logging, snapshot and checkpoint first.
  [[noreturn]] void stop_interrupted(int64_t step, bool pending);
  // Flushes and closes run.h5 (the run stops here; checkpoints are as last saved).
  void close();
  // The end of a finished run: the final weights into run.h5, then close().
  void finish(int64_t step);

 private:
  RecorderSetup setup_;
  const Config& cfg_;
  TrainState& state_;
  Model& model_;
  torch::optim::Optimizer& optimizer_;
  ProgressLine& progress_;
  std::unique_ptr<RunFileWriter> run_file_;
  std::optional<MetricsLog> metrics_log_;
  std::optional<TensorBoardLog> tensorboard_;
  std::vector<int64_t> snapshot_steps_;
  int64_t last_checkpoint_ = -1;
  double elapsed_before_ = 0;
  std::chrono::steady_clock::time_point invocation_start_;
};

}  // namespace relpos
