#include "experiments/sweep.h"

#include "experiments/run_progress.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "analysis/run_source.h"
#include "analysis/tables.h"
#include "analysis/units.h"
#include "core/config/config.h"
#include "core/config/labelled_override.h"
#include "core/position/position_encoding.h"
#include "core/position/position_registry.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"
#include "core/util/folder_lock.h"
#include "core/util/paths.h"
#include "core/util/process.h"
#include "core/util/sampling_stats.h"
#include "core/util/signals.h"
#include "core/util/threads.h"
#include "core/io/run_paths.h"

namespace relpos {
namespace fs = std::filesystem;

GridAxis parse_grid_axis(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw ConfigError(fmt::format("--grid '{}': expected key=value1,value2,...", spec),
                      "for example --grid position.type=none,shaw,rope");
  GridAxis axis;
  axis.spec = spec;
  axis.key = spec.substr(0, eq);
  std::stringstream ss(spec.substr(eq + 1));
  for (std::string v; std::getline(ss, v, ',');) {
    if (v.empty()) throw ConfigError(fmt::format("--grid '{}': empty value", spec));
    axis.values.push_back(v);
  }
  std::set<std::string> unique(axis.values.begin(), axis.values.end());
  if (unique.size() != axis.values.size())
    throw ConfigError(fmt::format("--grid '{}': a value is listed twice", spec));
  return axis;
}

namespace {

// "position.type" + "learned+tisa" -> "learned+tisa" (any *.type key gives its value);
// "seed" + "2" -> "seed2"; "model.layers" + "4" -> "layers4".
std::string slug(const std::string& key, const std::string& value) {
  const std::string last = key.substr(key.rfind('.') + 1);
  std::string s = last == "type" ? value : last + value;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '_' || c == '.'))
      c = '_';
  return s;
}

}  // namespace

std::vector<SweepPoint> expand_grid(const std::vector<GridAxis>& axes) {
  std::set<std::string> keys;
  for (const auto& axis : axes)
    if (!keys.insert(axis.key).second)
      throw ConfigError(fmt::format("--grid: the key '{}' has two axes (a later one would "
                                    "override the earlier one's values)", axis.key),
                        fmt::format("list every value in one axis: --grid {}=a,b", axis.key));
  std::vector<SweepPoint> points{SweepPoint{}};
  for (const auto& axis : axes) {
    std::vector<SweepPoint> next;
    for (const auto& p : points)
      for (const auto& v : axis.values) {
        SweepPoint q = p;
        q.name += (q.name.empty() ? "" : "-") + slug(axis.key, v);
        q.overrides.push_back(axis.key + "=" + v);
        next.push_back(q);
      }
    points = next;
  }
  if (points.size() == 1 && points[0].name.empty()) points[0].name = "run";
  // Two points in one folder: the second would run as a resume of the first (or be skipped as
  // finished), and the summary would show the same run twice.
  std::map<std::string, const SweepPoint*> by_folder;
  for (const auto& p : points) {
    const auto [it, fresh] = by_folder.emplace(p.name, &p);
    if (!fresh)
      throw ConfigError(
          fmt::format("--grid: the points {} and {} map to the same run folder '{}'",
                      join_names(it->second->overrides, " "), join_names(p.overrides, " "), p.name),
          "a run folder's name keeps only letters, digits and + - _ . of each value (others "
          "become _): give values that differ in those");
  }
  return points;
}

std::string init_from_dir(const SweepOptions& o, const SweepPoint& p) {
  std::string s = o.init_from;
  std::vector<std::pair<std::string, std::string>> fields{{"{point}", p.name}};
  for (const auto& ov : p.overrides)
    if (ov.rfind("seed=", 0) == 0) fields.push_back({"{seed}", ov.substr(5)});
  for (const auto& [key, value] : fields)
    for (auto pos = s.find(key); pos != std::string::npos; pos = s.find(key, pos + value.size()))
      s.replace(pos, key.size(), value);
  return s;
}

