// DIR/analysis.h5: the invariance metrics of a run, next to run.h5 (never inside it: a training
// run may still hold run.h5 open for writing). Layout (docs/analysis.md):
//
//   /                 attributes: format "relpos-analysis", version 1, source, metric, created
//   /matrices/<col>   one row per measured matrix: step, source, variant, layer, head, region
//                     (strings "full"/"lower"), invariance, symmetry, monotonicity_left,
//                     monotonicity_right
//   /profiles/step_<N>/{row, offsets, values}   g(r) of every matrix of that snapshot: row
//                     indexes /matrices, values (rows, offsets) NaN where r does not exist
//   /summary/step, /summary/metric, /summary/<quantity>   per snapshot
//   /correlation/{quantity, n, pearson, spearman}          against the validation metric
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/snapshot.h"

namespace relpos::analysis {

struct Correlation {
  std::string quantity;
  int64_t n = 0;
  double pearson = 0.0, spearman = 0.0;  // NaN when undefined
};

class AnalysisFileWriter {
 public:
  // Creates (truncates) `path`.
  AnalysisFileWriter(const std::string& path, const std::map<std::string, std::string>& attrs);
  ~AnalysisFileWriter();
  AnalysisFileWriter(const AnalysisFileWriter&) = delete;
  AnalysisFileWriter& operator=(const AnalysisFileWriter&) = delete;

  // The rows of one snapshot, with their profiles.
  void add_snapshot(int64_t step, const std::vector<MatrixRow>& rows);
  // Writes /matrices, /summary and /correlation, and closes the file.
  void finish(const std::vector<int64_t>& steps, const std::vector<double>& metric,
              const std::map<std::string, std::vector<double>>& summary,
              const std::vector<Correlation>& correlations);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace relpos::analysis
