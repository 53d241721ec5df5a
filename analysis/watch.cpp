#include "analysis/watch.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "core/io/run_paths.h"
#include "core/task/task_registry.h"
#include "core/util/errors.h"
#include "core/util/folder_lock.h"
#include "core/util/text_util.h"

namespace relpos::analysis {
namespace fs = std::filesystem;

namespace {

// A folder `relpos train` wrote (or is writing): config.yaml comes first, metrics.jsonl next.
bool watch_is_run_folder(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(run_metrics_path(dir.string()), ec) ||
         fs::exists(run_config_path(dir.string()), ec);
}

// The name of the folder `path` itself ("runs/a/" -> "a").
std::string watch_folder_name(const std::string& path) {
  fs::path p = fs::absolute(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// train.steps and the primary metric of config.yaml; unknown (0, "") when it cannot be read.
void watch_read_config(const std::string& dir, int64_t& total, std::string& primary) {
  try {
    const YAML::Node root = YAML::LoadFile(run_config_path(dir));
    if (root["train"] && root["train"]["steps"]) total = root["train"]["steps"].as<int64_t>();
    if (root["task"] && root["task"]["type"])
      if (const TaskInfo* t = TaskRegistry::get().find(root["task"]["type"].as<std::string>()))
        primary = "valid_" + t->primary().name;
  } catch (const std::exception&) {
  }
}

double watch_number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : std::nan("");
}

// One metrics record into `r`; lines that are not step records (a launcher's restart event, a
// line being written) are skipped.
void watch_take_line(WatchedRun& r, const std::string& line, const std::string& primary) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) return;
  r.step = j["step"].get<int64_t>();
  if (j.contains("train_loss")) {
    r.loss = watch_number(j, "train_loss");
    r.losses.push_back(r.loss);
  }
  if (j.contains("tokens_per_s")) r.tokens_per_s = watch_number(j, "tokens_per_s");
  if (j.contains("elapsed_s")) r.elapsed_s = watch_number(j, "elapsed_s");
  if (!primary.empty() && j.contains(primary)) {
    const double v = watch_number(j, primary.c_str());
    r.valid = fmt::format("{} {}", primary, std::isfinite(v) ? fmt::format("{:.4g}", v) : "—");
  }
}

const char* watch_state_name(WatchState s) {
  switch (s) {
    case WatchState::running:
      return "running";
    case WatchState::finished:
      return "finished";
    default:
      return "stopped";
  }
}

}  // namespace

double WatchedRun::eta_s() const {
  if (state == WatchState::finished) return 0;
  if (step <= 0 || total <= 0 || !std::isfinite(elapsed_s)) return std::nan("");
  return elapsed_s / static_cast<double>(step) *
         static_cast<double>(std::max<int64_t>(0, total - step));
}

std::string sparkline(const std::vector<double>& values, size_t width) {
  static const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  const size_t n = values.size(), cols = std::min(n, width);
  std::vector<double> means(cols, std::nan(""));
  for (size_t c = 0; c < cols; ++c) {
    // Part c holds values [c*n/cols, (c+1)*n/cols).
    double sum = 0;
    size_t k = 0;
    for (size_t i = c * n / cols; i < (c + 1) * n / cols; ++i)
      if (std::isfinite(values[i])) sum += values[i], ++k;
    if (k > 0) means[c] = sum / static_cast<double>(k);
  }
  double lo = INFINITY, hi = -INFINITY;
  for (double m : means)
    if (std::isfinite(m)) lo = std::min(lo, m), hi = std::max(hi, m);
  std::string out;
  for (double m : means) {
    if (!std::isfinite(m))
      out += " ";
    else if (hi == lo)
      out += kBlocks[3];
    else
      out += kBlocks[std::min<int64_t>(7, static_cast<int64_t>((m - lo) / (hi - lo) * 8))];
  }
  return out;
}

