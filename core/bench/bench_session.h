// The two halves of `relpos bench` below its argument parsing (app/cmd_bench.cpp): the parent,
// which checks every option, runs each configuration in a child process (run_bench), prints the
// table and writes the JSON; and the child, which measures one configuration and prints its
// result line.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/bench/bench.h"
#include "core/bench/measure.h"
#include "core/config/labelled_override.h"
#include "core/config/config.h"

namespace relpos {

// --max-memory below this is refused: the limit is on address space, and a LibTorch process
// maps several hundred MB of it (libraries, thread stacks, allocator arenas) before its first
// tensor. Measured on the CPU build: below 768 MB a child cannot load its libraries, at 768 MB
// it spins, at 1024 MB a tiny step runs many times slower. Each would read as a measurement.
constexpr double kMinBenchMaxMemoryMb = 2048;

// What a bench was asked to do, as the command line gave it.
struct BenchRequest {
  std::vector<std::string> configs;  // config files; empty: configs/base.yaml, configs/bench.yaml
  std::vector<std::string> sets;     // --set overrides, --batch/--threads/--device included
  std::vector<std::string> variants;  // empty: every registered variant
  std::vector<int64_t> lengths;
  std::string direct = "auto";         // auto | none | a list of variants
  std::vector<std::string> attention;  // model.attention_impl values; empty: the config's
  StepOptions step;
  int repeats = 1;
  int timeout_s = 1800;
  double max_memory_mb = -1;  // -1: 3/4 of physical memory; 0: no limit
  std::string json;           // write the results here ("" : no file)
  std::string command_line;   // for the JSON header

  // The config with `extra_sets` and `labelled` overrides applied (an error names its origin).
  LoadedConfig load(const std::vector<std::string>& extra_sets = {},
                    const std::vector<LabelledOverride>& labelled = {}) const;
};

// The parent. Every option is checked before any child runs (a ConfigError names the option);
// `paired_intervals` fills each case's paired ratio and its interval from its log ratios (the
// t quantile lives in the analysis layer, above core). Returns the exit status.
int run_bench_parent(const BenchRequest& request,
                     const std::function<void(std::vector<CaseSummary>&)>& paired_intervals);

// The child (`bench --child`): measures the one configuration and prints kResultTag + JSON.
int run_bench_child(const BenchRequest& request);

// "BLAS: sgemm_ from ... ; 1024x1024 matmul ... GFLOP/s" for the config's thread settings.
std::string blas_summary(const Config& config);

}  // namespace relpos
