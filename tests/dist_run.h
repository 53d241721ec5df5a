// The tiny data-parallel run of tests/test_dist.cpp and tests/test_elastic.cpp: its overrides
// (no dropout), its command line, a one-process reference run, and what a run folder logged.
#pragma once

#include <torch/types.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "core/io/run_file.h"
#include "core/train/trainer.h"
#include "tests/helpers.h"
#include "tests/tiny_run.h"

namespace relpos::test::dist {

// A tiny MLM run without dropout (dropout draws differ between one process and two ranks by
// design). With MLM the ranks hold different numbers of masked tokens, so plain averaging of
// the ranks' gradients would be wrong: the comparison checks the weighting too.
inline std::vector<std::string> tiny_sets(const std::string& cache) {
  auto sets = test::tiny_run(cache, 4);  // later --set values win
  sets.insert(sets.end(), {"model.layers=1", "model.dropout=0", "model.attention_dropout=0",
                           "train.eval_every=2", "train.eval_batches=1",
                           "train.checkpoint_every=2", "snapshots.every_percent=0"});
  return sets;
}

inline std::vector<std::string> train_args(const std::string& out, const std::string& cache) {
  std::vector<std::string> a{"train", "--quiet", "--out", out, "--config", test::config_path("base.yaml")};
  for (const auto& s : tiny_sets(cache)) a.insert(a.end(), {"--set", s});
  return a;
}

// The train_loss of every step line (a launcher's restart event lines have none).
inline std::vector<double> train_losses(const std::string& dir) {
  std::vector<double> out;
  std::ifstream in(run_metrics_path(dir));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("step")) out.push_back(j.at("train_loss").get<double>());
  }
  return out;
}

// Lines of metrics.jsonl so far (0 before it exists).
inline int64_t train_losses_if_any(const std::string& dir) {
  std::ifstream in(run_metrics_path(dir));
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

// The final weights of a run folder (run.h5 /weights), by parameter name.
inline std::map<std::string, torch::Tensor> final_weights(const std::string& dir) {
  auto f = RunFileReader::open(run_h5_path(dir));
  std::map<std::string, torch::Tensor> out;
  for (const auto& name : f->children("/weights")) out[name] = f->dataset("/weights/" + name).value;
  return out;
}

// Largest |a-b| over all parameters; both runs must hold the same parameter names.
inline double max_weight_difference(const std::string& a, const std::string& b) {
  const auto wa = final_weights(a), wb = final_weights(b);
  REQUIRE(wa.size() == wb.size());
  REQUIRE(!wa.empty());
  double worst = 0;
  for (const auto& [name, t] : wa) {
    REQUIRE_MESSAGE(wb.count(name), name);
    REQUIRE(wb.at(name).sizes() == t.sizes());
    worst = std::max(worst, (t.to(torch::kDouble) - wb.at(name).to(torch::kDouble)).abs().max().item<double>());
  }
  return worst;
}

inline void train_one_process(const std::string& out, const std::string& cache) {
  TrainOptions o;
  o.out_dir = out;
  o.quiet = true;
  train(load_config({test::config_path("base.yaml")}, tiny_sets(cache)), o);
}

}  // namespace relpos::test::dist
