#include "core/io/run_paths.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace relpos {
namespace fs = std::filesystem;

std::string run_config_path(const std::string& dir) { return (fs::path(dir) / "config.yaml").string(); }
std::string run_checkpoint_path(const std::string& dir) { return (fs::path(dir) / "checkpoint.pt").string(); }
std::string run_h5_path(const std::string& dir) { return (fs::path(dir) / "run.h5").string(); }
std::string run_result_path(const std::string& dir) { return (fs::path(dir) / "result.json").string(); }
std::string run_metrics_path(const std::string& dir) { return (fs::path(dir) / "metrics.jsonl").string(); }
std::string run_split_path(const std::string& dir) { return (fs::path(dir) / "split.json").string(); }
std::string run_analysis_events_dir(const std::string& dir) {
  return (fs::path(dir) / "analysis").string();
}
std::string run_tokenizer_path(const std::string& dir) {
  return (fs::path(dir) / "tokenizer.model").string();
}
std::string run_vocab_path(const std::string& dir) { return (fs::path(dir) / "vocab.txt").string(); }

// result.json alone is not enough: committed results (results/<name>/) keep result.json but not
// run.h5, and a sweep over such a folder must train again rather than skip to an analysis that
// has nothing to read.
bool run_finished(const std::string& dir) {
  if (!fs::exists(run_result_path(dir)) || !fs::exists(run_h5_path(dir))) return false;
  // result.json is written last, atomically; one that does not hold the run's step count was
  // emptied or damaged since, and does not make an unfinished run finished.
  std::ifstream in(run_result_path(dir));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("steps") && j["steps"].is_number_integer();
}

}  // namespace relpos
