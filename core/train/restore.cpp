#include "core/train/restore.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "core/io/run_paths.h"
#include "core/io/schema.h"
#include "core/train/run_folder.h"
#include "core/train/run_record.h"
#include "core/util/errors.h"
#include "core/util/text_util.h"

namespace relpos {
namespace fs = std::filesystem;

std::vector<std::string> check_resume_config(const std::string& dir, const Config& cfg) {
  // A run records no claims (they belong to its sweep or experiment): compare without them.
  Config run_part = cfg;
  run_part.claims.clear();
  run_part.provenance.clear();
  const std::string now = to_yaml(run_part);
  std::string started;
  try {
    if (fs::exists(run_h5_path(dir))) started = RunFileReader::open(run_h5_path(dir))->root_attribute("config");
  } catch (const Error&) {
    started.clear();  // an unreadable run.h5 is reported where the run opens it
  }
  const std::string stored = read_file(run_config_path(dir), "run config");
  if (started.empty()) started = stored;
  const std::vector<std::string> allowed = {"train",         "eval",      "device", "threads",
                                            "cpu_allocator", "precision", "sweep",  "name",
                                            "model.attention_impl", "figures"};
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
        "only train.*, eval.*, figures.*, device, threads, cpu_allocator, precision and "
        "model.attention_impl may change on --resume; start a "
        "new run (another --out, or --overwrite) for the rest, and restore an edited config.yaml");
  return now == stored ? std::vector<std::string>{} : config_differences(stored, now);
}

Resumed resume_from_checkpoint(const std::string& dir, const Config& cfg, bool main,
                               const std::string& recorded_yaml,
                               const std::vector<std::string>& changes, torch::nn::Module& model,
                               torch::optim::Optimizer& optimizer,
                               const std::function<void(const std::string&)>& say) {
  Resumed r;
  r.state = load_checkpoint(run_checkpoint_path(dir), model, optimizer);
  const int64_t step = r.state.step;
  // A run cannot be cut back: it would "finish" at the checkpoint's step without saying so.
  if (step > cfg.train.steps)
    throw ConfigError(fmt::format("train.steps: {} is below step {}, which the checkpoint in {} "
                                  "already reached",
                                  cfg.train.steps, step, dir),
                      fmt::format("give train.steps >= {}, or leave it out to resume as "
                                  "configured",
                                  step));
  // Nothing left to train: going on would rewrite result.json without its validation metrics.
  if (step == cfg.train.steps && run_finished(dir))
    throw RunError(fmt::format("{}: the run already finished its {} steps; nothing to resume",
                               dir, step),
                   fmt::format("--set train.steps=N with N > {} trains it further", step));
  if (main && !changes.empty()) {
    write_text_atomic(run_config_path(dir), recorded_yaml);
    say(fmt::format("resume: config.yaml updated: {}", fmt::join(changes, "; ")));
  }
  // A resumed fine-tune keeps its --init-from record for result.json (run.h5 has it).
  if (main && fs::exists(run_h5_path(dir))) {
    const auto reader = RunFileReader::open(run_h5_path(dir));
    r.init_from = read_init_from(*reader);
    r.has_split_record = reader->exists(schema::kSplit);
  }
  say(fmt::format("resuming {} at step {}", dir, step));
  return r;
}

InitFromRecord init_from_run(const std::string& source, torch::nn::Module& model,
                             const std::function<void(const std::string&)>& say) {
  const ParameterMatch m = load_matching_parameters(run_checkpoint_path(source), model);
  const size_t total = m.loaded.size() + m.initialised.size();
  // A fine-tune adds a head or a position encoding; when most of the model is new, the two
  // models differ (width, layers, shared layers) and the "fine-tune" would start from scratch.
  if (2 * m.initialised.size() > total)
    throw ConfigError(
        fmt::format("--init-from {}: only {} of the {} parameters of this model are in its "
                    "checkpoint with the same shape (new: {})",
                    source, m.loaded.size(), total, join_names(m.initialised)),
        "--init-from needs the same model.* sizes as the run it starts from; a change of "
        "position variant or task head is fine");
  if (!run_finished(source))
    say(fmt::format("warning: --init-from {}: that run has not finished its "
                    "training (no result.json); its last checkpoint is used",
                    source));
  say(fmt::format(
      "initialised from {}: {} parameters loaded, {} new{}{}{} (recorded in run.h5's "
      "/init_from)",
      source, m.loaded.size(), m.initialised.size(),
      m.initialised.empty() ? "" : " (" + join_names(m.initialised) + ")",
      m.shape_mismatched.empty() ? "" : "; of another shape: " + join_names(m.shape_mismatched),
      m.unused.empty() ? "" : "; not used: " + join_names(m.unused)));
  return InitFromRecord{source, m.loaded, m.initialised, m.shape_mismatched, m.unused};
}

}  // namespace relpos