std::vector<ResolvedPoint> resolve_points(const SweepOptions& o,
                                          const std::vector<SweepPoint>& points) {
  std::vector<ResolvedPoint> resolved;
  for (const auto& p : points) {
    // A point's overrides come one per axis, in the axes' order; errors name the axis.
    std::vector<LabelledOverride> axes;
    for (size_t i = 0; i < p.overrides.size() && i < o.grid.size(); ++i) {
      const GridAxis& g = o.grid[i];
      const std::string spec =
          g.spec.empty() ? fmt::format("{}={}", g.key, fmt::join(g.values, ",")) : g.spec;
      axes.push_back({p.overrides[i], g.option == "--grid" ? "command line (--grid " + spec + ")"
                                                           : g.option + " (" + spec + ")"});
    }
    std::vector<std::string> files = o.configs;
    if (files.empty()) throw ConfigError("sweep: --config FILE is required");
    const Config cfg = load_config(files, o.sets, axes).config;
    resolved.push_back({to_yaml(cfg), cfg.position.types, cfg.threads});
  }
  return resolved;
}

namespace {

std::vector<std::string> train_args(const SweepOptions& o, const SweepPoint& p,
                                    const std::string& dir, bool resume, int64_t threads) {
  std::vector<std::string> args{o.relpos_binary, "train", "--out", dir, "--quiet"};
  if (resume) {
    args.push_back("--resume");
  } else {
    for (const auto& c : o.configs) args.insert(args.end(), {"--config", c});
    args.push_back("--overwrite");  // an unfinished folder without checkpoint: start over
    if (!o.init_from.empty()) args.insert(args.end(), {"--init-from", init_from_dir(o, p)});
  }
  for (const auto& s : o.sets) args.insert(args.end(), {"--set", s});
  for (const auto& s : p.overrides) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), {"--set", fmt::format("threads={}", threads)});
  return args;
}

pid_t spawn(const std::vector<std::string>& args, const std::string& log_path) {
  // The sweep alone decides when a run stops: it forwards SIGTERM to each run once. So a run
  // ignores SIGINT (Ctrl-C reaches the sweep only; relpos keeps an inherited SIG_IGN), sits in
  // its own process group (a signal to the sweep's group is not delivered twice), and gets
  // SIGTERM when the sweep dies without forwarding it (kill -9), so it still checkpoints.
  SpawnOptions o;
  o.log_file = log_path;
  o.ignore_interrupt = true;
  o.new_process_group = true;
  o.stop_with_parent = true;
  try {
    return spawn_child(args, o);
  } catch (const RunError& e) {
    throw RunError(fmt::format("cannot start a run: {}", e.what()));
  }
}

std::string quote_args(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& raw : args) {
    // commands.txt names paths inside the repository relative to its root (committed results
    // name no machine's folders).
    const std::string a = repo_relative_word(raw);
    const bool plain = a.find_first_of(" \t'\"$`\\;&|<>()*?[]{}") == std::string::npos;
    s += (s.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return s;
}



// A run folder that is finished (skipped) or has a checkpoint (resumed from its stored config)
// must have been made with the config the sweep would give it now: otherwise the sweep would
// report results of another config (or continue a run under one) without saying so. Compared
// on every key but `threads` (how fast, not what), `sweep` (the grid, not the run) and the
// parameters of variants the run does not use (a config shared by a sweep over variants sets
// them for the runs that do).
void check_existing_runs(const SweepOptions& o, const std::vector<SweepPoint>& points,
                         const std::vector<ResolvedPoint>& resolved) {
  std::vector<std::string> stale;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string dir = (fs::path(o.out_dir) / points[i].name).string();
    if (!run_finished(dir) && !fs::exists(run_checkpoint_path(dir))) continue;  // trained afresh
    if (!fs::exists(run_config_path(dir))) continue;  // a foreign folder, which train refuses
    // The stored config read by today's parser, so keys added since it was written compare at
    // their defaults (which keep the old behaviour) instead of as differences.
    std::string stored;
    try {
      stored = to_yaml(load_run_config(dir).config);
    } catch (const ConfigError& e) {
      stale.push_back(fmt::format("{} (its config.yaml no longer loads: {})", dir, e.what()));
      continue;
    }
    std::vector<std::string> ignore{"threads", "cpu_allocator", "sweep", "claims", "provenance"};
    // A fine-tune records the settings of the pre-trained run's SentencePiece model it uses
    // (with_tokenizer_settings), not its own config's.
    if (!o.init_from.empty())
      for (const char* k : {"data.vocab_size", "data.sentencepiece_model",
                            "data.sentencepiece_byte_fallback"})
        ignore.push_back(k);
    for (const auto& v : Registry::get().names())
      if (std::find(resolved[i].types.begin(), resolved[i].types.end(), v) == resolved[i].types.end())
        ignore.push_back("position." + v);
    const auto diff = config_differences(stored, resolved[i].yaml, ignore);
    if (diff.empty()) continue;
    std::string keys;
    for (size_t k = 0; k < diff.size() && k < 3; ++k) keys += (k ? "; " : "") + diff[k];
    if (diff.size() > 3) keys += fmt::format("; and {} more", diff.size() - 3);
    stale.push_back(fmt::format("{} ({})", dir, keys));
  }
  if (stale.empty()) return;
  std::string list;
  for (size_t k = 0; k < stale.size() && k < 5; ++k) list += "\n  " + stale[k];
  if (stale.size() > 5) list += fmt::format("\n  and {} more run folders", stale.size() - 5);
  throw ConfigError(
      fmt::format("sweep: {} run folder(s) in {} were made with another config than this sweep "
                  "gives them now (stored -> now):{}",
                  stale.size(), o.out_dir, list),
      "their results would not belong to this config: delete those run folders to train them "
      "again, or give the sweep another --out");
}

}  // namespace

