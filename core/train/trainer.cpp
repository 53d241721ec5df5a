#include "core/train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <csignal>
#include <limits>
#include <optional>
#include <sstream>

#include "core/bench/child_process.h"
#include "core/data/task.h"
#include "core/data/tasks.h"
#include "core/data/text_util.h"
#include "core/dist/distributed.h"
#include "core/io/checkpoint.h"
#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/model/model.h"
#include "core/train/objective.h"
#include "core/train/optim.h"
#include "core/train/extrapolation.h"
#include "core/train/prefetch.h"
#include "core/train/progress.h"
#include "core/train/randomized_positions.h"
#include "core/train/run_folder.h"
#include "core/train/run_record.h"
#include "core/train/snapshot.h"
#include "core/util/cpu_block_cache.h"
#include "core/util/errors.h"
#include "core/util/precision.h"
#include "core/util/signals.h"
#include "core/util/system.h"
#include "core/util/threads.h"

namespace relpos {
namespace fs = std::filesystem;

torch::Device parse_device(const std::string& device) {
  if (device == "cpu") return torch::kCPU;
  if (!torch::cuda::is_available())
    throw ConfigError(fmt::format("device: '{}' asked for, but CUDA is not available", device),
                      "this LibTorch has no CUDA or no GPU is visible; use device: cpu, or build "
                      "against a CUDA LibTorch (docs/scaling.md, \"CUDA\")");
  const torch::Device d(device);
  const auto visible = static_cast<int64_t>(torch::cuda::device_count());
  if (d.has_index() && d.index() >= visible)
    throw ConfigError(fmt::format("device: '{}' asked for, but {} GPU(s) are visible", device, visible),
                      "use cuda (GPU 0, or the rank's LOCAL_RANK under data parallelism) or cuda:0..");
  return d;
}

LoadedConfig load_run_config(const std::string& dir, const std::vector<std::string>& overrides) {
  const std::string path = run_config_path(dir);
  if (!fs::exists(path))
    throw ConfigError(fmt::format("{}: no config.yaml: not a relpos run folder", dir),
                      "give the folder that `relpos train --out` wrote");
  LoadedConfig loaded = load_config({path}, overrides);
  // A run's config.yaml is the resolved config: every section is written. One that lacks them
  // (emptied, truncated, hand-edited) would silently give defaults for the model, and the
  // checkpoint would then be blamed for not matching it.
  const YAML::Node root = YAML::LoadFile(path);
  std::vector<std::string> missing;
  for (const char* section : {"model", "position", "data", "task", "train"})
    if (!root.IsMap() || !root[section]) missing.emplace_back(section);
  if (!missing.empty())
    throw ConfigError(fmt::format("{}: not a run's resolved config: no {} section{} (relpos train "
                                  "writes every key)",
                                  path, fmt::join(missing, ", "), missing.size() > 1 ? "s" : ""),
                      "the file was emptied or cut short; restore it, or train the run again");
  return loaded;
}

namespace {

// train.skip_nonfinite gives up after this many non-finite batches in a row: the parameters
// themselves have diverged, and skipping every later batch would "finish" an untrained model.
constexpr int64_t kMaxConsecutiveSkips = 20;

std::string metrics_summary(const std::map<std::string, double>& m, const std::string& primary) {
  auto it = m.find(primary);
  if (it == m.end()) return {};
  return fmt::format("valid {} {:.4f}", primary, it->second);
}

// Steps (1-based, as in messages) whose loss is replaced by NaN, from
// $RELPOS_DEBUG_NONFINITE_STEPS ("3,7"): a documented test hook (docs/reliability.md) for the
// non-finite handling, which no real config reaches at a chosen step.
std::vector<int64_t> debug_nonfinite_steps() {
  std::vector<int64_t> out;
  const char* env = std::getenv("RELPOS_DEBUG_NONFINITE_STEPS");
  if (!env || !*env) return out;
  std::stringstream ss(env);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0' || v < 1)
      throw ConfigError(fmt::format("RELPOS_DEBUG_NONFINITE_STEPS='{}': expected step numbers "
                                    ">= 1, comma-separated",
                                    env));
    out.push_back(v);
  }
  return out;
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

// Why the validation split gives no probe example, for the error that stops the run.
DataError no_probe_error(const Config& cfg, const TaskData& data, int64_t probe_len) {
  const size_t train = data.split_documents(Split::Train).size();
  const size_t valid = data.split_documents(Split::Valid).size();
  const size_t test = data.split_documents(Split::Test).size();
  if (valid == 0)
    return DataError(
        fmt::format("the validation split is empty, so there is no probe set for snapshots "
                    "(corpus '{}' splits into {} training, 0 validation and {} test documents "
                    "with data.valid_fraction {})",
                    cfg.data.corpus, train, test, cfg.data.valid_fraction),
        "a split unit is a document (a text piece, a TSV row, a SQuAD article): give more of them, "
        "a larger data.valid_fraction, or a validation file in data.valid_corpus");
  return DataError(fmt::format("the validation split ({} documents) gives no example of length {} "
                               "for the snapshot probe",
                               valid, probe_len),
                   "set snapshots.probe_len to a length the task can fill");
}

// --resume continues the run that the folder's files describe. Only settings that leave the
// model, the data and the task alone may differ from the config the run started with (run.h5's
// `config` attribute; config.yaml when there is no run.h5): train.* (steps, a lower lr after a
// non-finite loss, ...), eval.*, device, threads, cpu_allocator, precision, sweep.*, name. An edited
// config.yaml or a --set of any other key used to be applied silently. config.yaml is rewritten
// to what the resumed run uses, so that it stays the record of the run.
// Returns the changes against config.yaml, which the caller writes once every other check of
// the resume has passed.
std::vector<std::string> check_resume_config(const std::string& dir, const Config& cfg) {
  const std::string now = to_yaml(cfg);
  std::string started;
  try {
    if (fs::exists(run_h5_path(dir))) started = RunFileReader::open(run_h5_path(dir))->root_attribute("config");
  } catch (const Error&) {
    started.clear();  // an unreadable run.h5 is reported where the run opens it
  }
  const std::string stored = read_file(run_config_path(dir), "run config");
  if (started.empty()) started = stored;
  const std::vector<std::string> allowed = {"train",         "eval",      "device", "threads",
                                            "cpu_allocator", "precision", "sweep",  "name"};
  std::vector<std::string> changed;
  for (const auto& d : config_differences(started, now, allowed))
    if (d.find(": (absent) -> ") == std::string::npos)  // a key newer than the run: its default
      changed.push_back(d);
  if (!changed.empty())
    throw ConfigError(
        fmt::format("{}: --resume would continue the run with a different model, data or task "
                    "than it started with ({}): {}",
                    dir, fs::exists(run_h5_path(dir)) ? "run.h5's config" : "config.yaml",
                    fmt::join(changed, "; ")),
        "only train.*, eval.*, device, threads, cpu_allocator and precision may change on "
        "--resume; start a "
        "new run (another --out, or --overwrite) for the rest, and restore an edited config.yaml");
  return now == stored ? std::vector<std::string>{} : config_differences(stored, now);
}

}  // namespace

TrainResult train(const LoadedConfig& loaded, const TrainOptions& opts) {
  // First of all: from here on SIGINT/SIGTERM are honoured at a safe point, never mid-write.
  install_interrupt_handlers();
  const auto wall_start = std::chrono::steady_clock::now();
  const Config& cfg = loaded.config;
  // One process, or one rank of a data-parallel run (core/dist): only rank 0 touches DIR (its
  // lock, checkpoints, run.h5, metrics.jsonl, result.json).
  DataParallel dp(dist_env_from_environment(), parse_device(cfg.device));
  std::unique_ptr<FolderLock> lock;
  if (dp.is_main()) lock = prepare_out_dir(opts);
  const torch::Device device = dp.device();
  // LibTorch and OpenBLAS together; 0 = automatic (ranks on one node share its cores).
  configure_threads(cfg.threads > 0 ? cfg.threads : dp.default_threads());
  apply_cpu_allocator(cfg.cpu_allocator);
  const std::string dir = opts.out_dir;
  ProgressLine progress(cfg.train.steps, opts.quiet || !dp.is_main());
  if (dp.world_size() > 1)
    progress.message(fmt::format("data-parallel: {} ranks ({}), {} of the {} rows of each batch per rank",
                                 dp.world_size(), dp.backend(), cfg.train.batch_size / dp.world_size(),
                                 cfg.train.batch_size));
  const std::vector<int64_t> inject_nan = debug_nonfinite_steps();
  const std::vector<std::string> resume_changes =
      opts.resume ? check_resume_config(dir, cfg) : std::vector<std::string>{};

  // Data first: a missing corpus should fail before anything is written.
  const Config data_cfg = data_config_for_run(cfg, opts);
  auto data = make_task_data(data_cfg);
  progress.message(fmt::format("data: {}", data->describe()));
  // What config.yaml and run.h5 record: the settings of the tokenizer actually used (a
  // fine-tune takes the pre-trained run's SentencePiece model, and its vocab_size & co.).
  const std::string recorded_yaml = to_yaml(with_tokenizer_settings(cfg, data_cfg));
  if (recorded_yaml != to_yaml(cfg))
    progress.message(fmt::format(
        "note: the tokenizer is the pre-trained run's SentencePiece model (vocab_size {}, {}, "
        "byte fallback {}), not one with this config's settings (vocab_size {}, {}, byte "
        "fallback {}); the run records the model's",
        data_cfg.data.vocab_size, data_cfg.data.sentencepiece_model,
        data_cfg.data.sentencepiece_byte_fallback, cfg.data.vocab_size,
        cfg.data.sentencepiece_model, cfg.data.sentencepiece_byte_fallback));
  // One process only: ranks must agree on when they stop, which they do from the first step on
  // (dp.stop_requested()); a rank leaving here alone would strand the others.
  if (dp.world_size() == 1 && interrupt_requested())
    throw Interrupted(interrupt_signal(),
                      fmt::format("interrupted by {} while loading data, before training started; "
                                  "nothing was written to {}",
                                  interrupt_signal_name(), dir),
                      "run the same command again");
  // The probe and the validation batches, before anything is written to DIR: a data problem
  // found here must not leave a half-made run folder that a rerun refuses and --resume cannot use.
  const int64_t probe_len =
      cfg.snapshots.probe_len > 0 ? cfg.snapshots.probe_len : cfg.task.seq_len;
  auto probe_batches = data->eval_batches(Split::Valid, cfg.snapshots.probe_size, 1, probe_len);
  if (probe_batches.empty()) throw no_probe_error(cfg, *data, probe_len);
  const Batch probe = probe_batches.front();
  // One batch more than asked tells whether the evaluations see the whole validation split.
  // (Synthetic tasks cap the batches per test length: every length keeps its own.)
  const bool per_length = is_synthetic_task(cfg.task.type);
  auto valid_batches = data->eval_batches(
      Split::Valid, cfg.train.batch_size,
      cfg.train.eval_batches == 0 || per_length ? cfg.train.eval_batches
                                                : cfg.train.eval_batches + 1);
  if (!per_length && cfg.train.eval_batches > 0 &&
      static_cast<int64_t>(valid_batches.size()) > cfg.train.eval_batches) {
    valid_batches.resize(static_cast<size_t>(cfg.train.eval_batches));
    int64_t rows = 0;
    for (const auto& b : valid_batches) rows += b.tokens.size(0);
    progress.message(fmt::format(
        "validation: the first {} rows of the validation split per evaluation "
        "(train.eval_batches {} x train.batch_size {}); train.eval_batches=0 scores all of it",
        rows, cfg.train.eval_batches, cfg.train.batch_size));
  }
  if (dp.is_main()) keep_run_tokenizer(data->tokenizer(), dir);

  // mlm and clm rows are always task.seq_len long, so one layer's attention scores bound the
  // memory from below: a batch far past the machine's memory is an error here, not a process
  // the kernel kills minutes later (other tasks pad to the longest row: no bound from seq_len).
  if (device.is_cpu() && (cfg.task.type == "mlm" || cfg.task.type == "clm")) {
    const int64_t rows = (cfg.train.batch_size + dp.world_size() - 1) / dp.world_size();
    const std::string note = attention_memory_note(rows, cfg.model.heads, cfg.task.seq_len,
                                                   physical_memory_mb() * 1024.0 * 1024.0);
    if (!note.empty())
      throw ConfigError(fmt::format("train.batch_size {} at task.seq_len {} does not fit in "
                                    "memory: {}",
                                    cfg.train.batch_size, cfg.task.seq_len, note),
                        "a smaller train.batch_size or task.seq_len");
  }
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  Model model = build_model(cfg, data->vocab_size(), device);
  auto optimizer = make_optimizer(*model, cfg.train);
  const auto snaps = snapshot_steps(cfg.snapshots, cfg.train.steps);
  if (dp.is_main()) {
    check_free_space(dir, estimated_run_bytes(cfg, *model, static_cast<int64_t>(snaps.size())),
                     "this run (checkpoints and run.h5)");
    // Paper-size models make big snapshots: say so before the first one is written.
    const double map_bytes = 4.0 * static_cast<double>(cfg.model.layers * cfg.model.heads) *
                             static_cast<double>(probe_len * probe_len);
    if (static_cast<double>(snaps.size()) * map_bytes > 1e9)
      progress.message(fmt::format(
          "run.h5: {} snapshots of attention maps ({} layers x {} heads at probe length {}, {:.0f} "
          "MB each) take {:.1f} GB, plus the position-only scores; a lower snapshots.probe_len "
          "or snapshots.every_percent makes them smaller",
          snaps.size(), cfg.model.layers, cfg.model.heads, probe_len, map_bytes / 1e6,
          static_cast<double>(snaps.size()) * map_bytes / 1e9));
  }

  TrainState state;
  std::optional<InitFromRecord> init_record;  // --init-from: what was loaded, for the run's record
  bool has_split_record = false;              // a resumed run.h5 that has /split already
  if (opts.resume) {
    state = load_checkpoint(run_checkpoint_path(dir), *model, *optimizer);
    // A run cannot be cut back: it would "finish" at the checkpoint's step without saying so.
    if (state.step > cfg.train.steps)
      throw ConfigError(fmt::format("train.steps: {} is below step {}, which the checkpoint in {} "
                                    "already reached",
                                    cfg.train.steps, state.step, dir),
                        fmt::format("give train.steps >= {}, or leave it out to resume as "
                                    "configured",
                                    state.step));
    // Nothing left to train: going on would rewrite result.json without its validation metrics.
    if (state.step == cfg.train.steps && run_finished(dir))
      throw RunError(fmt::format("{}: the run already finished its {} steps; nothing to resume",
                                 dir, state.step),
                     fmt::format("--set train.steps=N with N > {} trains it further", state.step));
    if (dp.is_main() && !resume_changes.empty()) {
      write_text_atomic(run_config_path(dir), recorded_yaml);
      progress.message(fmt::format("resume: config.yaml updated: {}", fmt::join(resume_changes, "; ")));
    }
    // A resumed fine-tune keeps its --init-from record for result.json (run.h5 has it).
    if (dp.is_main() && fs::exists(run_h5_path(dir))) {
      const auto reader = RunFileReader::open(run_h5_path(dir));
      init_record = read_init_from(*reader);
      has_split_record = reader->exists(schema::kSplit);
    }
    progress.message(fmt::format("resuming {} at step {}", dir, state.step));
  } else {
    if (!opts.init_from.empty()) {
      const ParameterMatch m =
          load_matching_parameters(run_checkpoint_path(opts.init_from), *model);
      const size_t total = m.loaded.size() + m.initialised.size();
      // A fine-tune adds a head or a position encoding; when most of the model is new, the two
      // models differ (width, layers, shared layers) and the "fine-tune" would start from scratch.
      if (2 * m.initialised.size() > total)
        throw ConfigError(
            fmt::format("--init-from {}: only {} of the {} parameters of this model are in its "
                        "checkpoint with the same shape (new: {})",
                        opts.init_from, m.loaded.size(), total, join_names(m.initialised)),
            "--init-from needs the same model.* sizes as the run it starts from; a change of "
            "position variant or task head is fine");
      init_record =
          InitFromRecord{opts.init_from, m.loaded, m.initialised, m.shape_mismatched, m.unused};
      if (!run_finished(opts.init_from))
        progress.message(fmt::format("warning: --init-from {}: that run has not finished its "
                                     "training (no result.json); its last checkpoint is used",
                                     opts.init_from));
      progress.message(fmt::format(
          "initialised from {}: {} parameters loaded, {} new{}{}{} (recorded in run.h5's "
          "/init_from)",
          opts.init_from, m.loaded.size(), m.initialised.size(),
          m.initialised.empty() ? "" : " (" + join_names(m.initialised) + ")",
          m.shape_mismatched.empty() ? "" : "; of another shape: " + join_names(m.shape_mismatched),
          m.unused.empty() ? "" : "; not used: " + join_names(m.unused)));
    }
    if (dp.is_main()) write_text_atomic(run_config_path(dir), recorded_yaml);
  }

  // Run file.
  dp.attach(*model);
  std::unique_ptr<RunFileWriter> run_file;
  if (!dp.is_main()) {
    run_file = discarding_run_file();
  } else if (opts.resume && fs::exists(run_h5_path(dir))) {
    run_file = RunFileWriter::open_append(run_h5_path(dir));
    run_file->truncate_metrics_after(state.step);
    // The config the run goes on with (check_resume_config allowed only train.*, eval.* & co.
    // to change): run.h5 says what config.yaml says, e.g. the new train.steps for analysis.
    run_file->set_config(recorded_yaml);
  } else {
    RunAttributes attrs;
    attrs.config_yaml = recorded_yaml;
    attrs.position_types = join_names(cfg.position.types, "+");
    attrs.seed = cfg.seed;
    attrs.torch_version = torch_version();
    attrs.git_commit = git_commit();
    attrs.created = utc_timestamp();
    run_file = RunFileWriter::create(run_h5_path(dir), attrs);
  }
  std::optional<MetricsLog> metrics_log;
  if (dp.is_main()) metrics_log.emplace(run_metrics_path(dir), opts.resume ? state.step : -1);
  if (metrics_log && !metrics_log->damaged_lines().empty())
    progress.message(fmt::format(
        "warning: {}: dropped {} line(s) that are not metrics records ({}); run.h5 keeps the "
        "run's metrics",
        run_metrics_path(dir), metrics_log->damaged_lines().size(),
        fmt::join(metrics_log->damaged_lines(), "; ")));

  if (!opts.resume) run_file->write_probe(probe.tokens, probe.key_mask);
  // The split on record (split.json and /split), also for runs that predate the record.
  if (dp.is_main() && (!opts.resume || !fs::exists(run_split_path(dir)) || !has_split_record)) {
    const SplitRecord split = make_split_record(*data, data_cfg.data);
    write_split_json(dir, split, data_cfg.data);
    run_file->write_split(split);
  }
  if (init_record && !opts.resume) run_file->write_init_from(*init_record);
  auto want_snapshot = [&](int64_t step) { return std::binary_search(snaps.begin(), snaps.end(), step); };
  auto take_snapshot = [&](int64_t step) {
    if (!dp.is_main()) return;
    auto s = compute_snapshot(model, probe, cfg.snapshots, device);
    run_file->write_snapshot(step, s.attention, s.position_scores, s.position);
  };
  const auto invocation_start = std::chrono::steady_clock::now();
  const double elapsed_before = state.elapsed_seconds;
  auto elapsed = [&] {
    return elapsed_before +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - invocation_start).count();
  };
  int64_t last_checkpoint = opts.resume ? state.step : -1;
  // Every rank calls save() at the same steps (they hold the same parameters and optimizer
  // state after each step); rank 0 alone writes the checkpoint.
  auto save = [&](int64_t step) {
    state.step = step;
    state.elapsed_seconds = elapsed();
    // The generators' states NOW: after a resume, `state` still holds the states loaded from the
    // checkpoint, and saving those would make a second resume replay the wrong random numbers.
    state.cpu_rng_state = torch::Tensor();
    state.cuda_rng_state = device.is_cuda() ? current_cuda_rng_state() : torch::Tensor();
    if (dp.is_main()) save_checkpoint(run_checkpoint_path(dir), *model, *optimizer, state);
    last_checkpoint = step;
  };
  // Saves a checkpoint at `step`, closes run.h5 and throws Interrupted. `pending`: the step's
  // evaluation was cut short, so a resumed run does that step's evaluation, logging, snapshot
  // and checkpoint first. Under data parallelism every rank comes here at the same step; a rank
  // that got no signal itself stops because another one did.
  auto stop_interrupted = [&](int64_t step, bool pending) {
    state.pending_post_step = pending;
    save(step);
    run_file->flush();
    run_file->close();
    progress.finish();
    const bool here = interrupt_signal() != 0;
    throw Interrupted(here ? interrupt_signal() : SIGTERM,
                      fmt::format("interrupted by {} at step {} of {}: checkpoint saved and "
                                  "run.h5 closed in {}",
                                  here ? interrupt_signal_name() : "a signal to another rank", step,
                                  cfg.train.steps, dir),
                      fmt::format("continue with: relpos train --resume --out {}{}", dir,
                                  dp.world_size() > 1 ? " (and the same --nproc)" : ""));
  };
  // The validation metrics, or nothing when an interrupt arrived during the evaluation.
  auto evaluate_valid = [&]() -> std::optional<std::map<std::string, double>> {
    model->eval();
    const PrecisionScope precision(cfg.precision, device);
    MetricAccumulator acc(cfg.task.type, data.get(), Split::Valid);
    for (const auto& b : valid_batches) {
      if (interrupt_requested()) {
        model->train();
        return std::nullopt;
      }
      acc.add(model, to_device(b, device));
    }
    model->train();
    return acc.result();
  };

