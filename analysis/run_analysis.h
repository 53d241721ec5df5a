// Analysis of one run: the invariance metrics of every snapshot, their summary against training
// step next to the validation metric, figures 1–4, analysis.h5 and the CSV/Markdown tables.
// The run comes through RunSource (run_source.h reads run.h5; tests build one in memory).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/analysis_file.h"
#include "analysis/figures.h"
#include "analysis/invariance_baseline.h"
#include "analysis/snapshot.h"

namespace relpos::analysis {

// One evaluation table: a `length` column and metric columns (NaN: not applicable).
struct EvalTable {
  std::vector<double> length;
  std::vector<std::pair<std::string, std::vector<double>>> columns;
  // What sets the metrics' sampling error, per length: counts of scored items (`tokens`,
  // `tokens_sliding`, `examples`) and per-token spreads (`loss_sd`, `loss_sliding_sd`).
  std::vector<std::pair<std::string, std::vector<double>>> counts;
  std::map<std::string, std::string> attrs;
  bool empty() const { return length.empty(); }
};

// Everything about a run except its snapshots.
struct RunInfo {
  std::string dir;   // run folder
  std::string name;  // its folder name
  std::string config_yaml, position_types, git_commit, created, torch_version;
  std::string task;  // task.type of the config (a task registry name); empty unknown
  std::string tokenizer;  // data.tokenizer ("bytes": a loss per token is a loss per byte)
  int64_t seed = 0;
  bool causal = false;
  int64_t train_length = 0;             // task.seq_len; 0 unknown
  std::string figure_size;              // figures.size of the config; empty: not set
  int64_t positional_parameters = -1;   // -1 unknown
  double train_seconds = std::nan("");  // wall time of training (result.json); NaN unknown
  bool finished = true;                 // result.json exists: `relpos train` finished the run
  std::map<std::string, Series> metrics;
  std::vector<int64_t> snapshot_steps;  // sorted
  EvalTable extrapolation;
  // Further evaluations of the run by name suffix: /eval/extrapolation_clamped -> "clamped".
  std::map<std::string, EvalTable> extra_evaluations;
  std::string group;  // row label in cross-run tables; variant_group() unless grouped otherwise
};

// A run's row label without --group-by: its variant (position types), else its folder name.
inline std::string variant_group(const RunInfo& i) {
  return i.position_types.empty() ? i.name : i.position_types;
}

class RunSource {
 public:
  virtual ~RunSource() = default;
  virtual const RunInfo& info() const = 0;
  virtual SnapshotData snapshot(int64_t step) const = 0;
};

struct AnalyzeOptions {
  std::string metric;  // validation metric; empty: choose_metric()
  bool figures = true;
  int64_t figure_step = -1;  // snapshot drawn in figures 1–3; -1: the last
  int64_t radius = 50;       // figures of relative weights span r in [-radius, radius]
  ColourScale colour_scale;  // attention heatmaps: one scale per layer or per head, and its cap
  // screen | column | page (figures.size); empty: the runs' own figures.size (screen if unset).
  std::string figure_size;
  // Variant -> what a reader of a table of encoder runs must know about it (the position
  // registry's VariantInfo::encoder_note, which the caller passes down: analysis does not see
  // core/position). Printed under the results table when an encoder run uses the variant.
  std::map<std::string, std::string> encoder_notes;
};

struct RunResult {
  RunInfo info;
  std::string metric;                  // the validation metric used (empty: none)
  std::vector<int64_t> steps;          // snapshot steps
  std::vector<double> metric_at_step;  // the metric interpolated at each snapshot step
  std::map<std::string, std::vector<double>> invariance;  // quantity -> per snapshot (NaN: absent)
  // quantity -> its untrained baseline I₀ (invariance_baseline.h); absent when none is known
  std::map<std::string, InvarianceBaseline> baselines;
  std::vector<Correlation> correlations;  // each quantity against the metric over snapshots
  std::vector<FigureInfo> figures;
  double training_time_s = 0.0;  // NaN unknown
  double final_metric = 0.0;     // last value of the metric; NaN unknown
};

// `requested` when given (an error naming the available metrics when absent); else
// valid_<the task's primary metric> (as the trainer judges it: mlm/classify accuracy, clm ppl,
// span_qa f1, synthetic seq_accuracy) when logged; else the first of valid_accuracy, valid_f1,
// valid_em, valid_ppl, valid_loss present; else the first valid_* metric; else "".
std::string choose_metric(const std::map<std::string, Series>& metrics,
                          const std::string& requested, const std::string& task = "");
// Last value of the first of the metrics elapsed_s, train_time_s, time_s, wall_time_s present;
// else NaN. (RunInfo::train_seconds, from the run's result.json, takes precedence.)
double training_time(const std::map<std::string, Series>& metrics);

// The figure size preset: o.figure_size when given (a ConfigError naming --figure-size when it
// is not screen, column or page), else the run's figures.size, else screen.
FigurePreset figure_preset_of(const AnalyzeOptions& o, const RunInfo& run);

// Writes out_dir/analysis.h5, out_dir/tables/ and (with figures) out_dir/figures/.
RunResult analyze_run(const RunSource& src, const std::string& out_dir, const AnalyzeOptions& o);

}  // namespace relpos::analysis
