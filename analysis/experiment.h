// Analysis of an experiment folder: every run (run_analysis.h), then the tables and figures
// across runs, grouped by RunInfo::group (the position types unless grouped otherwise):
//
//   tables/results.*             one row per group: final value of every valid_*/test_* metric
//                                (mean ± std over runs), final invariance (attention head
//                                average, P·Pᵀ, position scores), positional parameters,
//                                training time
//   tables/final_invariance.*    one row per run: final metric and final invariance, and
//                                tables/final_invariance_correlation.* across runs
//   tables/extrapolation_<m>.*   metric m per evaluation length, one row per group
//   figures/extrapolation_<m>.*  figure 5
//   figures/final_invariance_vs_metric.*  one point per run
#pragma once

#include <string>
#include <vector>

#include "analysis/run_analysis.h"

namespace relpos::analysis {

struct ExperimentResult {
  std::vector<RunResult> runs;
  std::string metric;  // the validation metric most runs use
  std::vector<FigureInfo> figures;
  std::vector<std::string> warnings;  // experiment_warnings (run_checks.h) of an experiment folder
};

// The notes (variant -> note, AnalyzeOptions::encoder_notes) on the variants that the encoder
// (bidirectional) runs of `runs` use, e.g. alibi's symmetry, each once, as sentences (" In an
// encoder alibi ... ."); "" when none applies. Appended to the note of the results table.
std::string encoder_notes(const std::vector<RunResult>& runs,
                          const std::map<std::string, std::string>& notes);

// One line style per variant for every figure of a report on `runs`: their groups and the rows
// of their further evaluations ("learned (clamped)").
VariantPalette report_palette(const std::vector<RunInfo>& runs);

// Analyses every run into its own folder (RunInfo::dir), then writes the cross-run tables and
// figures into dir/tables and dir/figures.
ExperimentResult analyze_experiment(const std::vector<const RunSource*>& runs,
                                    const std::string& dir, const AnalyzeOptions& o);

// The cross-run part alone, from finished run results.
ExperimentResult summarize_experiment(std::vector<RunResult> runs, const std::string& dir,
                                      const AnalyzeOptions& o);

}  // namespace relpos::analysis
