// What an experiment needs to know about a finished run folder, read from its files.
#pragma once

#include <map>
#include <string>

namespace relpos {

struct RunSummary {
  std::string dir;
  std::string position_types;              // "learned+tisa"
  std::string task;                        // task.type of its config ("" when unreadable)
  std::string tokenizer;                   // data.tokenizer of its config
  int64_t seed = 0;
  bool finished = false;                   // result.json present
  std::map<std::string, double> valid;     // final validation metrics (result.json)
  double train_seconds = 0;
  int64_t position_params = -1;            // positional parameters of the model (-1: unknown)
  std::map<std::string, std::map<int64_t, double>> extrapolation;  // metric -> length -> value
};

// Never throws for a missing or broken file: the fields stay unknown.
RunSummary read_run_summary(const std::string& dir);

// One line on a run in progress, from the last line of its metrics.jsonl and its config:
// "step 480/600 (80%) loss 2.79 5.4k tok/s". Empty when it has logged nothing yet.
std::string run_progress(const std::string& dir);

}  // namespace relpos
