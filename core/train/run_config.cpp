// The config of a run folder (for --resume, evaluation, analysis).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "core/io/run_paths.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"

namespace relpos {
namespace fs = std::filesystem;

LoadedConfig load_run_config(const std::string& dir, const std::vector<std::string>& overrides) {
  const std::string path = run_config_path(dir);
  if (!fs::exists(path))
    throw ConfigError(fmt::format("{}: no config.yaml: not a relpos run folder", dir),
                      "give the folder that `relpos train --out` wrote");
  LoadedConfig loaded = load_config({path}, overrides);
  // A run's config.yaml is the resolved config: every section is written. One that lacks them
  // (emptied, truncated, hand-edited) would silently give defaults for the model, and the
  // checkpoint would then be blamed for not matching it.
  const YAML::Node root = YAML::LoadFile(path);
  std::vector<std::string> missing;
  for (const char* section : {"model", "position", "data", "task", "train"})
    if (!root.IsMap() || !root[section]) missing.emplace_back(section);
  if (!missing.empty())
    throw ConfigError(fmt::format("{}: not a run's resolved config: no {} section{} (relpos train "
                                  "writes every key)",
                                  path, fmt::join(missing, ", "), missing.size() > 1 ? "s" : ""),
                      "the file was emptied or cut short; restore it, or train the run again");
  return loaded;
}

LoadedConfig resume_run_config(const std::string& dir, const std::vector<std::string>& configs,
                               const std::vector<std::string>& sets) {
  LoadedConfig stored = load_run_config(dir, sets);
  if (configs.empty()) return stored;
  const LoadedConfig given = load_config(configs, sets);
  const std::vector<std::string> diff =
      config_differences(to_yaml(stored.config), to_yaml(given.config));
  if (diff.empty()) return stored;
  std::string list;
  for (const auto& d : diff) list += "\n  " + d;
  throw ConfigError(
      fmt::format("train: --resume {}: --config {} gives another config than the run's {} "
                  "(the run's -> --config's):{}",
                  dir, fmt::join(configs, " --config "), run_config_path(dir), list),
      "drop --config to continue with the run's own config (--set still applies, e.g. --set "
      "train.steps=2000), or add the --set options the run was started with");
}

}  // namespace relpos