int64_t sweep_run_threads(const SweepOptions& o, int64_t config_threads) {
  if (o.threads > 0) return o.threads;
  if (config_threads > 0) return config_threads;
  return automatic_threads_shared(o.jobs);
}

void create_output_folder(const std::string& dir, const std::string& what) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw RunError(fmt::format("{}: exists and is not a folder", dir), "choose another --out");
  fs::create_directories(dir, ec);
  if (ec)
    throw RunError(fmt::format("{}: cannot create the {}: {}", dir, what, ec.message()),
                   "choose a writable --out");
}

namespace {

// A run that stopped because it was asked to: SIGTERM forwarded by the sweep, or SIGINT, which a
// terminal's Ctrl-C sends to the runs too (they save a checkpoint and exit 128 + the signal).
bool stopped_by_signal(int exit_code) {
  return exit_code == 128 + SIGTERM || exit_code == 128 + SIGINT;
}

// " (a, b, c)", or the first `shown` names and how many more.
std::string sweep_names(const std::vector<std::string>& names, size_t shown = 8) {
  if (names.size() <= shown) return " (" + join_names(names) + ")";
  const std::vector<std::string> first(names.begin(), names.begin() + static_cast<long>(shown));
  return fmt::format(" ({} and {} more)", join_names(first), names.size() - shown);
}

}  // namespace

std::string sweep_interrupt_summary(const std::vector<SweepRunStatus>& runs,
                                    const std::string& signal_name, const std::string& out_dir) {
  std::vector<std::string> resumable, fresh, failed, waiting;
  size_t finished = 0;
  for (const auto& r : runs) {
    if (r.finished)
      ++finished;
    else if (stopped_by_signal(r.exit_code))
      (fs::exists(run_checkpoint_path(r.dir)) ? resumable : fresh).push_back(r.point.name);
    else if (r.exit_code != 0)
      failed.push_back(r.point.name);
    else
      waiting.push_back(r.point.name);  // never started
  }
  std::string msg = fmt::format("sweep interrupted by {}: {} of {} runs finished", signal_name,
                                finished, runs.size());
  if (!resumable.empty())
    msg += fmt::format(", {} stopped at a checkpoint{}", resumable.size(), sweep_names(resumable));
  if (!fresh.empty())
    msg += fmt::format(", {} stopped before a first checkpoint, to start over{}", fresh.size(),
                       sweep_names(fresh));
  if (!failed.empty())
    msg += fmt::format(", {} failed{}: see their train.log", failed.size(), sweep_names(failed));
  if (!waiting.empty()) msg += fmt::format(", {} not started yet", waiting.size());
  return msg + "; in " + out_dir;
}