std::string format_watched_run(const WatchedRun& r, size_t name_width, size_t curve_width) {
  std::string s = fmt::format("{:<{}}  ", r.name, name_width);
  if (r.step < 0) return s + "no step logged yet  " + watch_state_name(r.state);
  const size_t digits = std::to_string(r.total).size();
  s += r.total > 0 ? fmt::format("step {:>{}}/{} {:>3.0f}%", r.step, digits, r.total,
                                 100.0 * r.step / r.total)
                   : fmt::format("step {}", r.step);
  // Fields padded, so that the curves of a sweep's lines start in one column.
  s += std::isfinite(r.loss) ? fmt::format("  loss {:.4f}", r.loss) : "  loss —     ";
  s += fmt::format("  {:<22}", r.valid);
  s += std::isfinite(r.tokens_per_s) ? fmt::format("  {:>6.1f}k tok/s", r.tokens_per_s / 1000)
                                     : std::string(15, ' ');
  const std::string time = r.state == WatchState::finished  ? "took " + format_duration(r.elapsed_s)
                           : r.state == WatchState::running ? "ETA " + format_duration(r.eta_s())
                                                            : "";
  s += fmt::format("  {:<10}", time);
  const std::string curve = sparkline(r.losses, curve_width);
  const size_t columns = std::min(r.losses.size(), curve_width);
  s += "  " + curve + std::string(curve_width - columns, ' ');
  return s + "  " + watch_state_name(r.state);
}

Watcher::Watcher(const std::string& path) : path_(path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw ConfigError(fmt::format("watch: {}: no such folder", path),
                      "give a run folder (relpos train --out) or a folder of runs (relpos sweep "
                      "--out, results/<experiment>)");
  if (!fs::is_directory(path, ec))
    throw ConfigError(fmt::format("watch: {}: not a folder (it is {})", path, file_kind(path)),
                      "give a run folder or a folder of runs");
}

void Watcher::find_runs(std::vector<std::string>& dirs) {
  busy_.clear();
  if (const std::string h = FolderLock::live_holder(path_); !h.empty()) busy_.push_back(path_);
  if (watch_is_run_folder(path_)) {
    dirs.push_back(path_);
    return;
  }
  std::error_code ec;
  fs::recursive_directory_iterator it(path_, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    if (it->path().filename().string().rfind('.', 0) == 0) {  // .git, .cache
      it.disable_recursion_pending();
      continue;
    }
    if (!FolderLock::live_holder(it->path().string()).empty()) busy_.push_back(it->path().string());
    if (watch_is_run_folder(it->path())) {
      dirs.push_back(it->path().string());
      it.disable_recursion_pending();  // a run's figures/, tables/ hold no runs
    }
  }
}

void Watcher::look_at(WatchedRun& r, Tail& t) {
  const WatchState before = r.state;
  const int64_t step_before = r.step;
  const size_t losses_before = r.losses.size();
  struct stat st {};
  const std::string metrics = run_metrics_path(r.dir);
  const bool have = ::stat(metrics.c_str(), &st) == 0;
  const auto id = static_cast<uint64_t>(have ? st.st_ino : 0);
  // A resumed run rewrites its log (the lines past its checkpoint dropped): read it anew.
  if (id != t.file_id || (have && st.st_size < t.offset)) {
    WatchedRun fresh;
    fresh.dir = r.dir;
    fresh.name = r.name;
    r = std::move(fresh);
    t = Tail{id, 0, ""};
    watch_read_config(r.dir, r.total, t.primary);
  }
  if (have) {
    std::ifstream in(metrics, std::ios::binary);
    in.seekg(t.offset);
    std::string line;
    // Whole lines only: a line without its newline is still being written.
    while (std::getline(in, line) && !in.eof()) {
      t.offset += static_cast<int64_t>(line.size()) + 1;
      watch_take_line(r, line, t.primary);
    }
  }
  std::error_code ec;
  r.state = !FolderLock::live_holder(r.dir).empty()  ? WatchState::running
            : fs::exists(run_result_path(r.dir), ec) ? WatchState::finished
                                                     : WatchState::stopped;
  r.changed = r.state != before || r.step != step_before || r.losses.size() != losses_before;
}

