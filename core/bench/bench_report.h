// The table `relpos bench` prints and the JSON document it writes.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/bench/bench.h"

namespace relpos {

// Main table (one row per configuration, ratios to none), then fast-vs-direct, then growth fits.
std::string bench_table(const std::vector<CaseSummary>& cases, const std::vector<GrowthFit>& fits);

// `header` (command, machine, options, ...) with "cases" and "fits" added.
nlohmann::ordered_json bench_json(nlohmann::ordered_json header,
                                  const std::vector<CaseSummary>& cases,
                                  const std::vector<GrowthFit>& fits);

// Facts about this machine and build for the report: CPU model, CPU counts, LibTorch version,
// BLAS library, date (UTC).
nlohmann::ordered_json machine_info();

}  // namespace relpos
