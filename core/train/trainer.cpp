#include "core/train/trainer.h"

#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/data/task.h"
#include "core/dist/distributed.h"
#include "core/io/checkpoint.h"
#include "core/io/run_file.h"
#include "core/model/model.h"
#include "core/train/objective.h"
#include "core/train/optim.h"
#include "core/train/progress.h"
#include "core/train/snapshot.h"
#include "core/util/errors.h"
#include "core/util/signals.h"
#include "core/util/system.h"
#include "core/util/threads.h"

namespace relpos {
namespace fs = std::filesystem;

std::string run_config_path(const std::string& dir) { return (fs::path(dir) / "config.yaml").string(); }
std::string run_checkpoint_path(const std::string& dir) { return (fs::path(dir) / "checkpoint.pt").string(); }
std::string run_h5_path(const std::string& dir) { return (fs::path(dir) / "run.h5").string(); }
std::string run_result_path(const std::string& dir) { return (fs::path(dir) / "result.json").string(); }
std::string run_metrics_path(const std::string& dir) { return (fs::path(dir) / "metrics.jsonl").string(); }
bool run_finished(const std::string& dir) { return fs::exists(run_result_path(dir)); }

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
  return load_config({path}, overrides);
}

namespace {

void write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw RunError(fmt::format("{}: cannot write", tmp));
    out << text;
    out.flush();
    if (!out) throw RunError(fmt::format("{}: write failed (disk full?)", tmp));
  }
  fs::rename(tmp, path);
}

// Makes sure DIR can take this run before any work starts.
void prepare_out_dir(const TrainOptions& o) {
  if (o.out_dir.empty()) throw ConfigError("train: --out DIR is required");
  const fs::path dir(o.out_dir);
  std::error_code ec;
  if (o.resume) {
    if (!fs::exists(run_checkpoint_path(o.out_dir)))
      throw RunError(fmt::format("{}: nothing to resume (no checkpoint.pt)", o.out_dir),
                     "start the run without --resume");
  } else if (fs::exists(dir)) {
    const bool has_run = fs::exists(run_config_path(o.out_dir)) ||
                         fs::exists(run_checkpoint_path(o.out_dir)) ||
                         fs::exists(run_h5_path(o.out_dir));
    if (has_run && !o.overwrite) {
      if (run_finished(o.out_dir))
        throw RunError(fmt::format("{}: holds a finished run", o.out_dir),
                       "pass --overwrite to replace it, or choose another --out");
      throw RunError(fmt::format("{}: holds an unfinished run", o.out_dir),
                     "pass --resume to continue it, or --overwrite to start again");
    }
    if (has_run)
      for (const auto& p : {run_config_path(o.out_dir), run_checkpoint_path(o.out_dir),
                            run_h5_path(o.out_dir), run_result_path(o.out_dir),
                            run_metrics_path(o.out_dir)})
        fs::remove(p, ec);
  }
  fs::create_directories(dir, ec);
  if (ec)
    throw RunError(fmt::format("{}: cannot create the output folder: {}", o.out_dir, ec.message()));
  const std::string probe = (dir / ".write_test").string();
  {
    std::ofstream t(probe);
    if (!(t << "ok"))
      throw RunError(fmt::format("{}: the output folder is not writable", o.out_dir));
  }
  fs::remove(probe, ec);
}

std::string metrics_summary(const std::map<std::string, double>& m, const std::string& primary) {
  auto it = m.find(primary);
  if (it == m.end()) return {};
  return fmt::format("valid {} {:.4f}", primary, it->second);
}

void write_result(const std::string& dir, const TrainResult& r, double total_seconds,
                  const std::string& init_note) {
  std::string s = "{\n";
  s += fmt::format("  \"steps\": {},\n", r.steps);
  s += fmt::format("  \"train_seconds\": {:.3f},\n", total_seconds);
  s += fmt::format("  \"stopped_early\": {},\n", r.stopped_early ? "true" : "false");
  if (!init_note.empty()) s += fmt::format("  \"init_from\": \"{}\",\n", init_note);
  s += "  \"valid\": {";
  bool first = true;
  for (const auto& [k, v] : r.valid) {
    s += fmt::format("{}\n    \"{}\": {}", first ? "" : ",", k,
                     std::isfinite(v) ? fmt::format("{}", v) : "null");
    first = false;
  }
  s += "\n  }\n}\n";
  write_text_atomic(run_result_path(dir), s);
}

}  // namespace

