// Named experiments (`relpos reproduce NAME --scale mini|paper`): each wires sweeps, length
// evaluation, analysis and a report together. One file per experiment in experiments/, each
// registering itself in experiment_list() (experiment.cpp). Configs live in
// configs/experiments/<name>/<scale>.yaml; docs/experiments/<name>.md says what each reproduces.
#pragma once

#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/claims.h"
#include "analysis/experiment.h"
#include "core/config/config.h"
#include "core/train/extrapolation.h"
#include "experiments/sweep.h"

namespace relpos {

struct ReproduceOptions {
  std::string name;
  std::string scale = "mini";           // mini | paper
  std::string out_dir;                  // default results/<name> (mini) or results/<name>-<scale>
  int64_t jobs = 0;                     // runs at once; 0 = the config's sweep.jobs
  // Overrides: key=value for every run (e.g. device=cuda); STAGE[,STAGE...]:key=value for the
  // runs of the named stages only (e.g. squad:data.corpus=train-v1.1.json).
  std::vector<std::string> sets;
  std::string relpos_binary;            // executable for child runs
  std::string command_line;             // as typed, for the report
  bool quiet = false;
  // false: no figures (analysis tables, claims and reports only), for a machine without gnuplot
  // such as a GPU machine; the reports say where figures would be.
  bool figures = true;
};

// What an experiment's stages share.
class ExperimentContext {
 public:
  // `stages`: the experiment's stage names (its sub-folders), which STAGE:key=value overrides
  // may name; any other stage name is a ConfigError listing them.
  // `stages_selectable`: the config's sweep.stages may choose some of the stages (runs_stage);
  // elsewhere a non-empty sweep.stages is a ConfigError.
  explicit ExperimentContext(const ReproduceOptions& opts,
                             const std::vector<std::string>& stages = {},
                             bool stages_selectable = false);

  const ReproduceOptions& options() const { return opts_; }
  const std::string& dir() const { return dir_; }
  const std::string& config_file() const { return config_file_; }
  const Config& config() const { return config_; }  // the experiment config, overrides applied
  const std::vector<std::string>& sets() const { return global_sets_; }  // --set for all runs
  // The overrides of one stage's runs: the global ones, then those naming `stage`.
  std::vector<std::string> sets_for(const std::string& stage) const;
  // Whether `stage` runs: listed in the config's sweep.stages, or that list is empty.
  bool runs_stage(const std::string& stage) const;
  // A sibling config of the same experiment and scale: configs/experiments/<name>/<scale>-<part>.yaml
  // (e.g. "finetune-squad"), or the main one for "".
  std::string part_config(const std::string& part) const;
  // part_config(part) when that file exists, else the main config (an optional per-stage overlay,
  // e.g. synthetic's mini-recall.yaml).
  std::string part_config_or_main(const std::string& part) const;
  void log(const std::string& message) const;

  // Runs a grid into dir()/sub (sub may be ""). `init_from` is a run-folder template in which
  // "{point}" is replaced by each point's name (fine-tuning from the matching pre-trained run).
  std::vector<SweepRunStatus> sweep(const std::string& sub, const std::vector<std::string>& configs,
                                    const std::vector<std::string>& grid,
                                    const std::vector<std::string>& sets = {},
                                    const std::string& init_from = "") const;

  // Length evaluation of each run folder into /eval/extrapolation, or /eval/extrapolation_<suffix>
  // (skipped when its table is newer than the run): `relpos eval` children, the sweep's jobs at
  // a time. `extra_sets`: evaluation settings on top of the stage's (e.g.
  // position.learned.beyond=clamp, written with the suffix "clamped"). Throws RunError naming
  // the run when a child fails (after the others finished), Interrupted on SIGINT/SIGTERM.
  void evaluate_lengths(const std::vector<std::string>& run_dirs,
                        const std::vector<std::string>& extra_sets = {},
                        const std::string& suffix = "") const;

  // `relpos analyze` on an experiment folder (warnings logged), and `relpos report` of it
  // (ending with dir()/claims.md when the folder is dir()); analyze_and_report does both and
  // returns the report path. `group_by`: as `relpos analyze --group-by` (the rows' labels).
  analysis::ExperimentResult analyze(const std::string& folder,
                                     const std::vector<std::string>& group_by = {}) const;
  std::string report(const std::string& folder, const analysis::ExperimentResult& result) const;
  std::string analyze_and_report(const std::string& folder) const;

  // Judges the claims of the experiment's config (its `claims:` block, placeholders {T},
  // {longest}, {N} replaced; only the claims of the stages that run) on per-run records
  // (RunRecord::stage, seed and settings set), and writes dir()/claims.md and
  // dir()/claims.json (analysis/claims_report.h), which the report ends with.
  std::vector<analysis::ClaimResult> judge_claims(
      const std::vector<analysis::RunRecord>& records) const;
  // The claims judge_claims judges.
  std::vector<ClaimConfig> claims() const;

  // Throws Interrupted (core/util/signals.h) when SIGINT/SIGTERM arrived, saying that the
  // experiment stopped before `stage`. sweep(), evaluate_lengths() (before each run) and
  // analyze_and_report() call it first, so `relpos reproduce` stops between stages; a signal
  // during a sweep is handled by run_sweep (its runs checkpoint).
  void stop_if_interrupted(const std::string& stage) const;

 private:
  std::string part_path(const std::string& part) const;  // <dir of config>/<scale>-<part>.yaml
  ReproduceOptions opts_;
  std::vector<std::string> global_sets_;
  std::vector<std::pair<std::vector<std::string>, std::string>> stage_sets_;  // stages, key=value
  std::string dir_;
  std::string config_file_;
  Config config_;
  std::vector<std::string> stages_;
};

struct ExperimentInfo {
  std::string name;
  std::string summary;
  std::function<std::string(ExperimentContext&)> run;  // returns the path of the report
  std::vector<std::string> stages = {};  // sub-folder per stage; none when the runs sit at the top
  // The claims it tests are data: the `claims:` block of its config (judge_claims).
  // sweep.stages may run some of the stages: they are independent of each other (synthetic), or
  // the experiment checks that a chosen stage's inputs are chosen too (huang2020: pretrain).
  bool stages_selectable = false;
};

// Whether the config's sweep.stages chooses `stage`: listed there, or the list is empty.
bool stage_chosen(const Config& cfg, const std::string& stage);

// Every named experiment, in a fixed order.
const std::vector<ExperimentInfo>& experiment_list();

// Runs one experiment end to end; returns the report path. Throws ConfigError for an unknown
// name or scale (listing the known ones).
std::string reproduce(const ReproduceOptions& opts);

// The stage that fine-tunes a classifier (huang2020, tisa2021) is named after its task, the task
// registry's task with a classifier head: its sub-folder, and its config <scale>-<task>.yaml.
std::string classification_stage();

// The run folders of a sweep's statuses.
std::vector<std::string> run_dirs(const std::vector<SweepRunStatus>& runs);

}  // namespace relpos
