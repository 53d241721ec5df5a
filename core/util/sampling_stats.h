// Evaluation metrics come with what sets their sampling error over the evaluation set
// (core/train/objective.h, MetricAccumulator::result): the number of items scored and the
// per-item spread. They are logged beside the metrics (valid_items, valid_loss_sd, ...) so that
// analysis can put the evaluation noise into intervals (analysis/evaluation_noise.h), but they
// are not results: tables and summaries leave them out.
#pragma once

#include <string>

namespace relpos {

// "items", "loss_sd", "f1_sd", "seq_items", "seq_items@16", with or without a "valid_" or
// "test_" prefix.
inline bool is_sampling_statistic(const std::string& metric) {
  std::string m = metric;
  for (const char* prefix : {"valid_", "test_"})
    if (m.rfind(prefix, 0) == 0) m = m.substr(std::string(prefix).size());
  const auto ends_with = [&](const std::string& suffix) {
    return m.size() >= suffix.size() && m.compare(m.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return m == "items" || m == "seq_items" || m.rfind("seq_items@", 0) == 0 || ends_with("_sd");
}

}  // namespace relpos
