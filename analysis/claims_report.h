// The Claims section of an experiment's (or sweep's) report, its machine-readable record, and
// the index of every experiment's claims (results/CLAIMS.md).
//
//   DIR/claims.md    the section's Markdown (the report ends with it)
//   DIR/claims.json  {"experiment", "alpha", "claims": [...]}: every claim's config and every
//                    comparison's numbers, enough for write_claims_index to decide them again
//                    over a larger family
//   ROOT/CLAIMS.md   every claim of every ROOT/<name>/ with a report.md and a claims.json,
//                    decided again as one family (Holm over all their comparisons): testable
//                    verdicts first, then those not testable here with what testing them takes
// Beside tables/, not in it: `relpos analyze` rewrites tables/ whole.
#pragma once

#include <string>
#include <vector>

#include "analysis/claims.h"
#include "core/util/errors.h"

namespace relpos::analysis {

// "## Claims": a summary table (one row per claim), every comparison in full, the claims not
// testable here with their reason and what testing them would take, the configuration changes
// made after a result was seen, and the verdict rule in words.
std::string claims_markdown(const std::vector<ClaimResult>& claims, const std::string& family_note);

// One line per comparison: "huang_m4 vs shaw: +3.05 [−8.7, 14.8], n = 5".
std::string claim_summary(const ClaimResult& c);

// Writes DIR/claims.md and DIR/claims.json; returns the Markdown.
std::string write_claims(const std::string& dir, const std::string& experiment,
                         const std::vector<ClaimResult>& claims);

// claims.json's text.
std::string claims_json_text(const std::string& experiment, const std::vector<ClaimResult>& claims);
// claims.json's "format": 2 since the verdict rules (claims with their configs and numbers).
constexpr int kClaimsRecordFormat = 2;

// A claims.json of an earlier relpos: verdicts without the claim configs and numbers the rules
// decide from.
class EarlierClaimsRecord : public SchemaError {
 public:
  using SchemaError::SchemaError;
};

// Reads DIR/claims.json back (SchemaError naming the file when it is not one;
// EarlierClaimsRecord for a record of an earlier relpos).
std::vector<ClaimResult> read_claims(const std::string& path);

// Rewrites ROOT/CLAIMS.md from the claims.json of ROOT's sub-folders that have a report.md;
// returns its path, or "" (and writes nothing) when no sub-folder has claims. An experiment
// whose claims.json an earlier relpos wrote is listed as not judged at this revision, with the
// command that judges it, and its claims stay out of the family.
std::string write_claims_index(const std::string& root);

}  // namespace relpos::analysis
