// The length-extrapolation tables and figure of an experiment folder, from each run's
// /eval/extrapolation (and further tables such as /eval/extrapolation_clamped, each a row of its
// own: "learned (clamped)"):
//
//   tables/extrapolation_<metric>.*   one row per variant, one column per evaluation length,
//                                     mean ± 95% interval over seeds; the metric's unit in the
//                                     title; under it the scored tokens or examples per length
//                                     and the sampling error of one run's value at one length
//   extrapolation_bits_per_<byte|token>[_sliding]  each LM loss again in bits
//   figures/extrapolation_<metric>.*  figure 5: the means as lines, every run as a small point
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/run_analysis.h"

namespace relpos::analysis {

// fo: the figure size and the report's palette (each variant's colour in every figure).
void extrapolation_outputs(const std::vector<RunResult>& runs, const std::filesystem::path& tables,
                           const std::filesystem::path& figures, bool draw,
                           std::vector<FigureInfo>& figs, const FigureOptions& fo = {});

// The sentence under a table on the sampling error of one run's `metric` at one length, from
// the evaluation's count (scored tokens or examples) and, for a loss, the per-token standard
// deviation: a Wilson interval for accuracies, a normal interval for a mean loss (and what it
// means for perplexity and bits). Empty when the metric has no such interval.
std::string sampling_error_note(const std::string& metric, const std::string& task,
                                const std::string& tokenizer, double value, double count,
                                double sd, double length, const std::string& what);

}  // namespace relpos::analysis
