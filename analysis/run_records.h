// Per-run numbers of an analysed experiment folder, as records for claims (claims.h) and
// tables: one RunRecord per run (group, seed, stage, settings) with
//
//   valid_<m>, test_<m>           the last logged value of each validation/test metric
//   params                        positional parameters
//   train_s                       training seconds of a finished run
//   inv_first:<q>, inv_last:<q>   invariance quantity q (snapshot.h: "gram:learned",
//                                 "attention", ...) at the first and the last snapshot
//   inv0:<q>                      q's untrained baseline (invariance_baseline.h)
//   invc_first:<q>, invc_last:<q> the baseline-corrected scores (I − I₀) / (1 − I₀)
//   <column>@<length>             each /eval/extrapolation column at each length (NaN where
//                                 not applicable)
//   var:<key>                     the evaluation set's sampling variance of a value, where the
//                                 run records what sets it (items scored, per-item spread:
//                                 analysis/evaluation_noise.h)
//
// and one record more per further evaluation table of a run (/eval/extrapolation_clamped),
// in the group "<group> (clamped)" with that table's <column>@<length>.
//
// settings: the config keys whose values differ between the runs given (other than
// position.type, seed and name), e.g. train.steps of a sweep over training lengths.
#pragma once

#include <string>
#include <vector>

#include "analysis/run_analysis.h"
#include "analysis/tables.h"

namespace relpos::analysis {

std::vector<RunRecord> run_records(const std::vector<RunResult>& runs, const std::string& stage = "");

// Sets `name` = value(`to`) − value(`from`) in every record that has both keys (finite), e.g.
// the change of the loss from the training length to the longest: "loss@512" − "loss@64"; and
// var:<name> = var:<to> + var:<from> where both are known.
void add_difference(std::vector<RunRecord>& records, const std::string& name,
                    const std::string& to, const std::string& from);

// The dotted keys of scalar config values that differ between the YAML texts, other than
// position.type, seed and name, with each text's value: key -> one value per text.
std::map<std::string, std::vector<std::string>> varied_settings(const std::vector<std::string>& yamls);

}  // namespace relpos::analysis