void Watcher::refresh() {
  std::vector<std::string> dirs;
  find_runs(dirs);
  runs_.clear();
  for (const auto& dir : dirs) {
    auto [it, added] = by_dir_.try_emplace(dir);
    WatchedRun& r = it->second;
    if (added) {
      r.dir = dir;
      r.name =
          dir == path_ ? watch_folder_name(dir) : fs::path(dir).lexically_relative(path_).string();
    }
    look_at(r, tails_[dir]);
    runs_.push_back(r);
  }
  std::sort(runs_.begin(), runs_.end(),
            [](const WatchedRun& a, const WatchedRun& b) { return a.name < b.name; });
}

bool Watcher::ended() const {
  if (busy() || runs_.empty()) return false;
  return std::all_of(runs_.begin(), runs_.end(), [](const WatchedRun& r) {
    return r.state == WatchState::finished || (r.state == WatchState::stopped && !r.changed);
  });
}

namespace {

std::string watch_counts(const std::vector<WatchedRun>& runs) {
  int64_t n[3] = {0, 0, 0};
  for (const auto& r : runs) ++n[static_cast<int>(r.state)];
  return fmt::format("{} run(s): {} running, {} finished, {} stopped", runs.size(), n[0], n[1],
                     n[2]);
}

size_t watch_name_width(const std::vector<WatchedRun>& runs) {
  size_t w = 4;
  for (const auto& r : runs) w = std::max(w, r.name.size());
  return w;
}

// The whole view (a terminal's screen, or --once).
void watch_print_view(const Watcher& w, const std::string& path, const WatchOptions& o,
                      std::ostream& out) {
  if (o.tty && !o.once) out << "\033[H\033[J";  // cursor home, clear the screen below it
  out << fmt::format("relpos watch {}: {}{}\n", path, watch_counts(w.runs()),
                     w.busy() ? "; a sweep or run is at work" : "");
  const size_t width = watch_name_width(w.runs());
  for (const auto& r : w.runs()) out << format_watched_run(r, width, o.curve_width) << "\n";
  out.flush();
}

// Plain output: each run's line when it differs from the one printed last for that run.
void watch_print_changes(const Watcher& w, const WatchOptions& o,
                         std::map<std::string, std::string>& printed, std::ostream& out) {
  const size_t width = watch_name_width(w.runs());
  for (const auto& r : w.runs()) {
    std::string line = format_watched_run(r, width, o.curve_width);
    if (printed[r.dir] != line) out << line << "\n";
    printed[r.dir] = std::move(line);
  }
  out.flush();
}

void watch_check_runs(const Watcher& w, const std::string& path) {
  if (w.runs().empty() && !w.busy())
    throw ConfigError(fmt::format("watch: {}: no run folder in it (none holds config.yaml or "
                                  "metrics.jsonl) and no sweep at work",
                                  path),
                      "give a run folder (relpos train --out) or a folder of runs (relpos sweep "
                      "--out)");
}

}  // namespace

void watch_runs(const std::string& path, const WatchOptions& o, std::ostream& out) {
  Watcher w(path);
  w.refresh();
  watch_check_runs(w, path);
  if (o.once) return watch_print_view(w, path, o, out);
  std::map<std::string, std::string> printed;
  const auto pause = std::chrono::duration<double>(std::max(0.05, o.interval_s));
  while (true) {
    if (o.tty)
      watch_print_view(w, path, o, out);
    else
      watch_print_changes(w, o, printed, out);
    if (w.ended()) break;
    std::this_thread::sleep_for(pause);
    w.refresh();
    watch_check_runs(w, path);
  }
  out << fmt::format("watch: every run has ended; {}\n", watch_counts(w.runs()));
}

}  // namespace relpos::analysis
