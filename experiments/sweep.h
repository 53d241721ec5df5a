// Sweeps: a grid over config keys, one run folder per point, run by child `relpos train`
// processes in parallel. Every point shares the data split and probe set (they depend on
// data.split_seed, not on the point). Finished points are skipped and unfinished ones resumed,
// so an interrupted sweep continues where it stopped when the same command is run again.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace relpos {

// One axis of a grid: "position.type=none,shaw,rope" -> key and values.
struct GridAxis {
  std::string key;
  std::vector<std::string> values;
  std::string spec;                    // the text it was parsed from
  std::string option = "--grid";       // where it was given, for messages (or "sweep.grid")
};
GridAxis parse_grid_axis(const std::string& spec);

struct SweepPoint {
  std::string name;                     // run folder name, e.g. "shaw-seed1"
  std::vector<std::string> overrides;   // "key=value" for each axis
};

// The cartesian product of the axes, in order (the last axis varies fastest).
std::vector<SweepPoint> expand_grid(const std::vector<GridAxis>& axes);

struct SweepOptions {
  std::vector<std::string> configs;   // --config files for every point
  std::vector<std::string> sets;      // --set overrides for every point (before the grid's)
  std::vector<GridAxis> grid;
  std::string out_dir;
  int64_t jobs = 1;                   // runs at once
  int64_t threads = 0;                // intra-op threads per run; 0: sweep_run_threads()
  std::string relpos_binary;          // the executable to run (default: this process's own)
  // --init-from for every point; "{point}" -> the point's name, "{seed}" -> its seed axis value
  std::string init_from;
  bool quiet = false;
};

struct SweepRunStatus {
  SweepPoint point;
  std::string dir;
  bool finished = false;   // result.json present
  bool skipped = false;    // was finished before this sweep started
  int exit_code = 0;
  double seconds = 0;
};

// The message of an interrupted sweep: how many runs finished, and only the groups that hold
// runs, each with its names: stopped at a checkpoint (exit 128 + SIGTERM or SIGINT, with a
// checkpoint.pt: they resume), stopped before a first checkpoint (they start over), failed
// (any other exit status), not started yet. "sweep interrupted by SIGINT: 1 of 4 runs finished,
// 2 stopped at a checkpoint (a, b), 1 not started yet; in DIR".
std::string sweep_interrupt_summary(const std::vector<SweepRunStatus>& runs,
                                    const std::string& signal_name, const std::string& out_dir);

// Creates the output folder `dir` (and its parents) of a sweep or experiment; `what` names it in
// messages ("sweep folder"). Throws RunError: "DIR: exists and is not a folder", or
// "DIR: cannot create the sweep folder: <OS reason>".
void create_output_folder(const std::string& dir, const std::string& what);

// The intra-op threads the sweep gives one run: o.threads when it is set (--threads), else the
// point's config's `threads` when it is a count (config_threads > 0), else automatic for a run
// that shares this process's CPUs with o.jobs - 1 others (automatic_threads_shared: the
// automatic count for one job; the physical cores split between the jobs, at least 1 each).
int64_t sweep_run_threads(const SweepOptions& o, int64_t config_threads);

// Runs every point; returns their status. Throws RunError when a run failed or the sweep
// was interrupted (after the children have saved their checkpoints).
std::vector<SweepRunStatus> run_sweep(const SweepOptions& opts);

// When the sweep's config declares claims, keeps it as DIR/claims.yaml (creating DIR), which
// `relpos analyze DIR` judges on the runs (analysis/claims_folder.h). `configs`/`sets`: the
// sweep's --config files and --set overrides.
void keep_sweep_claims(const std::string& out_dir, const std::vector<std::string>& configs,
                       const std::vector<std::string>& sets);

// Writes DIR/summary.csv and DIR/summary.md: one row per point with its overrides, final
// validation metrics (from each run's result.json), positional parameter count and time.
void write_sweep_summary(const std::string& out_dir, const std::vector<SweepRunStatus>& runs);

// Every point's config, loaded and validated (the errors name the point's --grid axis), as its
// run stores it.
struct ResolvedPoint {
  std::string yaml;                 // to_yaml of the point's config
  std::vector<std::string> types;   // its position variants
  int64_t threads = 0;              // its `threads` (0: automatic)
};
std::vector<ResolvedPoint> resolve_points(const SweepOptions& o,
                                          const std::vector<SweepPoint>& points);

// --init-from of one point: SweepOptions::init_from with {point} and {seed} filled in.
std::string init_from_dir(const SweepOptions& o, const SweepPoint& p);

// A SLURM array job running the same `relpos train` commands, one array element per point
// (experiments/slurm_script.cpp).
std::string slurm_script(const SweepOptions& opts, const std::vector<SweepPoint>& points);

}  // namespace relpos
