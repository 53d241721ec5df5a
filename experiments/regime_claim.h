// The regime check every experiment that compares encodings declares (DESIGN §6, "Regime
// first"): a comparison of encodings means something only where the baselines use position at
// all, so `learned` and `sinusoidal` must beat `none` on the experiment's primary metric. An
// arm the experiment does not train is left out (and named); none left: inconclusive.
#pragma once

#include <string>

#include "analysis/claims.h"
#include "core/config/config.h"

namespace relpos {

// metric_key: the records' key of the primary metric ("valid_accuracy", "mlm_accuracy");
// metric: it in words, with unit and split. id_prefix names the claim ("huang2020-regime").
analysis::Claim regime_claim(const std::string& id_prefix, const std::string& metric_key,
                             const std::string& metric, bool higher_is_better = true);

// The task's primary metric (core/train/objective.h: primary_metric) of a config: the records'
// key `prefix` + "valid_<name>", its words with unit, and its direction.
struct PrimaryMetricKey {
  std::string key, words;
  bool higher_is_better = true;
};
PrimaryMetricKey primary_metric_key(const Config& cfg, const std::string& prefix = "");

// regime_claim on the config's primary metric.
analysis::Claim regime_claim(const std::string& id_prefix, const Config& cfg,
                             const std::string& prefix = "");

}  // namespace relpos
