// The Claims section of a named experiment's report, its machine-readable record, and the index
// of every experiment's claims (results/CLAIMS.md).
//
//   DIR/claims.md    the section's Markdown (the report ends with it)
//   DIR/claims.json  {"experiment", "claims": [{id, quote, source, metric, result, verdict},
//                    ...]}, read back by write_claims_index
//   ROOT/CLAIMS.md   one row per claim of every ROOT/<name>/ whose report.md and claims.json
//                    exist, linking each report
// Beside tables/, not in it: `relpos analyze` rewrites tables/ whole, and the claims belong to
// the experiment (`relpos reproduce`), not to one analysis.
#pragma once

#include <string>
#include <vector>

#include "analysis/claims.h"

namespace relpos::analysis {

// "## Claims" with a summary table (one row per claim), a table of every comparison (n, effect
// a − b with its 95% interval, Cohen's d_z, paired t p and exact sign-flip p, verdict) and the
// verdict rule in words.
std::string claims_markdown(const std::vector<ClaimResult>& claims);

// One line per comparison: "huang_m4 − shaw: +3.05 [−8.7, 14.8], n = 3".
std::string claim_summary(const ClaimResult& c);

// Writes DIR/claims.md and DIR/claims.json; returns the Markdown.
std::string write_claims(const std::string& dir, const std::string& experiment,
                         const std::vector<ClaimResult>& claims);

// Rewrites ROOT/CLAIMS.md from the claims.json of ROOT's sub-folders that have a report.md;
// returns its path, or "" (and writes nothing) when no sub-folder has claims.
std::string write_claims_index(const std::string& root);

}  // namespace relpos::analysis
