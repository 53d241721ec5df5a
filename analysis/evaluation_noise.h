// The evaluation set's sampling variance of a run's metrics: what a run's number would vary by
// if it were scored on another sample of the same size from the same data, computed from what
// the run records beside each metric (core/util/sampling_stats.h):
//
//   accuracy, em, seq_accuracy   a proportion p over n items: p (1 − p) / n (em in %: × 100²)
//   loss                         per-item sd s over n items: s² / n
//   ppl = exp(loss)              delta method: ppl² s² / n
//   f1 (span QA, in %)           per-example sd of F1 over n examples: sd² / n
//
// The classifier's F1 and MCC have no such variance here (they are not means over items).
#pragma once

#include <map>
#include <string>

#include "analysis/run_analysis.h"

namespace relpos::analysis {

// From a run's logged metrics (last values): "valid_accuracy" -> variance, ...
std::map<std::string, double> evaluation_variances(const std::map<std::string, Series>& metrics);

// From an evaluation table: "accuracy@64" -> variance, "loss_sliding@512" -> ...
std::map<std::string, double> evaluation_variances(const EvalTable& t);

}  // namespace relpos::analysis
