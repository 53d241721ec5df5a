#include "core/dist/elastic.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/io/checkpoint.h"
#include "core/io/run_paths.h"
#include "core/util/errors.h"
#include "core/util/signals.h"
#include "core/util/system.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

using Json = nlohmann::json;

std::optional<fs::file_time_type> modified(const std::string& path) {
  std::error_code ec;
  const auto t = fs::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return t;
}

Json to_json(const RestartRecord& r) {
  return Json{{"attempt", r.attempt},
              {"time", r.time},
              {"resumed_from_step", r.resumed_from_step},
              {"reason", r.reason}};
}

// The event line of a restart, appended while no rank runs (rank 0 alone writes the log
// otherwise); the resumed rank 0 keeps it when it drops the lines past its checkpoint.
void append_restart_event(const std::string& dir, const RestartRecord& r) {
  Json j = to_json(r);
  j["event"] = "restart";
  const std::string path = run_metrics_path(dir);
  std::ofstream out(path, std::ios::app);
  out << j.dump() << "\n";
  out.flush();
  if (!out) throw RunError(fmt::format("{}: cannot append the restart record (disk full?)", path));
}

}  // namespace

ElasticResult launch_elastic(const ElasticOptions& o) {
  if (o.max_restarts < 0)
    throw ConfigError(fmt::format("--max-restarts {} (expected >= 0)", o.max_restarts));
  const std::string checkpoint = run_checkpoint_path(o.run_dir);
  const std::string config = run_config_path(o.run_dir);
  // What was there before: a restart needs something this launch wrote (see the header).
  const auto checkpoint_before = modified(checkpoint);
  const auto config_before = modified(config);
  const bool resumed_launch = o.fresh_args.empty();

  ElasticResult res;
  LaunchOptions lo = o.launch;
  while (true) {
    lo.restart_count = static_cast<int64_t>(res.restarts.size());
    res.last = launch_local(lo);
    if (res.last.ok() || res.last.interrupted) return res;
    res.failures.push_back(res.last.failure());
    if (static_cast<int64_t>(res.restarts.size()) >= o.max_restarts) return res;

    RestartRecord rec;
    rec.attempt = static_cast<int64_t>(res.restarts.size()) + 1;
    rec.reason = res.failures.back();
    const auto checkpoint_now = modified(checkpoint);
    const auto config_now = modified(config);
    if (checkpoint_now && (resumed_launch || checkpoint_now != checkpoint_before)) {
      try {
        rec.resumed_from_step = checkpoint_step(checkpoint);
      } catch (const Error& e) {
        res.not_restarted = fmt::format("its checkpoint cannot be read: {}", e.what());
        return res;
      }
      lo.args = o.resume_args;
    } else if (!resumed_launch && config_now && config_now != config_before) {
      rec.resumed_from_step = 0;  // no checkpoint yet: the run starts over
      lo.args = o.fresh_args;
    } else {
      res.not_restarted =
          "the ranks failed before this launch wrote a checkpoint or config into the run folder, "
          "so a restart would fail the same way";
      return res;
    }
    if (interrupt_requested()) return res;  // Ctrl-C between attempts: stop here
    rec.time = utc_timestamp();
    if (o.write_records) append_restart_event(o.run_dir, rec);
    std::cerr << fmt::format("relpos: attempt {} failed: {}\nrelpos: restart {} of {}: all ranks "
                             "{}\n",
                             rec.attempt, rec.reason, rec.attempt, o.max_restarts,
                             rec.resumed_from_step > 0
                                 ? fmt::format("resume from the checkpoint of step {}",
                                               rec.resumed_from_step)
                                 : std::string("start over (no checkpoint yet)"));
    res.restarts.push_back(rec);
  }
}

void record_restarts_in_result(const std::string& dir, const std::vector<RestartRecord>& restarts) {
  const std::string path = run_result_path(dir);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Json j = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!in || !j.is_object())
    throw RunError(fmt::format("{}: cannot read the finished run's result to add its restarts", path));
  j["restarts"] = Json::array();
  for (const auto& r : restarts) j["restarts"].push_back(to_json(r));
  // A temporary file renamed over the result: a reader sees the old one or the new one.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    out.flush();
    if (!out) throw RunError(fmt::format("{}: cannot write (disk full?)", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw RunError(fmt::format("{}: cannot replace it with {}", path, tmp));
}

}  // namespace relpos
