#include "experiments/run_evaluation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>

#include "core/io/run_file.h"
#include "core/io/run_paths.h"
#include "core/position/eval_settings.h"
#include "core/task/task_registry.h"
#include "core/train/extrapolation.h"
#include "core/train/past_bound.h"
#include "core/train/trainer.h"
#include "core/util/cpu_block_cache.h"
#include "core/util/folder_lock.h"
#include "core/util/threads.h"
#include "core/util/child_pool.h"
#include "core/util/errors.h"
#include "core/util/system.h"
#include "core/config/fields.h"

namespace relpos {

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

namespace {


// The tasks whose evaluation has a sliding window (eval --stride), comma-separated.
std::string sliding_window_tasks() {
  std::vector<std::string> names;
  for (const auto& name : TaskRegistry::get().names())
    if (task_info(name).length_eval == LengthEval::CausalStream) names.push_back(name);
  return fmt::format("{}", fmt::join(names, ", "));
}


// Evaluates the run in `dir` with `sets`, writes /eval/extrapolation[_SUFFIX] and its CSV, and
// prints the table. `first`: the process's first evaluation, which sets up threads and allocator.
void evaluate_table(const std::string& dir, const std::vector<std::string>& sets,
                    const std::string& suffix, const EvalRunOptions& t, bool first) {
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

void evaluate_run(const std::string& dir, const EvalRunOptions& o) {
  evaluate_table(dir, o.sets, o.suffix, o, /*first=*/true);
  // An encoding with a length bound, once more past it (core/train/past_bound.h), unless the
  // user chose the table or that setting.
  if (!o.past_bound || !o.suffix.empty()) return;
  for (const auto& e : past_bound_settings(dir)) {
    const std::string key = e.setting.substr(0, e.setting.find('='));
    if (std::any_of(o.sets.begin(), o.sets.end(),
                    [&](const std::string& s) { return s.rfind(key + "=", 0) == 0; }))
      continue;
    std::cout << fmt::format("\n{} also evaluated with {} (its own table, the rows '{}'):\n", dir,
                             e.setting, e.label);
    auto with = o.sets;
    with.push_back(e.setting);
    evaluate_table(dir, with, e.label, o, /*first=*/false);
  }
}

std::vector<ChildResult> evaluate_runs(
    const std::vector<std::string>& runs,
    const std::function<std::vector<std::string>(const std::string&)>& options_of, int64_t jobs,
    const std::string& binary,
    const std::function<void(size_t, size_t, const ChildResult&)>& done,
    const std::function<bool()>& stop) {
  const std::string program = binary.empty() ? self_executable() : binary;
  std::vector<std::vector<std::string>> argvs;
  for (const auto& r : runs) {
    argvs.push_back({program, "eval", "--run", r});
    const auto options = options_of(r);
    argvs.back().insert(argvs.back().end(), options.begin(), options.end());
  }
  size_t finished = 0;
  return run_children(
      argvs, jobs, [&](size_t i, const ChildResult& r) { done(i, ++finished, r); }, stop);
}

int evaluate_runs_below(const std::string& root, const std::vector<std::string>& options,
                        int64_t jobs) {
  std::vector<std::string> runs, unfinished;
  for (const auto& r : run_folders_below(root)) (run_finished(r) ? runs : unfinished).push_back(r);
  if (runs.empty())
    throw ConfigError(
        fmt::format("eval: {}: not a run folder (no run.h5), and no finished run folder below it{}",
                    root,
                    unfinished.empty() ? ""
                                       : fmt::format(" ({} unfinished: no result.json)",
                                                     unfinished.size())),
        "give a run folder written by relpos train, or a sweep or experiment folder holding some");
  for (const auto& u : unfinished)
    std::cout << fmt::format("skipped {}: unfinished (no result.json)\n", u);
  std::cout << fmt::format("evaluating {} runs under {}, {} at a time\n", runs.size(), root,
                           std::min<int64_t>(jobs, static_cast<int64_t>(runs.size())))
            << std::flush;
  const auto results = evaluate_runs(
      runs, [&](const std::string&) { return options; }, jobs, "",
      [&](size_t i, size_t finished, const ChildResult& r) {
        std::cout << fmt::format("[{}/{}] {}{}\n{}", finished, runs.size(), runs[i],
                                 r.ok() ? "" : " FAILED (" + r.describe(0) + ")", r.out)
                  << std::flush;
      });
  int status = 0;
  std::vector<std::string> failed;
  for (size_t i = 0; i < runs.size(); ++i)
    if (!results[i].ok()) {
      if (status == 0) status = results[i].status();
      failed.push_back(runs[i]);
    }
  std::cout << fmt::format("evaluated {} of {} runs under {}{}\n", runs.size() - failed.size(),
                           runs.size(), root,
                           failed.empty() ? "" : "; failed: " + join_names(failed));
  return status;
}

}  // namespace relpos