namespace {

// Each run's threads, passed to it explicitly: a resumed run would otherwise keep the count its
// stored config.yaml recorded. A count above the CPUs this process may use would fail every run
// still to train (configure_threads refuses it): said once, now.
std::vector<int64_t> sweep_thread_counts(const SweepOptions& o,
                                         const std::vector<SweepPoint>& points,
                                         const std::vector<ResolvedPoint>& resolved) {
  std::vector<int64_t> threads;
  for (size_t i = 0; i < points.size(); ++i) {
    threads.push_back(sweep_run_threads(o, resolved[i].threads));
    if (threads.back() > available_cpus() &&
        !run_finished((fs::path(o.out_dir) / points[i].name).string()))
      throw ConfigError(
          fmt::format("sweep: {}: threads {} is more than the {} CPU(s) this process may run on",
                      points[i].name, threads.back(), available_cpus()),
          o.threads > 0 ? "give a smaller --threads, or leave it out"
                        : "set threads: 0 (automatic: the CPUs are split between the --jobs "
                          "runs), or a smaller count");
  }
  return threads;
}

// The commands this sweep runs, appended to commands.txt; a finished run is named, not listed
// as if run again.
void append_commands(const SweepOptions& o, const std::vector<SweepRunStatus>& runs,
                     const std::vector<int64_t>& threads) {
  std::ofstream cmds(fs::path(o.out_dir) / "commands.txt", std::ios::app);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].skipped)
      cmds << "# already finished, not run again: " << repo_relative(runs[i].dir) << "\n";
    else
      cmds << quote_args(train_args(o, runs[i].point, runs[i].dir, false, threads[i])) << "\n";
  }
}

// The runs of a sweep as child processes, `jobs` at a time, until all have ended or a signal
// asked the sweep to stop (then each running run gets SIGTERM once and saves a checkpoint).
class SweepLoop {
 public:
  SweepLoop(const SweepOptions& o, std::vector<SweepRunStatus>& runs,
            const std::vector<int64_t>& threads)
      : o_(o), runs_(runs), threads_(threads) {
    todo_ = std::count_if(runs.begin(), runs.end(), [](auto& r) { return !r.skipped; });
  }

  size_t todo() const { return todo_; }

  // Returns true when the sweep was interrupted.
  bool run() {
    t0_ = last_report_ = std::chrono::steady_clock::now();
    while (true) {
      if (interrupt_requested() && !interrupted_) forward_interrupt();
      start_more();
      if (active_.empty()) break;
      // Poll, so that a signal arriving at any moment is seen within a few milliseconds
      // (handlers restart system calls, so a blocking waitpid would not return for it).
      const auto ended = reap_child();
      if (ended) {
        finish(*ended);
      } else {  // all still running: show where they are now and then
        sleep_unless_interrupted(0.02);
        report_progress();
      }
    }
    return interrupted_;
  }

 private:
  void forward_interrupt() {
    interrupted_ = true;
    if (!o_.quiet)
      std::cerr << fmt::format("sweep: {} received; asking the {} running run(s) to save a "
                               "checkpoint...\n",
                               interrupt_signal_name(), active_.size());
    for (const auto& [child, idx] : active_) kill(child, SIGTERM);
  }

  void start_more() {
    while (!interrupted_ && static_cast<int64_t>(active_.size()) < o_.jobs &&
           next_ < runs_.size()) {
      const size_t i = next_++;
      auto& r = runs_[i];
      if (r.skipped) continue;
      fs::create_directories(r.dir);
      const bool resume = fs::exists(run_checkpoint_path(r.dir));
      const pid_t pid = spawn(train_args(o_, r.point, r.dir, resume, threads_[i]),
                              (fs::path(r.dir) / "train.log").string());
      active_[pid] = i;
      started_[pid] = std::chrono::steady_clock::now();
      if (!o_.quiet)
        std::cerr << fmt::format("  start  {}{}\n", r.point.name, resume ? " (resuming)" : "");
    }
  }

  void report_progress() {
    const auto now = std::chrono::steady_clock::now();
    const auto every = std::chrono::seconds(isatty(fileno(stderr)) ? 15 : 60);
    if (o_.quiet || now - last_report_ <= every) return;
    last_report_ = now;
    for (const auto& [child, idx] : active_) {
      const std::string p = run_progress(runs_[idx].dir);
      if (!p.empty()) std::cerr << fmt::format("  ...    {}: {}\n", runs_[idx].point.name, p);
    }
  }

  void finish(const ChildExit& ended) {
    auto it = active_.find(ended.pid);
    if (it == active_.end()) return;
    auto& r = runs_[it->second];
    const auto now = std::chrono::steady_clock::now();
    r.exit_code = ended.code();
    r.seconds = std::chrono::duration<double>(now - started_[ended.pid]).count();
    r.finished = run_finished(r.dir);
    active_.erase(it);
    ++done_;
    if (o_.quiet) return;
    const double elapsed = std::chrono::duration<double>(now - t0_).count();
    const double eta = elapsed / static_cast<double>(done_) * static_cast<double>(todo_ - done_);
    const char* label = r.finished                                          ? "done  "
                        : interrupted_ && stopped_by_signal(r.exit_code) ? "stopped"
                                                                          : "FAILED";
    std::cerr << fmt::format("  {} {} in {:.0f}s ({}/{} done, ETA {:.0f}s){}\n", label,
                             r.point.name, r.seconds, done_, todo_, eta,
                             r.finished ? "" : " — see " + r.dir + "/train.log");
  }

