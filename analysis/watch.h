// `relpos watch PATH` (docs/training.md, "Watching runs"): a terminal view of one run, or of every
// run below a folder (a sweep, an experiment), from the files runs write while they train:
// metrics.jsonl (read incrementally: only the lines added since the last look), config.yaml
// (train.steps, task.type), result.json (the run finished) and the folder locks (a run or a sweep
// still at work). It ends when nothing is left to wait for.
#pragma once

#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace relpos::analysis {

enum class WatchState {
  running,   // its folder lock is held by a live process
  finished,  // result.json present, not running
  stopped,   // neither: interrupted, failed or killed (resumable when it has a checkpoint)
};

// What the view shows of one run.
struct WatchedRun {
  std::string dir;
  std::string name;            // relative to the watched folder (a single run: its name)
  int64_t step = -1;           // the last logged step; -1: none yet
  int64_t total = 0;           // train.steps of config.yaml; 0 unknown
  double loss = std::nan("");  // the last train_loss
  double tokens_per_s = std::nan("");
  double elapsed_s = std::nan("");  // training time so far, every invocation (elapsed_s)
  std::string valid;           // the task's primary validation metric, last value: "valid_ppl 8.12"
  std::vector<double> losses;  // every train_loss logged, in order
  WatchState state = WatchState::stopped;
  bool changed = true;  // its files changed since the previous look
  // Seconds left at the pace so far (elapsed_s / step); NaN unknown, 0 once finished.
  double eta_s() const;
};

// `values` as one block character (▁▂▃▄▅▆▇█) per column: the values split into `width` parts
// of near-equal size (one column per value when there are fewer), each part's finite mean
// scaled from the smallest mean (▁) to the largest (█); a part without a finite value is ' '.
// All means equal: ▄ everywhere.
std::string sparkline(const std::vector<double>& values, size_t width);

// One line, its fields padded so that a sweep's lines align:
//   name  step 480/600  80%  loss 2.7910  valid_ppl 8.12   5.4k tok/s  ETA 1m05s  ▇▆▅▄▃▂▁  running
std::string format_watched_run(const WatchedRun& r, size_t name_width, size_t curve_width);

class Watcher {
 public:
  // Throws ConfigError when `path` does not exist or is not a folder.
  explicit Watcher(const std::string& path);
  // Looks again: finds run folders (a sweep's new runs appear), reads what each metrics.jsonl
  // gained, the states and the locks.
  void refresh();
  const std::vector<WatchedRun>& runs() const { return runs_; }
  // A live lock at or below the path (a sweep's, a run's).
  bool busy() const { return !busy_.empty(); }
  // Nothing left to wait for: no live lock at or below the path, at least one run, and every run
  // finished or unchanged since the previous refresh.
  bool ended() const;

 private:
  // What has been read of one run's files.
  struct Tail {
    uint64_t file_id = 0;  // metrics.jsonl's inode: a resumed run's log is a new file
    int64_t offset = 0;    // bytes of metrics.jsonl read (whole lines only)
    std::string primary;   // valid_<the task's primary metric>
  };
  void find_runs(std::vector<std::string>& dirs);
  void look_at(WatchedRun& r, Tail& t);

  std::string path_;
  std::map<std::string, WatchedRun> by_dir_;
  std::map<std::string, Tail> tails_;
  std::vector<WatchedRun> runs_;   // by name
  std::vector<std::string> busy_;  // folders whose lock a live process holds
};

struct WatchOptions {
  double interval_s = 2.0;
  bool once = false;
  bool tty = false;  // redraw the screen in place (ANSI codes); else plain lines
  size_t curve_width = 24;
};

// The loop of `relpos watch`: looks every interval until the Watcher has ended (or once). On a
// terminal it redraws the view; otherwise it prints each run's line when it changes, so that the
// output is a log. Throws ConfigError when the path holds no run and no sweep is at work in it.
void watch_runs(const std::string& path, const WatchOptions& o, std::ostream& out);

}  // namespace relpos::analysis
