#include "core/train/tensorboard_log.h"

#include <cmath>
#include <filesystem>

#include "core/io/run_paths.h"

namespace relpos {

namespace {

// "valid_ppl" -> {"valid", "ppl"}; "lr" -> {"train", "lr"}.
std::pair<std::string, std::string> tensorboard_split_name(const std::string& metric) {
  for (const char* prefix : {"train_", "valid_"}) {
    const std::string p(prefix);
    if (metric.size() > p.size() && metric.compare(0, p.size(), p) == 0)
      return {p.substr(0, p.size() - 1), metric.substr(p.size())};
  }
  return {"train", metric};
}

}  // namespace

std::vector<std::pair<std::string, float>> tensorboard_scalars(
    const std::map<std::string, double>& values) {
  std::vector<std::pair<std::string, float>> out;
  for (const auto& [metric, v] : values) {
    if (!std::isfinite(v)) continue;
    const auto [group, name] = tensorboard_split_name(metric);
    const std::string tag = group + "/" + name;
    if (name.compare(0, 4, "loss") == 0) {
      out.emplace_back(tag + "_nats", static_cast<float>(v));
      out.emplace_back(tag + "_bits", static_cast<float>(v / std::log(2.0)));
    } else {
      out.emplace_back(tag, static_cast<float>(v));
    }
  }
  return out;
}

TensorBoardLog::TensorBoardLog(const std::string& dir, int64_t first_step) : file_(dir, "relpos") {
  file_.write(session_start_event(unix_time_now(), first_step));
}

void TensorBoardLog::log(int64_t step, const std::map<std::string, double>& values) {
  const auto scalars = tensorboard_scalars(values);
  if (!scalars.empty()) file_.write(scalars_event(unix_time_now(), step, scalars));
}

void remove_run_event_files(const std::string& dir) {
  std::error_code ec;
  for (const auto& f : event_files(dir)) std::filesystem::remove(f, ec);
  for (const auto& f : event_files(run_analysis_events_dir(dir))) std::filesystem::remove(f, ec);
}

}  // namespace relpos
