#include "core/io/run_paths.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <algorithm>

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
bool is_run_folder(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(run_h5_path(dir), ec);
}

std::vector<std::string> run_folders_below(const std::string& root) {
  if (is_run_folder(root)) return {root};
  std::vector<std::string> runs;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_directory(ec) || !is_run_folder(it->path().string())) continue;
    runs.push_back(it->path().string());
    it.disable_recursion_pending();  // a run folder holds no runs
  }
  std::sort(runs.begin(), runs.end());
  return runs;
}

bool run_finished(const std::string& dir) {
  if (!fs::exists(run_result_path(dir)) || !fs::exists(run_h5_path(dir))) return false;
  // result.json is written last, atomically; one that does not hold the run's step count was
  // emptied or damaged since, and does not make an unfinished run finished.
  std::ifstream in(run_result_path(dir));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("steps") && j["steps"].is_number_integer();
}

}  // namespace relpos
