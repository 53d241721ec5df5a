#include "core/train/recorder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <csignal>
#include <filesystem>

#include "core/dist/distributed.h"
#include "core/io/run_paths.h"
#include "core/train/run_record.h"
#include "core/train/snapshot_capture.h"
#include "core/util/signals.h"
#include "core/util/system.h"

namespace relpos {
namespace fs = std::filesystem;

RunRecorder::RunRecorder(const RecorderSetup& setup, const Config& cfg, TrainState& state,
                         Model& model, torch::optim::Optimizer& optimizer, ProgressLine& progress)
    : setup_(setup),
      cfg_(cfg),
      state_(state),
      model_(model),
      optimizer_(optimizer),
      progress_(progress),
      snapshot_steps_(snapshot_steps(cfg.snapshots, cfg.train.steps)),
      last_checkpoint_(setup.resume ? state.step : -1),
      elapsed_before_(state.elapsed_seconds),
      invocation_start_(std::chrono::steady_clock::now()) {
  const std::string& dir = setup.dir;
  if (!setup.main) {
    run_file_ = discarding_run_file();
  } else if (setup.resume && fs::exists(run_h5_path(dir))) {
    run_file_ = RunFileWriter::open_append(run_h5_path(dir));
    run_file_->truncate_metrics_after(state.step);
    // The config the run goes on with (check_resume_config allowed only train.*, eval.* & co.
    // to change): run.h5 says what config.yaml says, e.g. the new train.steps for analysis.
    run_file_->set_config(setup.recorded_yaml);
  } else {
    RunAttributes attrs;
    attrs.config_yaml = setup.recorded_yaml;
    attrs.position_types = join_names(cfg.position.types, "+");
    attrs.seed = cfg.seed;
    attrs.torch_version = torch_version();
    attrs.git_commit = git_commit();
    attrs.created = utc_timestamp();
    attrs.attention = model->transformer->attention_path();
    attrs.positional_parameters = 0;
    for (const auto& p : model->transformer->position->parameters())
      attrs.positional_parameters += p.numel();
    run_file_ = RunFileWriter::create(run_h5_path(dir), attrs);
  }
  if (setup.main) metrics_log_.emplace(run_metrics_path(dir), setup.resume ? state.step : -1);
  // A resumed run logs from the step after its checkpoint's on (a step whose evaluation an
  // interrupt cut short logged nothing, so redoing it adds no second record).
  if (setup.main) tensorboard_.emplace(dir, setup.resume ? state.step + 1 : 0);
  if (metrics_log_ && !metrics_log_->damaged_lines().empty())
    progress_.message(fmt::format(
        "warning: {}: dropped {} line(s) that are not metrics records ({}); run.h5 keeps the "
        "run's metrics",
        run_metrics_path(dir), metrics_log_->damaged_lines().size(),
        fmt::join(metrics_log_->damaged_lines(), "; ")));
}

void RunRecorder::write_start(const Batch& probe, const TaskData& data, const DataConfig& data_cfg,
                              const std::optional<InitFromRecord>& init_from,
                              bool has_split_record) {
  const std::string& dir = setup_.dir;
  if (!setup_.resume) run_file_->write_probe(probe.tokens, probe.key_mask);
  // The split on record (split.json and /split), also for runs that predate the record.
  if (setup_.main && (!setup_.resume || !fs::exists(run_split_path(dir)) || !has_split_record)) {
    const SplitRecord split = make_split_record(data, data_cfg);
    write_split_json(dir, split, data_cfg);
    run_file_->write_split(split);
  }
  if (init_from && !setup_.resume) run_file_->write_init_from(*init_from);
  // Training time counts from here: the records above are the set-up's.
  invocation_start_ = std::chrono::steady_clock::now();
}

void RunRecorder::log(int64_t step, const std::map<std::string, double>& values) {
  for (const auto& [k, v] : values) run_file_->append_metric(k, step, v);
  if (metrics_log_) metrics_log_->write(step, values);
  if (tensorboard_) tensorboard_->log(step, values);
}

bool RunRecorder::snapshot_due(int64_t step) const {
  return std::binary_search(snapshot_steps_.begin(), snapshot_steps_.end(), step);
}

void RunRecorder::snapshot(int64_t step, const Batch& probe) {
  if (!setup_.main) return;
  auto s = compute_snapshot(model_, probe, cfg_.snapshots, setup_.device);
  run_file_->write_snapshot(step, s.attention, s.position_scores, s.position);
}

double RunRecorder::elapsed() const {
  return elapsed_before_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - invocation_start_)
             .count();
}

// Every rank checkpoints at the same steps (they hold the same parameters and optimizer state
// after each step); rank 0 alone writes the file.
void RunRecorder::checkpoint(int64_t step) {
  state_.step = step;
  state_.elapsed_seconds = elapsed();
  // The generators' states NOW: after a resume, the state still holds those loaded from the
  // checkpoint, and saving them would make a second resume replay the wrong random numbers.
  state_.cpu_rng_state = torch::Tensor();
  state_.cuda_rng_state = setup_.device.is_cuda() ? current_cuda_rng_state() : torch::Tensor();
  if (setup_.main) save_checkpoint(run_checkpoint_path(setup_.dir), *model_, optimizer_, state_);
  last_checkpoint_ = step;
}

// Under data parallelism every rank comes here at the same step; a rank that got no signal
// itself stops because another one did.
void RunRecorder::stop_interrupted(int64_t step, bool pending) {
  state_.pending_post_step = pending;
  checkpoint(step);
  close();
  const bool here = interrupt_signal() != 0;
  throw Interrupted(here ? interrupt_signal() : SIGTERM,
                    fmt::format("interrupted by {} at step {} of {}: checkpoint saved and "
                                "run.h5 closed in {}",
                                here ? interrupt_signal_name() : "a signal to another rank", step,
                                cfg_.train.steps, setup_.dir),
                    fmt::format("continue with: relpos train --resume --out {}{}", setup_.dir,
                                setup_.world_size > 1 ? " (and the same --nproc)" : ""));
}

void RunRecorder::close() {
  run_file_->flush();
  run_file_->close();
  progress_.finish();
}

void RunRecorder::finish(int64_t step) {
  progress_.finish();
  run_file_->write_weights(parameter_tensors(*model_), step);
  run_file_->flush();
  run_file_->close();
}

}  // namespace relpos
