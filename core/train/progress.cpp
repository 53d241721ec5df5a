#include "core/train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "core/util/errors.h"
#include "core/util/text_util.h"

namespace relpos {

ProgressLine::ProgressLine(int64_t total_steps, bool quiet)
    : total_(total_steps), quiet_(quiet), tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()) {}

void ProgressLine::update(int64_t step, double loss, double tokens_per_s,
                          const std::string& valid) {
  if (quiet_) return;
  const auto now = std::chrono::steady_clock::now();
  if (start_step_ < 0) {
    start_step_ = step;
    start_ = now;
  }
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = step > start_step_ ? elapsed / static_cast<double>(step - start_step_) : NAN;
  const double eta = rate * static_cast<double>(total_ - step);
  std::string line = fmt::format("step {}/{}  loss {:.4f}  {}{:.0f} tok/s  ETA {}", step, total_,
                                 loss, valid.empty() ? "" : valid + "  ", tokens_per_s,
                                 format_duration(eta));
  if (tty_) {
    std::cerr << "\r\033[K" << line << std::flush;
    open_line_ = true;
  } else {
    std::cerr << line << "\n";
  }
}

void ProgressLine::message(const std::string& text) {
  if (quiet_) return;
  if (open_line_) std::cerr << "\r\033[K";
  std::cerr << text << "\n";
  open_line_ = false;
}

void ProgressLine::finish() {
  if (open_line_) std::cerr << "\n";
  open_line_ = false;
}

namespace {

// The step of a line that is a metrics record ({"step":N,...}), else nullopt.
std::optional<int64_t> metrics_record_step(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const auto step = j.find("step");
  if (step == j.end() || !step->is_number_integer()) return std::nullopt;
  return step->get<int64_t>();
}

// A line that records an event rather than a step ({"event":"restart",...}: written by the
// data-parallel launcher between attempts, core/dist/elastic.h).
bool is_event_line(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("event") && !j.contains("step");
}

}  // namespace

MetricsLog::MetricsLog(const std::string& path, int64_t keep_up_to_step) : path_(path) {
  if (keep_up_to_step >= 0) {
    // Resuming: keep the lines up to the checkpoint's step. The kept lines go to a temporary
    // file renamed over the log, so a process killed here leaves the old log or the new one.
    std::string kept;
    {
      std::ifstream in(path);
      std::string line;
      int64_t number = 0;
      bool more = static_cast<bool>(std::getline(in, line));
      while (more) {
        ++number;
        std::string next;
        more = static_cast<bool>(std::getline(in, next));
        const std::optional<int64_t> step = metrics_record_step(line);
        // Events stay where they were written: between the steps before and after them.
        const bool event = !step && is_event_line(line);
        if ((step && *step <= keep_up_to_step) || event) kept += line + "\n";
        // Only the last line can be torn by a crash; anything else is damage worth a word.
        if (!step && !event && more)
          damaged_.push_back(fmt::format("line {}: '{}'", number,
                                         line.size() > 60 ? line.substr(0, 57) + "..." : line));
        line = std::move(next);
      }
    }
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << kept;
      out.flush();
      if (!out) throw RunError(fmt::format("{}: cannot write the metrics log", tmp));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw RunError(fmt::format("{}: cannot replace the metrics log", path));
    out_.open(path, std::ios::app);
  } else {
    out_.open(path, std::ios::trunc);
  }
  if (!out_) throw RunError(fmt::format("{}: cannot write the metrics log", path));
}

void MetricsLog::write(int64_t step, const std::map<std::string, double>& values) {
  std::ostringstream s;
  s << "{\"step\":" << step;
  for (const auto& [k, v] : values) {
    if (std::isfinite(v))
      s << ",\"" << k << "\":" << fmt::format("{}", v);
    else
      s << ",\"" << k << "\":null";
  }
  s << "}";
  out_ << s.str() << "\n";
  out_.flush();
  if (!out_)
    throw RunError(fmt::format("{}: cannot write the metrics log (disk full?)", path_),
                   "free some space, then continue with relpos train --resume");
}

}  // namespace relpos