TrainResult train(const LoadedConfig& loaded, const TrainOptions& opts) {
  const auto wall_start = std::chrono::steady_clock::now();
  const Config& cfg = loaded.config;
  // One process, or one rank of a data-parallel run (core/dist): only rank 0 writes DIR.
  DataParallel dp(dist_env_from_environment(), parse_device(cfg.device));
  if (dp.is_main()) prepare_out_dir(opts);
  const torch::Device device = dp.device();
  // LibTorch and OpenBLAS together; 0 = automatic (ranks on one node share its cores).
  configure_threads(cfg.threads > 0 ? cfg.threads : dp.default_threads());
  const std::string dir = opts.out_dir;
  ProgressLine progress(cfg.train.steps, opts.quiet || !dp.is_main());
  if (dp.world_size() > 1)
    progress.message(fmt::format("data-parallel: {} ranks ({}), {} of the {} rows of each batch per rank",
                                 dp.world_size(), dp.backend(), cfg.train.batch_size / dp.world_size(),
                                 cfg.train.batch_size));

  // Data first: a missing corpus should fail before anything is written.
  auto data = make_task_data(cfg);
  progress.message(fmt::format("data: {}", data->describe()));

  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  Model model(cfg, data->vocab_size());
  model->to(device);
  auto optimizer = make_optimizer(*model, cfg.train);

  TrainState state;
  std::string init_note;
  if (opts.resume) {
    state = load_checkpoint(run_checkpoint_path(dir), *model, *optimizer);
    progress.message(fmt::format("resuming {} at step {}", dir, state.step));
  } else {
    if (dp.is_main()) write_text_atomic(run_config_path(dir), to_yaml(cfg));
    if (!opts.init_from.empty()) {
      std::vector<std::string> skipped;
      auto fresh = load_matching_parameters(run_checkpoint_path(opts.init_from), *model, &skipped);
      init_note = opts.init_from;
      progress.message(fmt::format("initialised from {}: {} parameters loaded, {} new{}{}",
                                   opts.init_from, model->named_parameters().size() - fresh.size(),
                                   fresh.size(), fresh.empty() ? "" : " (" + join_names(fresh) + ")",
                                   skipped.empty() ? "" : "; not used: " + join_names(skipped)));
    }
  }

  // Run file.
  dp.attach(*model);
  std::unique_ptr<RunFileWriter> run_file;
  const std::string primary = primary_metric(cfg.task.type).name;
  if (!dp.is_main()) {
    run_file = discarding_run_file();
  } else if (opts.resume && fs::exists(run_h5_path(dir))) {
    run_file = RunFileWriter::open_append(run_h5_path(dir));
    run_file->truncate_metrics_after(state.step);
  } else {
    RunAttributes attrs;
    attrs.config_yaml = to_yaml(cfg);
    attrs.position_types = join_names(cfg.position.types, "+");
    attrs.seed = cfg.seed;
    attrs.torch_version = torch_version();
    attrs.git_commit = git_commit();
    attrs.created = utc_timestamp();
    run_file = RunFileWriter::create(run_h5_path(dir), attrs);
  }
  std::optional<MetricsLog> metrics_log;
  if (dp.is_main()) metrics_log.emplace(run_metrics_path(dir), opts.resume ? state.step : -1);

  const int64_t probe_len = cfg.snapshots.probe_len > 0 ? cfg.snapshots.probe_len : cfg.task.seq_len;
  auto probe_batches = data->eval_batches(Split::Valid, cfg.snapshots.probe_size, 1, probe_len);
  if (probe_batches.empty())
    throw DataError("the validation split is empty: no probe set for snapshots",
                    "use a larger corpus or a larger data.valid_fraction");
  const Batch probe = probe_batches.front();
  if (!opts.resume) run_file->write_probe(probe.tokens, probe.key_mask);
  const auto valid_batches = data->eval_batches(Split::Valid, cfg.train.batch_size, cfg.train.eval_batches);
  const auto snaps = snapshot_steps(cfg.snapshots, cfg.train.steps);
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
  auto save = [&](int64_t step) {
    state.step = step;
    state.elapsed_seconds = elapsed();
    if (dp.is_main()) save_checkpoint(run_checkpoint_path(dir), *model, *optimizer, state);
  };

  install_interrupt_handlers();
  if (!opts.resume && want_snapshot(0)) take_snapshot(0);

  TrainResult result;
  model->train();
  std::map<std::string, double> last_valid;
  const PrimaryMetric pm = primary_metric(cfg.task.type);
  double window_loss = 0, window_tokens = 0;
  int64_t window_steps = 0;
  auto window_start = std::chrono::steady_clock::now();
  int64_t step = state.step;
  int64_t last_checkpoint = state.step;
  while (step < cfg.train.steps) {
    if (dp.stop_requested()) {
      save(step);
      run_file->flush();
      run_file->close();
      progress.finish();
      throw RunError(fmt::format("interrupted by signal {} at step {}; checkpoint saved in {}",
                                 interrupt_signal(), step, dir),
                     fmt::format("continue with: relpos train --resume --out {}", dir));
    }
    const Batch batch = to_device(dp.local_batch(*data, step, cfg.train.batch_size, cfg.seed), device);
    set_learning_rate(*optimizer, learning_rate(cfg.train, step));
    optimizer->zero_grad();
    auto loss = batch_loss(model, batch);
    // The global batch's mean loss; gradients averaged over the ranks.
    const double loss_value = dp.backward(loss, loss_items(model, batch), step);
    bool finite = std::isfinite(loss_value);
    double grad_norm = 0;
    if (finite) {
      grad_norm = cfg.train.grad_clip > 0
                      ? torch::nn::utils::clip_grad_norm_(model->parameters(), cfg.train.grad_clip)
                      : 0.0;
      finite = std::isfinite(grad_norm);
    }
    if (!finite) {
      if (cfg.train.skip_nonfinite) {
        progress.message(fmt::format("step {}: non-finite loss or gradients, batch skipped", step + 1));
        optimizer->zero_grad();
        ++step;
        continue;
      }
      run_file->flush();
      run_file->close();
      progress.finish();
      throw RunError(fmt::format("step {}: the {} is not finite ({}); the last good checkpoint "
                                 "(step {}) is kept in {}",
                                 step + 1, std::isfinite(loss_value) ? "gradient norm" : "loss",
                                 std::isfinite(loss_value) ? grad_norm : loss_value,
                                 last_checkpoint, dir),
                     "lower train.lr, or set train.skip_nonfinite=true to skip such batches");
    }
    optimizer->step();
    ++step;
    window_loss += loss_value;
    window_tokens += static_cast<double>(batch.tokens.numel() * dp.world_size());
    ++window_steps;

    const bool last = step == cfg.train.steps;
    std::map<std::string, double> logged;
    if (step % cfg.train.eval_every == 0 || last) {
      if (dp.is_main()) last_valid = evaluate(model, *data, cfg.task.type, Split::Valid, valid_batches, device);
      for (const auto& [k, v] : last_valid) logged["valid_" + k] = v;
      auto it = last_valid.find(pm.name);
      if (it != last_valid.end()) {
        const bool better = !state.has_best || (pm.higher_is_better ? it->second > state.best_metric
                                                                      : it->second < state.best_metric);
        if (better) {
          state.best_metric = it->second;
          state.has_best = true;
          state.evals_without_improvement = 0;
        } else {
          ++state.evals_without_improvement;
        }
      }
      state.evals_without_improvement =
          dp.broadcast_from_main(state.evals_without_improvement, "the early-stopping count");
    }
    if (step % cfg.train.log_every == 0 || last || !logged.empty()) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - window_start).count();
      const double tps = secs > 0 ? window_tokens / secs : 0;
      logged["train_loss"] = window_loss / std::max<int64_t>(1, window_steps);
      logged["lr"] = learning_rate(cfg.train, step - 1);
      logged["tokens_per_s"] = tps;
      logged["elapsed_s"] = elapsed();
      for (const auto& [k, v] : logged) run_file->append_metric(k, step, v);
      if (metrics_log) metrics_log->write(step, logged);
      progress.update(step, logged["train_loss"], tps, metrics_summary(last_valid, pm.name));
      window_loss = window_tokens = 0;
      window_steps = 0;
      window_start = std::chrono::steady_clock::now();
    }
    if (want_snapshot(step)) take_snapshot(step);
    const bool stop_early = cfg.train.early_stop > 0 &&
                            state.evals_without_improvement >= cfg.train.early_stop;
    if (step % cfg.train.checkpoint_every == 0 || last || stop_early) {
      save(step);
      last_checkpoint = step;
    }
    if (opts.stop_after > 0 && step >= opts.stop_after && !last) {
      save(step);
      run_file->flush();
      run_file->close();
      progress.finish();
      result.steps = step;
      result.valid = last_valid;
      result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
      return result;  // unfinished: no result.json, resumable
    }
    if (stop_early) {
      progress.message(fmt::format("early stop at step {}: no better valid {} in {} evaluations",
                                   step, pm.name, cfg.train.early_stop));
      if (!want_snapshot(step)) take_snapshot(step);
      result.stopped_early = true;
      break;
    }
  }
  progress.finish();
  run_file->write_weights(parameter_tensors(*model), step);
  run_file->flush();
  run_file->close();

  result.steps = step;
  result.valid = last_valid;
  result.finished = true;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (dp.is_main()) write_result(dir, result, elapsed(), init_note);
  return result;
}

}  // namespace relpos
