// relpos eval: length extrapolation of a trained run (core/train/extrapolation.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iostream>

#include <fmt/ranges.h>

#include "app/commands.h"
#include "experiments/run_evaluation.h"
#include "core/io/run_file.h"
#include "core/position/position_registry.h"
#include "core/position/eval_settings.h"
#include "core/task/task_registry.h"
#include "core/train/extrapolation.h"
#include "core/train/past_bound.h"
#include "core/train/trainer.h"
#include "core/util/cpu_block_cache.h"
#include "core/util/errors.h"
#include "core/util/folder_lock.h"
#include "core/util/process.h"
#include "core/util/system.h"
#include "core/util/threads.h"

namespace relpos::app {
namespace {

// The keys `eval --set` may change (eval_settings(): eval.*, device, threads, cpu_allocator,
// precision, and the evaluation keys of the position variants, such as a learned table's
// `beyond`): how the run is evaluated, never what was trained or which documents are its test
// split (everything else comes from the run's own config.yaml).
void check_eval_override(const std::string& set) {
  if (set.find('=') == std::string::npos) return;  // the config loader reports the form
  if (is_eval_setting(set)) return;
  const std::string key = set.substr(0, set.find('='));
  const std::vector<std::string> settings = eval_settings();
  std::vector<std::string> listed;  // "eval.*, device, ... and position.learned.beyond"
  for (const auto& k : settings) listed.push_back(k == "eval" ? "eval.*" : k);
  const std::string last = listed.back();
  listed.pop_back();
  throw ConfigError(
      fmt::format("eval: --set {}: '{}' is not an evaluation setting: eval uses the run's own "
                  "config (its model, position encoding, data split and task as trained)",
                  set, key),
      fmt::format("eval --set accepts {} and {}; to evaluate another configuration, train it "
                  "(relpos train --set ...)",
                  fmt::join(listed, ", "), last));
}

// The tasks whose evaluation has a sliding window (eval --stride), comma-separated.
std::string sliding_window_tasks() {
  std::vector<std::string> names;
  for (const auto& name : TaskRegistry::get().names())
    if (task_info(name).length_eval == LengthEval::CausalStream) names.push_back(name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// The options of `relpos eval` that shape a table (-1 / empty: the run's eval.* settings).
struct EvalTableOptions {
  int64_t stride = -1, max_tokens = -1, batch = -1;
  std::vector<int64_t> lengths;
};

// Evaluates the run in `dir` with `sets`, writes /eval/extrapolation[_SUFFIX] and its CSV, and
// prints the table. `first`: the process's first evaluation, which sets up threads and allocator.
void evaluate_table(const std::string& dir, const std::vector<std::string>& sets,
                    const std::string& suffix, const EvalTableOptions& t, bool first) {
  auto run = load_run(dir, sets);
  // Other tasks have no sliding window: the stride would be ignored without a word.
  const TaskInfo& task_facts = task_info(run.config.config.task.type);
  if (t.stride > 0 && task_facts.length_eval != LengthEval::CausalStream)
    throw ConfigError(
        fmt::format("eval: --stride {} applies to {} runs only (a sliding-window "
                    "perplexity); this run's task is {}",
                    t.stride, sliding_window_tasks(), run.config.config.task.type),
        fmt::format("leave --stride out: only a {} run has a sliding-window perplexity",
                    sliding_window_tasks()));
  if (first) {
    configure_threads(run.config.config.threads);
    apply_cpu_allocator(run.config.config.cpu_allocator);
  }
  // The table goes into the run's run.h5: no other relpos process may write it now
  // (a training run still going, another eval).
  FolderLock lock(dir, "evaluation");
  const std::string table =
      suffix.empty() ? std::string("extrapolation") : "extrapolation_" + suffix;
  bool replacing = false;
  try {
    replacing = RunFileReader::open(run_h5_path(dir))->exists("/eval/" + table);
  } catch (const SchemaError&) {
    // save_extrapolation repairs or reports the file
  }
  auto opts = extrapolation_options(run.config.config);
  if (!t.lengths.empty()) opts.lengths = t.lengths;
  // -1: not given (the validators refuse every other value below the minimum).
  if (t.stride != -1) opts.stride = t.stride;
  if (t.max_tokens != -1) opts.max_tokens = t.max_tokens;
  if (t.batch != -1) opts.batch_size = t.batch;
  auto rows = evaluate_lengths(run, opts);
  save_extrapolation(dir, run, rows, opts, table);
  const auto& task = run.config.config.task;
  std::cout << (task_facts.length_eval == LengthEval::TaskLengths
                    ? fmt::format("length extrapolation of {} (trained at task lengths "
                                  "{}..{}; T = task length):\n",
                                  dir, task.min_len, task.max_len)
                    : fmt::format("length extrapolation of {} (trained at T={}):\n",
                                  dir, task.seq_len));
  for (const auto& r : rows) {
    std::string line = fmt::format("  T={:<6} ", r.length);
    if (!r.applicable) line += "n/a: " + r.note;
    for (const auto& [k, v] : r.metrics)
      line += k.rfind("tokens", 0) == 0 || k == "examples" ? fmt::format("  {} {:.0f}", k, v)
                                        : fmt::format("  {} {:.4f}", k, v);
    if (r.applicable && !r.note.empty()) line += "  (" + r.note + ")";
    std::cout << line << "\n";
  }
  if (replacing) std::cout << "(replaced the earlier /eval/" << table << " table)\n";
  std::cout << "written to " << dir << "/run.h5 (/eval/" << table << ") and "
            << dir << "/eval_" << table << ".csv\n";
}

}  // namespace

Command add_eval(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "evaluate a trained run on its test split at several sequence lengths");
  struct Args {
    std::string run;
    std::vector<std::string> lengths;  // as given: split by integer_items
    std::vector<std::string> sets;
    std::string device, suffix;
    int64_t stride = -1, max_tokens = -1, batch = -1, jobs = 1;
    bool no_past_bound = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--run,-r", a->run,
                  "run folder (written by relpos train), or a sweep or experiment folder: every "
                  "finished run below it")
      ->required();
  cmd->add_option("--lengths,-l", a->lengths,
                  "evaluation lengths, e.g. 64,128,256 (default: the run's eval.lengths; when "
                  "empty, 1x, 2x and 4x task.seq_len, and a synthetic task's own test lengths)");
  cmd->add_option("--suffix", a->suffix,
                  "write the table as /eval/extrapolation_SUFFIX and eval_extrapolation_SUFFIX.csv "
                  "beside the run's own (e.g. clamped, with --set position.learned.beyond=clamp); "
                  "analyze reads it as a further row of the run named SUFFIX")
      ->check([](const std::string& v) -> std::string {
        if (v.empty()) return "an empty suffix (expected letters, digits and _)";
        for (char c : v)
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
            return "'" + v + "' (expected letters, digits and _ only)";
        return "";
      });
  cmd->add_flag("--no-past-bound", a->no_past_bound,
                "only the table as trained: no second evaluation of an encoding past its length "
                "bound (by default a learned table is also evaluated with "
                "position.learned.beyond=clamp, as /eval/extrapolation_clamped: the row "
                "'learned (clamped)')");
  cmd->add_option("--jobs,-j", a->jobs,
                  "with a sweep or experiment folder: runs evaluated at once (default 1)")
      ->check(integer_in(1));
  cmd->add_option("--stride", a->stride,
                  "clm runs only: also a sliding-window perplexity with this stride, 0 = off "
                  "(default: eval.stride)")
      ->check(integer_in(0));
  cmd->add_option("--max-tokens", a->max_tokens,
                  "tokens per length: clm scored targets, mlm window tokens; classify and span_qa "
                  "score every test example (default: eval.max_tokens)")
      ->check(integer_in(1));
  cmd->add_option("--batch", a->batch, "sequences per batch at the training length (default: eval.batch_size)")
      ->check(integer_in(1));
  cmd->add_option("--set,-s", a->sets,
                  "override an evaluation setting of the run's config: eval.*, device, threads, "
                  "cpu_allocator, precision, position.learned.beyond=clamp (the model and data "
                  "are the run's)");
  cmd->add_option("--device", a->device, "cpu, cuda or cuda:N (same as --set device=...)")
      ->check(non_empty("cpu, cuda or cuda:N"));  // "" used to mean "not given"
  return {cmd, [a]() {
            const std::vector<int64_t> lengths = integer_items(
                "--lengths", a->lengths, "relpos eval --help lists the options and their values",
                2);
            for (const auto& s : a->sets) check_eval_override(s);
            if (!is_run_folder(a->run) && std::filesystem::is_directory(a->run)) {
              std::vector<std::string> options;
              if (!a->lengths.empty())
                options.insert(options.end(), {"--lengths", join_names(a->lengths, ",")});
              if (a->stride != -1)
                options.insert(options.end(), {"--stride", std::to_string(a->stride)});
              if (a->max_tokens != -1)
                options.insert(options.end(), {"--max-tokens", std::to_string(a->max_tokens)});
              if (a->batch != -1)
                options.insert(options.end(), {"--batch", std::to_string(a->batch)});
              for (const auto& s : a->sets) options.insert(options.end(), {"--set", s});
              if (!a->device.empty()) options.insert(options.end(), {"--device", a->device});
              if (!a->suffix.empty()) options.insert(options.end(), {"--suffix", a->suffix});
              if (a->no_past_bound) options.push_back("--no-past-bound");
              return evaluate_runs_below(a->run, options, a->jobs);
            }
            auto sets = a->sets;
            if (!a->device.empty()) sets.push_back("device=" + a->device);
            EvalTableOptions t{a->stride, a->max_tokens, a->batch, lengths};
            evaluate_table(a->run, sets, a->suffix, t, /*first=*/true);
            // An encoding with a length bound, once more past it (core/train/past_bound.h),
            // unless the user chose the table or that setting.
            if (a->no_past_bound || !a->suffix.empty()) return 0;
            for (const auto& e : past_bound_settings(a->run)) {
              const std::string key = e.setting.substr(0, e.setting.find('='));
              if (std::any_of(sets.begin(), sets.end(),
                              [&](const std::string& s) { return s.rfind(key + "=", 0) == 0; }))
                continue;
              std::cout << fmt::format("\n{} also evaluated with {} (its own table, the rows "
                                       "'{}'):\n",
                                       a->run, e.setting, e.label);
              auto with = sets;
              with.push_back(e.setting);
              evaluate_table(a->run, with, e.label, t, /*first=*/false);
            }
            return 0;
          }};
}

}  // namespace relpos::app
