// The thin layer between run.h5 and the analysis: reads a run folder through RunFileReader
// (core/io/run_file.h) into RunInfo and SnapshotData, one snapshot at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/experiment.h"
#include "analysis/run_analysis.h"
#include "core/io/run_file.h"

namespace relpos::analysis {

class RunFileSource : public RunSource {
 public:
  // run_dir holds run.h5. group_by: dotted config keys whose values label the run's row in
  // cross-run tables (empty: the position types).
  explicit RunFileSource(const std::string& run_dir, const std::vector<std::string>& group_by = {});
  const RunInfo& info() const override { return info_; }
  SnapshotData snapshot(int64_t step) const override;

 private:
  std::unique_ptr<RunFileReader> reader_;
  RunInfo info_;
  torch::Tensor key_mask_;  // /probe/key_mask (P,T), undefined when the probe has no padding
  int64_t probe_count_ = 0;  // P of /probe/tokens; 0 without a probe
};

// The run folders directly inside an experiment folder: in the order of their `--out DIR`
// in DIR/commands.txt (as `relpos sweep` writes it), the others after them by name.
std::vector<std::string> find_run_dirs(const std::string& dir);

// The run folders `relpos analyze DIR` and `relpos report DIR` read: DIR itself when it is a run
// folder, else find_run_dirs(DIR). Throws ConfigError with a hint when DIR does not exist, is a
// file, or holds no run.h5 and no run folders.
std::vector<std::string> run_dirs_of(const std::string& dir);

// Why the tables folder is out of date for these run folders ("RUN/run.h5 is newer than the
// tables"), or "" when every run's run.h5 and result.json are older than it (or absent).
std::string newer_than_tables(const std::vector<std::string>& run_dirs, const std::string& tables);

// Whether a YAML text has the dotted key ("model.layers").
bool yaml_has(const std::string& yaml, const std::string& dotted_key);

// The value at a dotted key ("model.layers") of a YAML text, as text; empty when absent.
std::string yaml_value(const std::string& yaml, const std::string& dotted_key);

// Throws ConfigError naming each task and its runs when `runs` (the runs of folder `dir`) are of
// more than one task: their metrics must not be pooled into one table.
void check_one_task(const std::vector<const RunInfo*>& runs, const std::string& dir);

// `relpos analyze DIR`: a run folder (holds run.h5) is analysed in place; an experiment folder
// (holds run folders) gets every run analysed, then the cross-run tables and figures.
// `experiment` tells which it was. Throws ConfigError when DIR does not exist, is neither, or
// `group_by` lists a key twice or a key no run's config has, and when its runs are of more than one
// task (check_one_task).
ExperimentResult analyze_folder(const std::string& dir, const AnalyzeOptions& o,
                                const std::vector<std::string>& group_by, bool* experiment);

}  // namespace relpos::analysis
