// A trained run loaded back: its config, its data (same split and tokenizer), and its model
// with the parameters of DIR/checkpoint.pt.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/data/task.h"
#include "core/model/model.h"

namespace relpos {

struct LoadedRun {
  std::string dir;  // the run folder
  LoadedConfig config;
  std::unique_ptr<TaskData> data;
  Model model{nullptr};
  torch::Device device = torch::kCPU;
};

// Throws ConfigError/SchemaError naming the folder or file when something is missing.
LoadedRun load_run(const std::string& dir, const std::vector<std::string>& overrides = {});

}  // namespace relpos