  const SweepOptions& o_;
  std::vector<SweepRunStatus>& runs_;
  const std::vector<int64_t>& threads_;
  std::map<pid_t, size_t> active_;
  std::map<pid_t, std::chrono::steady_clock::time_point> started_;
  size_t next_ = 0, done_ = 0, todo_ = 0;
  std::chrono::steady_clock::time_point t0_, last_report_;
  bool interrupted_ = false;
};

}  // namespace

std::vector<SweepRunStatus> run_sweep(const SweepOptions& o) {
  if (o.out_dir.empty()) throw ConfigError("sweep: --out DIR is required");
  if (o.jobs < 1) throw ConfigError(fmt::format("sweep: --jobs {} (expected >= 1)", o.jobs));
  // Check the shared config (and every point's overrides) before anything starts.
  auto points = expand_grid(o.grid);
  const std::vector<ResolvedPoint> resolved = resolve_points(o, points);
  check_existing_runs(o, points, resolved);
  const std::vector<int64_t> threads = sweep_thread_counts(o, points, resolved);
  install_interrupt_handlers();
  create_output_folder(o.out_dir, "sweep folder");
  // One sweep per folder at a time (each run also locks its own folder).
  FolderLock lock(o.out_dir, "sweep");

  std::vector<SweepRunStatus> runs;
  for (const auto& p : points) {
    SweepRunStatus s;
    s.point = p;
    s.dir = (fs::path(o.out_dir) / p.name).string();
    s.finished = s.skipped = run_finished(s.dir);
    runs.push_back(s);
  }
  append_commands(o, runs, threads);
  SweepLoop loop(o, runs, threads);
  if (!o.quiet) {
    const auto [fewest, most] = std::minmax_element(threads.begin(), threads.end());
    const std::string each = *fewest == *most ? fmt::format("{} thread(s) each", *fewest)
                                              : fmt::format("{} to {} threads each", *fewest, *most);
    std::cerr << fmt::format("sweep: {} runs ({} already finished), {} at a time, {} -> {}\n",
                             runs.size(), runs.size() - loop.todo(), o.jobs, each, o.out_dir);
  }
  const bool interrupted = loop.run();
  write_sweep_summary(o.out_dir, runs);
  if (interrupted)
    throw Interrupted(
        interrupt_signal(), sweep_interrupt_summary(runs, interrupt_signal_name(), o.out_dir),
        "run the same command again to continue: finished runs are skipped, stopped ones resume");
  std::vector<std::string> failed;
  for (const auto& r : runs)
    if (!r.finished) failed.push_back(r.point.name + " (" + r.dir + "/train.log)");
  if (!failed.empty())
    throw RunError(fmt::format("sweep: {} run(s) failed: {}", failed.size(), join_names(failed)),
                   "read the logs; run the same command again to retry only those");
  return runs;
}

namespace {

// What the summary shows of a run: its RunInfo from run.h5 and result.json (analysis's reader),
// or, for a run that never wrote a readable run.h5, nothing but why.
struct SummaryRun {
  analysis::RunInfo info;
  std::map<std::string, double> valid;  // last validation value of each metric
  bool readable = false;
  std::string problem;
};

SummaryRun summary_run(const std::string& dir) {
  SummaryRun s;
  if (!is_run_folder(dir)) return s;  // never started, or stopped before writing it
  try {
    s.info = analysis::RunFileSource(dir).info();
    s.readable = true;
  } catch (const Error& e) {
    s.problem = e.what();
    return s;
  }
  for (const auto& [m, series] : s.info.metrics)
    if (m.rfind("valid_", 0) == 0 && !series.y.empty() && !is_sampling_statistic(m))
      s.valid[m.substr(6)] = series.y.back();
  return s;
}

}  // namespace

