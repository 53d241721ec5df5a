// Checks that the runs of an experiment folder belong together before their numbers are
// pooled: `analyze` prints what they find, `report` puts it at the top of report.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/run_analysis.h"

namespace relpos::analysis {

// The folder names of the runs that dir/commands.txt (written by `relpos sweep`) trains, in
// its order, finished ones included; nullopt when there is no commands.txt.
std::optional<std::vector<std::string>> sweep_run_names(const std::string& dir);

// Warnings (without a "warning: " prefix) about the runs of experiment folder `dir`:
// - runs pooled into one row (same RunInfo::group, mean ± std over seeds) whose configs differ
//   in more than the seed and the settings that do not change training (name, threads,
//   device, cpu_allocator, sweep.*, eval.*, data.cache_dir): the row would mix settings;
// - when dir/commands.txt exists (a sweep wrote it), run folders that no command in it
//   trains: copied in, or left from another sweep, yet pooled like the others.
// Empty when all is well.
std::vector<std::string> experiment_warnings(const std::vector<RunInfo>& runs,
                                             const std::string& dir);

}  // namespace relpos::analysis
