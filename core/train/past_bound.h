// Evaluations past a length bound: an encoding whose table bounds the sequence length names, in
// the registry, the evaluation setting that runs past it (VariantInfo::eval_keys with a value:
// `learned` with position.learned.beyond=clamp reuses its last row) and the word for the rows
// evaluated so (VariantInfo::past_label: "clamped"). `relpos eval` evaluates a run a second time
// with each such setting the run was not trained with, into its own table
// (/eval/extrapolation_<label>, read by the analysis as the row "learned (clamped)"); the
// extrapolation experiment groups its runs by setting the same way.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace relpos {

struct PastBoundEvaluation {
  std::string setting;  // "position.learned.beyond=clamp"
  std::string label;    // the table's suffix and the rows' word: past_label, else the value
};

// The evaluations of the run in `dir` (read from its config.yaml): one per encoding of its
// position.type with an eval key whose past-the-bound value the config does not already hold.
// A config.yaml that cannot be read gives none.
std::vector<PastBoundEvaluation> past_bound_settings(const std::string& dir);

// The runs of `dirs` grouped by those settings: setting -> (label, run folders in order).
std::map<std::string, std::pair<std::string, std::vector<std::string>>> past_bound_evaluations(
    const std::vector<std::string>& dirs);

}  // namespace relpos
