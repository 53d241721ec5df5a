// train(): one run from a config into its folder. The collaborators do the work, each in its
// own file: the run folder and its lock (run_folder.h), where the parameters start (restore.h:
// the run's checkpoint or --init-from), the validation batches and probe (validation.h), what
// the run writes (recorder.h: metrics, run.h5, snapshots, checkpoints, the stop on an interrupt),
// and the non-finite step policy (nonfinite.h). What is left here is the set-up in the order
// whose failures must leave nothing half-written, and the training loop.
#include "core/train/trainer.h"

#include <fmt/format.h>
#include <torch/utils.h>

#include <chrono>
#include <filesystem>
#include <cmath>
#include <limits>
#include <optional>

#include "core/data/task.h"
#include "core/dist/distributed.h"
#include "core/io/run_file.h"
#include "core/model/model.h"
#include "core/task/task_registry.h"
#include "core/train/extrapolation.h"
#include "core/train/nonfinite.h"
#include "core/train/objective.h"
#include "core/train/optim.h"
#include "core/train/prefetch.h"
#include "core/train/progress.h"
#include "core/train/randomized_positions.h"
#include "core/train/recorder.h"
#include "core/train/restore.h"
#include "core/train/run_folder.h"
#include "core/train/run_record.h"
#include "core/train/snapshot_capture.h"
#include "core/train/validation.h"
#include "core/util/cpu_block_cache.h"
#include "core/util/errors.h"
#include "core/util/precision.h"
#include "core/util/signals.h"
#include "core/util/system.h"
#include "core/util/threads.h"

namespace relpos {

namespace {

using Clock = std::chrono::steady_clock;

// The last validation value of the primary metric for the progress line; between evaluations
// it names the step it was measured at, so that it does not read as a fresh measurement.
std::string metrics_summary(const std::map<std::string, double>& m, const std::string& primary,
                            int64_t measured_at, int64_t step) {
  auto it = m.find(primary);
  if (it == m.end()) return {};
  if (measured_at >= 0 && measured_at != step)
    return fmt::format("valid {} {:.4f} (at step {})", primary, it->second, measured_at);
  return fmt::format("valid {} {:.4f}", primary, it->second);
}

// Rough size of what a run writes at most at once: checkpoint.pt and its temporary (parameters
// and AdamW's two moments, float32), and run.h5 plus its shadow (every snapshot's attention and
// position scores, the exported position tensors and the final weights).
int64_t estimated_run_bytes(const Config& cfg, torch::nn::Module& model, int64_t snapshots) {
  int64_t params = 0;
  for (const auto& p : model.parameters()) params += p.numel();
  const int64_t T = cfg.snapshots.probe_len > 0 ? cfg.snapshots.probe_len : cfg.task.seq_len;
  const int64_t maps = cfg.model.layers * cfg.model.heads * T * T;
  const int64_t per_snapshot = 4 * maps * (1 + static_cast<int64_t>(cfg.position.types.size()));
  const int64_t checkpoint = 2 * 3 * 4 * params;
  const int64_t run_file = 2 * (snapshots * per_snapshot + (1 + snapshots) * 4 * params);
  return checkpoint + run_file;
}

// One run. Under data parallelism every rank builds one and makes the same calls at the same
// steps; only rank 0 touches the folder (its lock, checkpoints, run.h5, metrics.jsonl,
// result.json).
class Training {
 public:
  Training(const LoadedConfig& loaded, const TrainOptions& opts);
  TrainResult run();

 private:
  // What follows the optimizer step `step`; every rank gets the same answer.
  enum class After { Next, Interrupted, StopAfter, EarlyStop };

  void load_data();
  void make_model();
  void restore();
  After after_step(int64_t step);
  bool evaluate(std::map<std::string, double>& logged);
  void log(int64_t step, std::map<std::string, double>& logged);
  After train_step(int64_t& step);
  After resume_pending(int64_t step);
  TrainResult result(int64_t step, After after);

