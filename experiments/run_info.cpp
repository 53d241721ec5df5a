#include "experiments/run_info.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/config/config.h"
#include "core/position/position_encoding.h"
#include "core/train/trainer.h"

namespace relpos {
namespace fs = std::filesystem;

RunSummary read_run_summary(const std::string& dir) {
  RunSummary s;
  s.dir = dir;
  try {
    const Config cfg = load_run_config(dir).config;
    s.position_types = join_names(cfg.position.types, "+");
    s.seed = cfg.seed;
    s.task = cfg.task.type;
    s.tokenizer = cfg.data.tokenizer;
    int64_t n = 0;
    for (const auto& t : cfg.position.types)
      n += make_position_encoding(t, model_dims(cfg.model), cfg.position)->parameter_count();
    s.position_params = n;
  } catch (const std::exception&) {
  }
  std::ifstream in(run_result_path(dir));
  if (in) {
    try {
      nlohmann::json j;
      in >> j;
      s.finished = true;
      if (j.contains("train_seconds")) s.train_seconds = j["train_seconds"].get<double>();
      if (j.contains("valid"))
        for (auto& [k, v] : j["valid"].items())
          if (v.is_number()) s.valid[k] = v.get<double>();
    } catch (const std::exception&) {
    }
  }
  std::ifstream csv(fs::path(dir) / "eval_extrapolation.csv");
  std::string header;
  if (csv && std::getline(csv, header)) {
    std::vector<std::string> cols;
    std::stringstream hs(header);
    for (std::string c; std::getline(hs, c, ',');) cols.push_back(c);
    for (std::string line; std::getline(csv, line);) {
      std::vector<std::string> cells;
      std::stringstream ls(line);
      for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
      if (cells.size() < 2) continue;
      const int64_t length = std::stoll(cells[0]);
      for (size_t i = 2; i < cols.size() && i < cells.size(); ++i)
        if (!cells[i].empty()) s.extrapolation[cols[i]][length] = std::stod(cells[i]);
    }
  }
  return s;
}

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
    } catch (const std::exception&) {
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