void keep_sweep_claims(const std::string& out_dir, const std::vector<std::string>& configs,
                       const std::vector<std::string>& sets) {
  const Config cfg = load_config(configs, sets).config;
  if (cfg.claims.empty()) return;
  create_output_folder(out_dir, "sweep folder");
  const fs::path file = fs::path(out_dir) / "claims.yaml";
  std::ofstream f(file);
  f << "# The claims of the sweep's config (and the settings their placeholders read), judged\n"
       "# by `relpos analyze` / `relpos report` of this folder (docs/analysis.md).\n"
    << to_yaml(cfg);
  if (!f) throw RunError(fmt::format("{}: cannot write", file.string()));
}

void write_sweep_summary(const std::string& out_dir, const std::vector<SweepRunStatus>& runs) {
  std::vector<SummaryRun> sums;
  std::vector<std::string> metric_names;
  for (const auto& r : runs) {
    sums.push_back(summary_run(r.dir));
    for (const auto& [k, v] : sums.back().valid)
      if (std::find(metric_names.begin(), metric_names.end(), k) == metric_names.end())
        metric_names.push_back(k);
  }
  // Units in the headers come from the runs' one task and tokenizer; runs of several tasks (or
  // none readable) get headers without units rather than a unit that fits only some of them.
  std::set<std::pair<std::string, std::string>> kinds;
  for (const auto& s : sums)
    if (!s.info.task.empty()) kinds.insert({s.info.task, s.info.tokenizer});
  const bool one_kind = kinds.size() == 1;
  const std::string task = one_kind ? kinds.begin()->first : "";
  const std::string tokenizer = one_kind ? kinds.begin()->second : "";
  // A language model's loss again in bits (per byte with the byte tokenizer), beside it.
  const bool bits =
      one_kind && analysis::is_lm_task(task) &&
      std::find(metric_names.begin(), metric_names.end(), "loss") != metric_names.end();
  const std::string bits_metric = analysis::bits_name(tokenizer);
  auto unit = [&](const std::string& m) {
    return one_kind ? analysis::metric_unit(m, task, tokenizer) : std::string();
  };
  std::ofstream csv(fs::path(out_dir) / "summary.csv"), md(fs::path(out_dir) / "summary.md");
  csv << "run,overrides,finished,position_params,train_seconds";
  md << "| run | overrides | finished | position params | train s |";
  for (const auto& m : metric_names) {
    csv << ",valid_" << m;
    md << " " << analysis::with_unit("valid " + m, unit(m)) << " |";
    if (bits && m == "loss")
      md << " " << analysis::with_unit("valid loss", unit(bits_metric)) << " |";
  }
  if (bits) csv << ",valid_" << bits_metric;
  csv << "\n";
  md << "\n|---|---|---|---|---|";
  for (size_t i = 0; i < metric_names.size() + (bits ? 1 : 0); ++i) md << "---|";
  md << "\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const auto& s = sums[i];
    const bool finished = s.readable && s.info.finished && std::isfinite(s.info.train_seconds);
    const double secs = finished ? s.info.train_seconds : r.seconds;
    const std::string overrides = join_names(r.point.overrides, " ");
    // A run that never finished has no model to count: the cell stays empty, not -1.
    const std::string params = !s.readable || s.info.positional_parameters < 0
                                   ? ""
                                   : std::to_string(s.info.positional_parameters);
    const std::string state = finished ? "yes" : s.problem.empty() ? "no" : "no (" + s.problem + ")";
    csv << analysis::csv_field(r.point.name) << "," << analysis::csv_field(overrides) << ","
        << (finished ? 1 : 0) << "," << params << "," << fmt::format("{:.1f}", secs);
    md << "| " << analysis::markdown_escape(r.point.name) << " | "
       << (overrides.empty() ? "" : "`" + analysis::markdown_escape(overrides) + "`") << " | "
       << analysis::markdown_escape(state) << " | " << params << " | "
       << fmt::format("{:.1f}", secs) << " |";
    std::string bits_cell;
    for (const auto& m : metric_names) {
      auto it = s.valid.find(m);
      const std::string v = it == s.valid.end() ? "" : fmt::format("{:.4f}", it->second);
      csv << "," << v;
      md << " " << v << " |";
      if (bits && m == "loss") {
        if (it != s.valid.end())
          bits_cell = fmt::format("{:.4f}", analysis::nats_to_bits(it->second));
        md << " " << bits_cell << " |";
      }
    }
    if (bits) csv << "," << bits_cell;
    csv << "\n";
    md << "\n";
  }
}

}  // namespace relpos
