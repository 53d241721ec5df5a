// Per-run records of an experiment's stages, read through the analysis layer (run.h5 and
// result.json, analysis::run_records): the one way experiments read their runs.
#pragma once

#include <string>
#include <vector>

#include "analysis/experiment.h"
#include "analysis/tables.h"
#include "core/config/config.h"

namespace relpos {

// analysis::run_records of an analysed stage, each record in `stage`.
std::vector<analysis::RunRecord> stage_records(const analysis::ExperimentResult& result,
                                               const std::string& stage);

// Copies `keys` of each record of `from` into the record of `to` with the same group and seed,
// as prefix + key (a row of Table 1 gathers a variant's numbers from every stage).
void merge_by_run(std::vector<analysis::RunRecord>& to, const std::vector<analysis::RunRecord>& from,
                  const std::string& prefix, const std::vector<std::string>& keys);

// Sets "untrained_rows" in each fine-tuning record: the rows of a length-bound position table
// (the registry's length_key, learned's max_len) that the fine-tuning runs read (up to its
// task.seq_len) but its pre-training run (same group and seed in `pre`) never trained (past its
// task.seq_len). The claims engine reads it (gate c).
void mark_untrained_rows(std::vector<analysis::RunRecord>& records,
                         const analysis::ExperimentResult& finetune,
                         const analysis::ExperimentResult& pre);

// For every claim of `claims` judged at the source's model size (paper_size overrides), the
// positional parameter count of each record's group at that size, as "params@paper": the
// experiment's config with the overrides, counted by the position registry.
void add_paper_size_params(std::vector<analysis::RunRecord>& records,
                           const std::vector<ClaimConfig>& claims, const std::string& config_file,
                           const std::vector<std::string>& sets);

}  // namespace relpos
