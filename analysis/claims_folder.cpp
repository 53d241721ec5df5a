#include "analysis/claims_folder.h"

#include <algorithm>
#include <filesystem>

#include "analysis/claims.h"
#include "analysis/claims_report.h"
#include "analysis/run_records.h"
#include "core/util/errors.h"

namespace relpos::analysis {
namespace fs = std::filesystem;

std::map<std::string, std::string> claim_placeholders(const Config& cfg) {
  const TaskConfig& t = cfg.task;
  const auto& lengths = cfg.eval.lengths;
  const int64_t longest =
      lengths.empty() ? 4 * t.seq_len : *std::max_element(lengths.begin(), lengths.end());
  return {{"T", std::to_string(t.seq_len)},
          {"longest", std::to_string(longest)},
          {"N", std::to_string(t.max_len)}};
}

std::string folder_claims_path(const std::string& dir) {
  return (fs::path(dir) / "claims.yaml").string();
}

void adopt_claims_file(const std::string& dir, const std::string& file) {
  const Config cfg = load_config({file}).config;
  if (cfg.claims.empty())
    throw ConfigError(file + ": claims: the file declares no claims",
                      "write a `claims:` list (docs/analysis.md, \"Claims of your own sweep\")");
  if (fs::absolute(file).lexically_normal() == fs::absolute(folder_claims_path(dir)).lexically_normal())
    return;
  fs::copy_file(file, folder_claims_path(dir), fs::copy_options::overwrite_existing);
}

size_t judge_folder_claims(const std::string& dir, const ExperimentResult& result) {
  const std::string file = folder_claims_path(dir);
  if (!fs::exists(file)) return 0;
  const Config cfg = load_config({file}).config;
  if (cfg.claims.empty()) return 0;
  std::vector<ClaimConfig> claims;
  for (const auto& c : cfg.claims) claims.push_back(expand_placeholders(c, claim_placeholders(cfg)));
  const auto judged = judge(claims, run_records(result.runs), fs::path(dir).filename().string(),
                            cfg.provenance);
  write_claims(dir, fs::path(dir).filename().string(), judged);
  return judged.size();
}

}  // namespace relpos::analysis
