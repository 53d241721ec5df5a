// Claims for everyone (docs/analysis.md, "Claims of your own sweep"): a sweep whose config has a
// `claims:` block keeps it in its folder as claims.yaml (`relpos sweep` writes it; `relpos
// analyze --claims FILE` or `relpos report --claims FILE` puts another there), and `relpos
// analyze` judges it on the folder's runs like a named experiment's: DIR/claims.md (which the
// report ends with) and DIR/claims.json.
#pragma once

#include <map>
#include <string>

#include "analysis/experiment.h"
#include "core/config/config.h"

namespace relpos::analysis {

// The values of the placeholders claims may use: {T} (task.seq_len), {longest} (the longest
// eval.lengths, else 4T) and {N} (task.max_len).
std::map<std::string, std::string> claim_placeholders(const Config& cfg);

// DIR/claims.yaml, the file a folder's claims are read from.
std::string folder_claims_path(const std::string& dir);

// Checks `file` (a config whose `claims:` block is judged; ConfigError naming its line when it
// does not load or declares none) and copies it to DIR/claims.yaml.
void adopt_claims_file(const std::string& dir, const std::string& file);

// Judges the claims of DIR/claims.yaml (when it exists and declares any) on the analysed runs of
// the folder, writing DIR/claims.md and DIR/claims.json; returns the number of claims judged.
// The file is read as a config (load_config): errors name its lines.
size_t judge_folder_claims(const std::string& dir, const ExperimentResult& result);

}  // namespace relpos::analysis
