// The options of `relpos bench` (app/cmd_bench.cpp) and what they become: the request every
// configuration's child gets and the command line the report prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/commands.h"
#include "core/bench/bench_session.h"

namespace relpos::app {

struct BenchArgs {
  ConfigArgs config;
  std::vector<std::string> variants;
  std::vector<int64_t> lengths = {128, 512, 1024};
  std::vector<std::string> variants_text, lengths_text;  // as given: split by parse_lists()
  std::string direct = "auto";
  std::vector<std::string> attention_text, attention;  // --attention: model.attention_impl values
  int64_t batch = 0, threads = -1;
  std::string device;
  StepOptions step;
  int repeats = 1;
  int timeout_s = 1800;
  double max_memory_mb = -1;  // -1: 3/4 of physical memory
  std::string json;
  bool blas = false;
  bool child = false;

  // --variants and --lengths from their text: an empty item is an error, and so is an item
  // listed twice (it would be measured twice).
  void parse_lists();
  // The config files and --set overrides every child gets (batch, threads, device included).
  std::vector<std::string> config_sets() const;
  // The options as a command line (for the report), defaults included.
  std::string command_line() const;
  BenchRequest request() const;
};

}  // namespace relpos::app
