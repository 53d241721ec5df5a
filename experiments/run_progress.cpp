#include "experiments/run_progress.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"

namespace relpos {
namespace fs = std::filesystem;

std::string run_progress(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "metrics.jsonl");
  std::string line, last;
  while (std::getline(in, line))  // step records only: a launcher's restart event has no step
    if (!line.empty() && line.find("\"step\"") != std::string::npos) last = line;
  if (last.empty()) return "";
  try {
    const auto j = nlohmann::json::parse(last);
    const int64_t step = j.value("step", int64_t{0});
    int64_t total = 0;
    try {
      total = load_run_config(dir).config.train.steps;
    } catch (const Error&) {
      // A display only: a config being written or broken leaves the total out of the line (the
      // run itself reports the error).
    }
    std::string s = total > 0 ? fmt::format("step {}/{} ({:.0f}%)", step, total, 100.0 * step / total)
                              : fmt::format("step {}", step);
    if (j.contains("train_loss")) s += fmt::format(" loss {:.3f}", j["train_loss"].get<double>());
    if (j.contains("tokens_per_s"))
      s += fmt::format(" {:.1f}k tok/s", j["tokens_per_s"].get<double>() / 1000.0);
    return s;
  } catch (const std::exception&) {
    return "";  // a line being written right now
  }
}

}  // namespace relpos
