// Length evaluation of many runs: one `relpos eval --run DIR` child process per run, `jobs` at a
// time. The one fan-out behind `relpos eval --run FOLDER` (every finished run below a sweep or
// experiment folder) and an experiment's length evaluation (ExperimentContext::evaluate_lengths).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/util/process.h"

namespace relpos {

// Evaluates each run of `runs` in a child `BINARY eval --run DIR OPTIONS...` (`binary` "" : this
// executable), `options_of(run)` giving its options; `done(i, finished, result)` after each, one
// call at a time. Once `stop()` is true no further child starts. Results in the order of `runs`.
std::vector<ChildResult> evaluate_runs(
    const std::vector<std::string>& runs,
    const std::function<std::vector<std::string>(const std::string&)>& options_of, int64_t jobs,
    const std::string& binary,
    const std::function<void(size_t, size_t, const ChildResult&)>& done,
    const std::function<bool()>& stop = {});

// How `relpos eval` evaluates one run (-1 / empty: the run's own eval.* settings).
struct EvalRunOptions {
  std::vector<std::string> sets;  // evaluation settings (check_eval_override), device included
  std::string suffix;             // the table's suffix: /eval/extrapolation_SUFFIX
  int64_t stride = -1, max_tokens = -1, batch = -1;
  std::vector<int64_t> lengths;
  // Also evaluate an encoding with a length bound past it (core/train/past_bound.h), as its own
  // table, unless `suffix` is given or `sets` already chooses that setting.
  bool past_bound = true;
};

// Throws ConfigError unless `set` (key=value) is an evaluation setting: eval.*, device, threads,
// cpu_allocator, precision, or a variant's evaluation key (eval uses the run's own config).
void check_eval_override(const std::string& set);

// `relpos eval --run DIR`: evaluates the run at its lengths, writes /eval/extrapolation[_SUFFIX]
// into run.h5 and eval_extrapolation[_SUFFIX].csv, and prints each table.
void evaluate_run(const std::string& dir, const EvalRunOptions& options);

// `relpos eval --run FOLDER OPTIONS...` of every finished run below `root` (run_folders_below),
// `jobs` at a time, printing each run's table as it finishes and skipping unfinished runs with a
// word. Returns 0 when every run was evaluated, else the first failed run's exit status; a folder
// with no finished run below it is a ConfigError.
int evaluate_runs_below(const std::string& root, const std::vector<std::string>& options,
                        int64_t jobs);

}  // namespace relpos