  const Clock::time_point wall_start_ = Clock::now();
  const Config& cfg_;
  const SourceMap& sources_;  // where each key of cfg_ came from (a fine-tune's tokenizer)
  const TrainOptions& opts_;
  const std::string dir_;
  DataParallel dp_;
  std::unique_ptr<FolderLock> lock_;
  torch::Device device_;
  ProgressLine progress_;
  NonFiniteSteps nonfinite_;
  std::vector<std::string> resume_changes_;
  Config data_cfg_;
  std::unique_ptr<TaskData> data_;
  std::string recorded_yaml_;
  std::unique_ptr<Validation> validation_;
  Model model_{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  TrainState state_;
  std::optional<InitFromRecord> init_record_;  // --init-from: what was loaded, for the record
  bool has_split_record_ = false;              // a resumed run.h5 that has /split already
  std::unique_ptr<RunRecorder> recorder_;
  const MetricInfo& primary_;
  std::unique_ptr<BatchPrefetcher> batches_;
  std::map<std::string, double> last_valid_;
  int64_t last_valid_step_ = -1;  // the step last_valid_ was measured at (-1: not this invocation)
  double window_tokens_ = 0;
  Clock::time_point window_start_ = Clock::now();
  bool final_evaluation_only_ = false;
  TrainResult result_;
};

Training::Training(const LoadedConfig& loaded, const TrainOptions& opts)
    : cfg_(loaded.config),
      sources_(loaded.sources),
      opts_(opts),
      dir_(opts.out_dir),
      dp_(dist_env_from_environment(), parse_device(cfg_.device)),
      lock_(dp_.is_main() ? prepare_out_dir(opts) : nullptr),
      device_(dp_.device()),
      progress_(cfg_.train.steps, opts.quiet || !dp_.is_main()),
      nonfinite_(cfg_.train, dir_),
      primary_(task_info(cfg_.task.type).primary()) {
  // LibTorch and OpenBLAS together; 0 = automatic (ranks on one node share its cores).
  configure_threads(cfg_.threads > 0 ? cfg_.threads : dp_.default_threads());
  apply_cpu_allocator(cfg_.cpu_allocator);
  if (dp_.world_size() > 1)
    progress_.message(fmt::format(
        "data-parallel: {} ranks ({}), {} of the {} rows of each batch per rank",
        dp_.world_size(), dp_.backend(), cfg_.train.batch_size / dp_.world_size(),
        cfg_.train.batch_size));
  if (opts.resume) resume_changes_ = check_resume_config(dir_, cfg_);
  load_data();
  make_model();
  restore();
  dp_.attach(*model_);
  RecorderSetup setup{dir_, dp_.is_main(), dp_.world_size(), opts.resume, recorded_yaml_, device_};
  recorder_ = std::make_unique<RunRecorder>(setup, cfg_, state_, model_, *optimizer_, progress_);
  recorder_->write_start(validation_->probe(), *data_, data_cfg_.data, init_record_,
                         has_split_record_);
}

// Data first: a missing corpus, or a validation split without a probe, must fail before
// anything is written to the folder (a half-made run folder a rerun refuses and --resume
// cannot use).
void Training::load_data() {
  data_cfg_ = data_config_for_run(cfg_, opts_, &sources_);
  data_ = make_task_data(data_cfg_);
  progress_.message(fmt::format("data: {}", data_->describe()));
  const DataConfig& used = data_cfg_.data;
  if (!opts_.init_from.empty() &&
      (used.tokenizer != cfg_.data.tokenizer || used.vocab_file != cfg_.data.vocab_file))
    progress_.message(fmt::format(
        "tokenizer: {}{} from --init-from {} (the config does not choose one; set data.tokenizer "
        "to choose)",
        used.tokenizer,
        used.tokenizer == "wordpiece" || used.tokenizer == "byte_bpe"
            ? ", vocabulary " + used.vocab_file
            : "",
        opts_.init_from));
  // What config.yaml and run.h5 record: the settings of the tokenizer actually used (a
  // fine-tune takes the pre-trained run's SentencePiece model, and its vocab_size & co.).
  // A resumed run's config.yaml already records them (and its own vocab.txt is no setting).
  Config recorded = opts_.resume ? cfg_ : with_tokenizer_settings(cfg_, data_cfg_);
  // What a sweep or experiment tests is not part of a run (its report judges it).
  recorded.claims.clear();
  recorded.provenance.clear();
  recorded_yaml_ = to_yaml(recorded);
  if (used.tokenizer == "sentencepiece" && cfg_.data.tokenizer == "sentencepiece" &&
      (used.vocab_size != cfg_.data.vocab_size ||
       used.sentencepiece_model != cfg_.data.sentencepiece_model ||
       used.sentencepiece_byte_fallback != cfg_.data.sentencepiece_byte_fallback))
    progress_.message(fmt::format(
        "note: the tokenizer is the pre-trained run's SentencePiece model (vocab_size {}, {}, "
        "byte fallback {}), not one with this config's settings (vocab_size {}, {}, byte "
        "fallback {}); config.yaml and run.h5 record the model's settings",
        used.vocab_size, used.sentencepiece_model, used.sentencepiece_byte_fallback,
        cfg_.data.vocab_size, cfg_.data.sentencepiece_model,
        cfg_.data.sentencepiece_byte_fallback));
  // One process only: ranks must agree on when they stop, which they do from the first step on
  // (dp.stop_requested()); a rank leaving here alone would strand the others.
  if (dp_.world_size() == 1 && interrupt_requested())
    throw Interrupted(interrupt_signal(),
                      fmt::format("interrupted by {} while loading data, before training started; "
                                  "nothing was written to {}",
                                  interrupt_signal_name(), dir_),
                      "run the same command again");
  validation_ = std::make_unique<Validation>(
      cfg_, *data_, [this](const std::string& m) { progress_.message(m); });
  if (dp_.is_main()) keep_run_tokenizer(data_->tokenizer(), dir_);
}

void Training::make_model() {
  // Rows of task.seq_len tokens bound the memory from below by one layer's attention scores: a
  // batch far past the machine's memory is an error here, not a process the kernel kills
  // minutes later (padded tasks pad to the longest row: no bound from seq_len).
  if (device_.is_cpu() && task_info(cfg_.task.type).fixed_length_rows) {
    const int64_t rows = (cfg_.train.batch_size + dp_.world_size() - 1) / dp_.world_size();
    const std::string note = attention_memory_note(rows, cfg_.model.heads, cfg_.task.seq_len,
                                                   physical_memory_mb() * 1024.0 * 1024.0);
    if (!note.empty())
      throw ConfigError(fmt::format("train.batch_size {} at task.seq_len {} does not fit in "
                                    "memory: {}",
                                    cfg_.train.batch_size, cfg_.task.seq_len, note),
                        "a smaller train.batch_size or task.seq_len");
  }
  torch::manual_seed(static_cast<uint64_t>(cfg_.seed));
  model_ = build_model(cfg_, data_->vocab_size(), device_);
  optimizer_ = make_optimizer(*model_, cfg_.train);
  if (!dp_.is_main()) return;
  const auto snaps = snapshot_steps(cfg_.snapshots, cfg_.train.steps);
  check_free_space(dir_, estimated_run_bytes(cfg_, *model_, static_cast<int64_t>(snaps.size())),
                   "this run (checkpoints and run.h5)");
  // Paper-size models make big snapshots: say so before the first one is written.
  const int64_t probe_len = validation_->probe_length();
  const double map_bytes = 4.0 * static_cast<double>(cfg_.model.layers * cfg_.model.heads) *
                           static_cast<double>(probe_len * probe_len);
  if (static_cast<double>(snaps.size()) * map_bytes > 1e9)
    progress_.message(fmt::format(
        "run.h5: {} snapshots of attention maps ({} layers x {} heads at probe length {}, {:.0f} "
        "MB each) take {:.1f} GB, plus the position-only scores; a lower snapshots.probe_len "
        "or snapshots.every_percent makes them smaller",
        snaps.size(), cfg_.model.layers, cfg_.model.heads, probe_len, map_bytes / 1e6,
        static_cast<double>(snaps.size()) * map_bytes / 1e9));
}

void Training::restore() {
  auto say = [this](const std::string& m) { progress_.message(m); };
  if (opts_.resume) {
    Resumed r = resume_from_checkpoint(dir_, cfg_, dp_.is_main(), recorded_yaml_,
                                       resume_changes_, *model_, *optimizer_, say);
    state_ = std::move(r.state);
    init_record_ = std::move(r.init_from);
    has_split_record_ = r.has_split_record;
    return;
  }
  if (!opts_.init_from.empty()) init_record_ = init_from_run(opts_.init_from, *model_, say);
  if (dp_.is_main()) write_text_atomic(run_config_path(dir_), recorded_yaml_);
}

// The validation metrics into `logged`. Rank 0 alone evaluates; the others wait for its word on
// whether an interrupt cut the evaluation short, so that every rank stops at this step or none
// does. Returns false then.
bool Training::evaluate(std::map<std::string, double>& logged) {
  std::optional<std::map<std::string, double>> valid;
  if (dp_.is_main()) valid = validation_->evaluate(model_, device_);
  const bool cut = dp_.broadcast_from_main(dp_.is_main() && !valid ? 1 : 0,
                                           "whether an interrupt cut the evaluation short") != 0;
  if (cut) return false;
  if (valid) last_valid_ = *valid;
  for (const auto& [k, v] : last_valid_) logged["valid_" + k] = v;
  auto it = last_valid_.find(primary_.name);
  if (it != last_valid_.end()) record_evaluation(state_, it->second, primary_.higher_is_better);
  state_.evals_without_improvement =
      dp_.broadcast_from_main(state_.evals_without_improvement, "the early-stopping count");
  return true;
}

void Training::log(int64_t step, std::map<std::string, double>& logged) {
  const double secs = seconds_since(window_start_);
  const double tps = secs > 0 ? window_tokens_ / secs : 0;
  // A window whose every batch was skipped has no loss to show. The final evaluation of a
  // resumed run that had no step left to train logs its validation metrics only.
  if (!final_evaluation_only_) {
    logged["train_loss"] = state_.window_steps > 0 ? state_.window_loss / state_.window_steps : NAN;
    logged["lr"] = learning_rate(cfg_.train, step - 1);
    logged["tokens_per_s"] = tps;
  }
  logged["elapsed_s"] = recorder_->elapsed();
  if (state_.skipped_batches > 0)
    logged["skipped_batches"] = static_cast<double>(state_.skipped_batches);
  recorder_->log(step, logged);
  progress_.update(step, logged["train_loss"], tps,
                   metrics_summary(last_valid_, primary_.name, last_valid_step_, step));
  state_.window_loss = 0;
  state_.window_steps = 0;
  window_tokens_ = 0;
  window_start_ = Clock::now();
}

// Everything after the optimizer step `step`: evaluation, logging, snapshot, checkpoint, and
// whether training goes on.
Training::After Training::after_step(int64_t step) {
  const TrainConfig& t = cfg_.train;
  const bool last = step == t.steps;
  std::map<std::string, double> logged;
  if (step % t.eval_every == 0 || last) {
    if (!evaluate(logged)) return After::Interrupted;
    last_valid_step_ = step;
  }
  if (step % t.log_every == 0 || last || !logged.empty()) log(step, logged);
  if (recorder_->snapshot_due(step)) recorder_->snapshot(step, validation_->probe());
  const bool stop_early = early_stop_due(state_, t.early_stop);
  if (step % t.checkpoint_every == 0 || last || stop_early) recorder_->checkpoint(step);
  if (opts_.stop_after > 0 && step >= opts_.stop_after && !last) {
    if (recorder_->last_checkpoint() != step) recorder_->checkpoint(step);
    return After::StopAfter;
  }
  if (!stop_early) return After::Next;
  result_.stop_reason = fmt::format(
      "early stop at step {}: valid {} not better than its best, {}, in {} evaluations in a "
      "row (train.early_stop = {})",
      step, primary_.name, state_.best_metric, state_.evals_without_improvement, t.early_stop);
  result_.early_stop_metric = primary_.name;
  result_.early_stop_best = state_.best_metric;
  result_.early_stop_evaluations = state_.evals_without_improvement;
  progress_.message(result_.stop_reason);
  if (!recorder_->snapshot_due(step)) recorder_->snapshot(step, validation_->probe());
  return After::EarlyStop;
}

// One optimizer step on batch `step` (a skipped non-finite batch counts as one), then what
// follows it. Advances `step`.
Training::After Training::train_step(int64_t& step) {
  Batch global = batches_->get(step);
  if (cfg_.position.randomized_max > 0)
    global.positions = randomized_positions(cfg_.seed, step, global.tokens.size(0),
                                            global.tokens.size(1), cfg_.position.randomized_max);
  const Batch batch =
      to_device(dp_.local_rows(global, step, cfg_.train.batch_size, cfg_.seed), device_);
  set_learning_rate(*optimizer_, learning_rate(cfg_.train, step));
  optimizer_->zero_grad();
  auto loss = [&] {
    const PrecisionScope precision(cfg_.precision, device_);
    return batch_loss(model_, batch);
  }();
  if (nonfinite_.injected(step + 1)) loss = loss * std::numeric_limits<double>::quiet_NaN();
  // The global batch's mean loss (NaN on every rank when it is NaN on one); gradients averaged
  // over the ranks, so the checks below decide the same on every rank.
  const double loss_value = dp_.backward(loss, loss_items(model_, batch), step);
  bool finite = std::isfinite(loss_value);
  // A batch without a single target on any rank (mlm rows of only [UNK] and other specials)
  // has the mean loss over nothing, NaN; that is the data's fault, not the learning rate's.
  const bool no_targets = !finite && dp_.last_global_items() == 0;
  const double grad_norm = finite ? clip_gradients(*model_, cfg_.train.grad_clip) : 0;
  finite = finite && std::isfinite(grad_norm);
  if (!finite) {
    const std::string what = NonFiniteSteps::describe(step + 1, loss_value, grad_norm, no_targets);
    if (!nonfinite_.skip()) {
      recorder_->close();
      nonfinite_.fail(what, no_targets, recorder_->last_checkpoint());
    }
    progress_.message(what + "; batch skipped (train.skip_nonfinite)");
    optimizer_->zero_grad();
    ++state_.skipped_batches;
    return after_step(++step);
  }
  nonfinite_.finite();
  optimizer_->step();
  ++step;
  state_.window_loss += loss_value;
  ++state_.window_steps;
  window_tokens_ += static_cast<double>(batch.tokens.numel() * dp_.world_size());
  return after_step(step);
}

// A resumed run first finishes what its checkpoint left undone at `step`: an evaluation cut
// short by an interrupt, or the final evaluation of a run stopped at its last step (resumed
// with train.steps equal to the checkpoint's step: its evaluation, snapshot and checkpoint
// were those of a middle step, and result.json needs the validation metrics).
Training::After Training::resume_pending(int64_t step) {
  if (!opts_.resume) return After::Next;
  if (state_.pending_post_step) {
    state_.pending_post_step = false;
    return after_step(step);
  }
  if (step != cfg_.train.steps) return After::Next;
  progress_.message(fmt::format("step {} is the last: running the final evaluation", step));
  final_evaluation_only_ = true;
  const After after = after_step(step);
  final_evaluation_only_ = false;
  return after == After::EarlyStop ? After::Next : after;  // it is the end anyway
}

TrainResult Training::run() {
  if (!opts_.resume && recorder_->snapshot_due(0)) recorder_->snapshot(0, validation_->probe());
  // A checkpoint at step 0: a run killed at any moment from here on can be resumed.
  if (!opts_.resume) recorder_->checkpoint(0);
  model_->train();
  window_tokens_ = 0;
  window_start_ = Clock::now();
  // Batch s+1 is built on a background thread while step s trains (every rank builds the
  // global batch and keeps its rows: see DataParallel::local_rows).
  batches_ = std::make_unique<BatchPrefetcher>(*data_, cfg_.train.batch_size, cfg_.train.steps);
  int64_t step = state_.step;
  After after = resume_pending(step);
  while (after == After::Next && step < cfg_.train.steps) {
    // One process: a signal arrived. Data parallel: some rank had one at the last step's
    // gradient exchange, the same answer on every rank.
    if (dp_.stop_requested()) recorder_->stop_interrupted(step, false);
    after = train_step(step);
  }
  if (after == After::Interrupted) recorder_->stop_interrupted(step, true);
  return result(step, after);
}

TrainResult Training::result(int64_t step, After after) {
  result_.steps = step;
  result_.valid = last_valid_;
  result_.skipped_batches = state_.skipped_batches;
  if (after == After::StopAfter) {
    recorder_->close();
    result_.seconds = seconds_since(wall_start_);
    return result_;  // unfinished: no result.json, resumable
  }
  result_.stopped_early = after == After::EarlyStop;
  if (!result_.stopped_early)
    result_.stop_reason = fmt::format("reached train.steps ({})", cfg_.train.steps);
  progress_.message(fmt::format("data: training batches took {:.2f}s to build (one step ahead, "
                                "on a background thread); training waited {:.2f}s for them",
                                batches_->seconds_built(), batches_->seconds_waited()));
  recorder_->finish(step);
  result_.finished = true;
  result_.seconds = seconds_since(wall_start_);
  if (dp_.is_main()) write_result_json(dir_, result_, recorder_->elapsed(), init_record_);
  return result_;
}

}  // namespace

TrainResult train(const LoadedConfig& loaded, const TrainOptions& opts) {
  // First of all: from here on SIGINT/SIGTERM are honoured at a safe point, never mid-write.
  install_interrupt_handlers();
  std::error_code ec;
  const bool existed = opts.out_dir.empty() || std::filesystem::exists(opts.out_dir, ec);
  try {
    Training training(loaded, opts);
    return training.run();
  } catch (...) {
    // A run that failed before writing anything (a missing corpus, a config the model
    // refuses) leaves no folder it created itself; its lock file went with the lock.
    if (!existed && std::filesystem::is_empty(opts.out_dir, ec) && !ec)
      std::filesystem::remove(opts.out_dir, ec);
    throw;
  }
}

}  // namespace relpos
