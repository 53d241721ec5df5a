// Per-run numbers of an analysed experiment folder, as records for claims (claims.h) and
// tables: one RunRecord per run (group, seed) with
//
//   valid_<m>, test_<m>           the last logged value of each validation/test metric
//   params                        positional parameters
//   inv_first:<q>, inv_last:<q>   invariance quantity q (snapshot.h: "gram:learned",
//                                 "attention", ...) at the first and the last snapshot
//   <column>@<length>             each /eval/extrapolation column at each length (NaN where
//                                 not applicable)
//
// and one record more per further evaluation table of a run (/eval/extrapolation_clamped),
// in the group "<group> (clamped)" with that table's <column>@<length>.
#pragma once

#include <string>
#include <vector>

#include "analysis/run_analysis.h"
#include "analysis/tables.h"

namespace relpos::analysis {

std::vector<RunRecord> run_records(const std::vector<RunResult>& runs);

// Sets `name` = value(`to`) − value(`from`) in every record that has both keys (finite), e.g.
// the change of the loss from the training length to the longest: "loss@512" − "loss@64".
void add_difference(std::vector<RunRecord>& records, const std::string& name,
                    const std::string& to, const std::string& from);

}  // namespace relpos::analysis
