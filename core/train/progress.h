// Terminal progress line and the metrics.jsonl log of a run.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace relpos {

// "step 120/1500  loss 3.412  valid accuracy 0.412  2310 tok/s  ETA 1m02s". Overwrites itself
// on a terminal; prints one line per update otherwise (logs, CI).
class ProgressLine {
 public:
  ProgressLine(int64_t total_steps, bool quiet);
  void update(int64_t step, double loss, double tokens_per_s, const std::string& valid);
  void message(const std::string& text);  // a line of its own, keeping the progress line intact
  void finish();

 private:
  int64_t total_;
  bool quiet_, tty_;
  bool open_line_ = false;
  std::chrono::steady_clock::time_point start_;
  int64_t start_step_ = -1;
};

// Appends one JSON object per line, flushed; reopening after a resume first drops lines past a
// step (and a last line torn by a crash), keeping event lines ({"event":...}, no "step"). Throws RunError when a line cannot be written.
class MetricsLog {
 public:
  MetricsLog(const std::string& path, int64_t keep_up_to_step);
  void write(int64_t step, const std::map<std::string, double>& values);
  // Lines dropped on reopening that were not metrics records and not a torn last line (the
  // file was damaged or edited), as "line N: what": the caller warns about them.
  const std::vector<std::string>& damaged_lines() const { return damaged_; }

 private:
  std::string path_;
  std::ofstream out_;
  std::vector<std::string> damaged_;
};

}  // namespace relpos