  if (!opts.resume && want_snapshot(0)) take_snapshot(0);
  // A checkpoint at step 0: a run killed at any moment from here on can be resumed.
  if (!opts.resume) save(0);

  TrainResult result;
  model->train();
  std::map<std::string, double> last_valid;
  const PrimaryMetric pm = primary_metric(cfg.task.type);
  double window_tokens = 0;
  auto window_start = std::chrono::steady_clock::now();

  bool final_evaluation_only = false;
  enum class After { Next, Interrupted, StopAfter, EarlyStop };
  // Everything after the optimizer step `step`: evaluation, logging, snapshot, checkpoint. Every
  // rank returns the same answer.
  auto post_step = [&](int64_t step) -> After {
    const bool last = step == cfg.train.steps;
    std::map<std::string, double> logged;
    if (step % cfg.train.eval_every == 0 || last) {
      // Rank 0 alone evaluates; the others wait for its word on whether an interrupt cut the
      // evaluation short, so that every rank stops at this step or none does.
      std::optional<std::map<std::string, double>> valid;
      if (dp.is_main()) valid = evaluate_valid();
      const bool cut = dp.broadcast_from_main(dp.is_main() && !valid ? 1 : 0,
                                              "whether an interrupt cut the evaluation short") != 0;
      if (cut) return After::Interrupted;
      if (valid) last_valid = *valid;
      for (const auto& [k, v] : last_valid) logged["valid_" + k] = v;
      auto it = last_valid.find(pm.name);
      if (it != last_valid.end()) record_evaluation(state, it->second, pm.higher_is_better);
      state.evals_without_improvement =
          dp.broadcast_from_main(state.evals_without_improvement, "the early-stopping count");
    }
    if (step % cfg.train.log_every == 0 || last || !logged.empty()) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - window_start).count();
      const double tps = secs > 0 ? window_tokens / secs : 0;
      // A window whose every batch was skipped has no loss to show. The final evaluation of a
      // resumed run that had no step left to train logs its validation metrics only.
      if (!final_evaluation_only) {
        logged["train_loss"] = state.window_steps > 0 ? state.window_loss / state.window_steps : NAN;
        logged["lr"] = learning_rate(cfg.train, step - 1);
        logged["tokens_per_s"] = tps;
      }
      logged["elapsed_s"] = elapsed();
      if (state.skipped_batches > 0) logged["skipped_batches"] = static_cast<double>(state.skipped_batches);
      for (const auto& [k, v] : logged) run_file->append_metric(k, step, v);
      if (metrics_log) metrics_log->write(step, logged);
      progress.update(step, logged["train_loss"], tps, metrics_summary(last_valid, pm.name));
      state.window_loss = 0;
      state.window_steps = 0;
      window_tokens = 0;
      window_start = std::chrono::steady_clock::now();
    }
    if (want_snapshot(step)) take_snapshot(step);
    const bool stop_early = early_stop_due(state, cfg.train.early_stop);
    if (step % cfg.train.checkpoint_every == 0 || last || stop_early) save(step);
    if (opts.stop_after > 0 && step >= opts.stop_after && !last) {
      if (last_checkpoint != step) save(step);
      return After::StopAfter;
    }
    if (stop_early) {
      result.stop_reason = fmt::format(
          "early stop at step {}: valid {} not better than its best, {}, in {} evaluations in a "
          "row (train.early_stop = {})",
          step, pm.name, state.best_metric, state.evals_without_improvement, cfg.train.early_stop);
      result.early_stop_metric = pm.name;
      result.early_stop_best = state.best_metric;
      result.early_stop_evaluations = state.evals_without_improvement;
      progress.message(result.stop_reason);
      if (!want_snapshot(step)) take_snapshot(step);
      return After::EarlyStop;
    }
    return After::Next;
  };

  // Batch s+1 is built on a background thread while step s trains (every rank builds the
  // global batch and keeps its rows: see DataParallel::local_rows).
  BatchPrefetcher batches(*data, cfg.train.batch_size, cfg.train.steps);
  int64_t step = state.step;
  int64_t consecutive_skips = 0;
  After after = After::Next;
  const bool resumed_mid_step = opts.resume && state.pending_post_step;
  if (resumed_mid_step) {
    state.pending_post_step = false;
    after = post_step(step);
    if (after == After::Interrupted) stop_interrupted(step, true);
  }
  // A checkpoint at the last step of an unfinished run (it was stopped right there, or resumed
  // with train.steps set to the checkpoint's step): nothing is left to train, but the last
  // step's evaluation, snapshot and checkpoint were those of a middle step. Do them now, so
  // that result.json gets its validation metrics.
  if (opts.resume && !resumed_mid_step && step == cfg.train.steps) {
    progress.message(fmt::format("step {} is the last: running the final evaluation", step));
    final_evaluation_only = true;
    after = post_step(step);
    final_evaluation_only = false;
    if (after == After::Interrupted) stop_interrupted(step, true);
    if (after == After::EarlyStop) after = After::Next;  // it is the end anyway
  }
  while (after == After::Next && step < cfg.train.steps) {
    // One process: a signal arrived. Data parallel: some rank had one at the last step's
    // gradient exchange, the same answer on every rank.
    if (dp.stop_requested()) stop_interrupted(step, false);
    Batch global = batches.get(step);
    if (cfg.position.randomized_max > 0)
      global.positions = randomized_positions(cfg.seed, step, global.tokens.size(0),
                                              global.tokens.size(1), cfg.position.randomized_max);
    const Batch batch = to_device(
        dp.local_rows(global, step, cfg.train.batch_size, cfg.seed), device);
    set_learning_rate(*optimizer, learning_rate(cfg.train, step));
    optimizer->zero_grad();
    auto loss = [&] {
      const PrecisionScope precision(cfg.precision, device);
      return batch_loss(model, batch);
    }();
    if (std::find(inject_nan.begin(), inject_nan.end(), step + 1) != inject_nan.end())
      loss = loss * std::numeric_limits<double>::quiet_NaN();
    // The global batch's mean loss (NaN on every rank when it is NaN on one); gradients averaged
    // over the ranks, so the checks below decide the same on every rank.
    const int64_t items = loss_items(model, batch);
    const double loss_value = dp.backward(loss, items, step);
    bool finite = std::isfinite(loss_value);
    // A batch without a single target on any rank (mlm rows of only [UNK] and other specials)
    // has the mean loss over nothing, NaN; that is the data's fault, not the learning rate's.
    const bool no_targets = !finite && dp.last_global_items() == 0;
    double grad_norm = 0;
    if (finite) {
      grad_norm = clip_gradients(*model, cfg.train.grad_clip);
      finite = std::isfinite(grad_norm);
    }
    if (!finite) {
      const std::string what =
          no_targets
              ? fmt::format("step {}: the batch has no target token, so its loss is not finite "
                            "({}): every token of its rows is [UNK] or another special token",
                            step + 1, loss_value)
              : fmt::format("step {}: the {} is not finite ({})", step + 1,
                            std::isfinite(loss_value) ? "gradient norm" : "loss",
                            std::isfinite(loss_value) ? grad_norm : loss_value);
      if (cfg.train.skip_nonfinite && consecutive_skips + 1 < kMaxConsecutiveSkips) {
        progress.message(what + "; batch skipped (train.skip_nonfinite)");
        optimizer->zero_grad();
        ++state.skipped_batches;
        ++consecutive_skips;
        ++step;
        after = post_step(step);
        if (after == After::Interrupted) stop_interrupted(step, true);
        continue;
      }
      run_file->flush();
      run_file->close();
      progress.finish();
      // There is always one: step 0's, saved before the first step.
      const std::string kept =
          fmt::format("the last good checkpoint (step {}) is kept in {}", last_checkpoint, dir);
      if (cfg.train.skip_nonfinite)
        throw RunError(fmt::format("{}; {} batches in a row were not finite, so the model has "
                                   "diverged; stopped; {}",
                                   what, kMaxConsecutiveSkips, kept),
                       "lower train.lr or raise train.warmup, and start again with --overwrite");
      if (no_targets)
        throw DataError(fmt::format("{}; stopped; {}", what, kept),
                        "the tokenizer covers too little of the corpus: check data.vocab_file "
                        "(and data.lower_case), or set train.skip_nonfinite=true to skip such "
                        "batches");
      throw RunError(fmt::format("{}; stopped; {}", what, kept),
                     fmt::format("continue from it with a lower learning rate: relpos train "
                                 "--resume --out {} --set train.lr=..., or set "
                                 "train.skip_nonfinite=true to skip such batches",
                                 dir));
    }
    consecutive_skips = 0;
    optimizer->step();
    ++step;
    state.window_loss += loss_value;
    ++state.window_steps;
    window_tokens += static_cast<double>(batch.tokens.numel() * dp.world_size());
    after = post_step(step);
    if (after == After::Interrupted) stop_interrupted(step, true);
  }
  if (after == After::StopAfter) {
    run_file->flush();
    run_file->close();
    progress.finish();
    result.steps = step;
    result.valid = last_valid;
    result.skipped_batches = state.skipped_batches;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return result;  // unfinished: no result.json, resumable
  }
  result.stopped_early = after == After::EarlyStop;
  if (!result.stopped_early)
    result.stop_reason = fmt::format("reached train.steps ({})", cfg.train.steps);
  progress.message(fmt::format("data: training batches took {:.2f}s to build (one step ahead, on a "
                               "background thread); training waited {:.2f}s for them",
                               batches.seconds_built(), batches.seconds_waited()));
  progress.finish();
  run_file->write_weights(parameter_tensors(*model), step);
  run_file->flush();
  run_file->close();

  result.steps = step;
  result.valid = last_valid;
  result.finished = true;
  result.skipped_batches = state.skipped_batches;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (dp.is_main()) write_result_json(dir, result, elapsed(), init_record);
  return result;
}

}  // namespace relpos
