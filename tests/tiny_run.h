// The tiny training run of the reliability tests (same model as tests/test_trainer.cpp, longer):
// its overrides, its command line for the relpos executable, an in-process reference run, and
// the metrics it logged.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/train/trainer.h"
#include "tests/helpers.h"

namespace relpos::test {

// A fresh folder under the system temp folder, removed at scope exit.
struct TempFolder {
  std::filesystem::path path;
  explicit TempFolder(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("relpos_rel_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string str(const std::string& sub = "") const { return (path / sub).string(); }
};

// `steps` steps of a 2-layer width-32 MLM on the byte-level trainer fixture; a checkpoint every
// 5 steps, a metrics line every step, a validation every 10, snapshots every 10 %.
inline std::vector<std::string> tiny_run(const std::string& cache, int64_t steps = 60) {
  return {"data.corpus=" + fixture_path("trainer/corpus.txt"),
          "data.cache_dir=" + cache,
          "data.tokenizer=bytes",
          "data.valid_fraction=0.2",
          "data.test_fraction=0.2",
          "task.type=mlm",
          "task.seq_len=32",
          "model.layers=2",
          "model.width=32",
          "model.heads=2",
          "model.ff_width=64",
          "position.type=learned+tisa",
          "position.learned.max_len=32",
          "train.steps=" + std::to_string(steps),
          "train.batch_size=4",
          "train.eval_every=10",
          "train.eval_batches=2",
          "train.log_every=1",
          "train.checkpoint_every=5",
          "snapshots.every_percent=10",
          "snapshots.probe_size=2",
          "threads=1"};
}

// `relpos train --config base.yaml --set ... --out DIR --quiet`.
inline std::vector<std::string> train_args(const std::vector<std::string>& sets,
                                           const std::string& out) {
  std::vector<std::string> a{"train", "--config", config_path("base.yaml"), "--out", out, "--quiet"};
  for (const auto& s : sets) a.insert(a.end(), {"--set", s});
  return a;
}

inline TrainResult train_here(const std::vector<std::string>& sets, const std::string& out,
                              int64_t stop_after = 0) {
  TrainOptions o;
  o.out_dir = out;
  o.quiet = true;
  o.stop_after = stop_after;
  return train(load_config({config_path("base.yaml")}, sets), o);
}

// One metric of every line of DIR/metrics.jsonl that has it, as (step, value); null -> NaN.
inline std::vector<std::pair<int64_t, double>> logged(const std::string& dir,
                                                      const std::string& name) {
  std::vector<std::pair<int64_t, double>> out;
  std::ifstream in(run_metrics_path(dir));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (!j.contains(name)) continue;
    out.emplace_back(j.at("step").get<int64_t>(),
                     j.at(name).is_null() ? std::nan("") : j.at(name).get<double>());
  }
  return out;
}

}  // namespace relpos::test

#include "core/io/checkpoint.h"
#include "core/model/model.h"
#include "core/train/optim.h"

namespace relpos::test {

// The train state and parameters of DIR/checkpoint.pt, for a run of the byte tokenizer.
struct SavedCheckpoint {
  TrainState state;
  std::map<std::string, torch::Tensor> parameters;
};
inline SavedCheckpoint load_saved(const std::string& dir) {
  const Config cfg = load_run_config(dir).config;
  Model model(cfg, 261);  // the bytes tokenizer's vocabulary
  auto opt = make_optimizer(*model, cfg.train);
  SavedCheckpoint out;
  out.state = load_checkpoint(run_checkpoint_path(dir), *model, *opt);
  for (const auto& p : model->named_parameters()) out.parameters[p.key()] = p.value().detach().clone();
  return out;
}

}  // namespace relpos::test
