#include "core/util/system.h"

#include <torch/version.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>

#include "core/util/errors.h"
#include "core/util/process.h"

namespace relpos {

double physical_memory_mb() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * page / (1024.0 * 1024.0) : 0.0;
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    throw RunError(std::string("cannot find the relpos executable (/proc/self/exe): ") +
                   std::strerror(errno));
  return std::string(buf, static_cast<size_t>(n));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

// What the shell command `cmd` prints on stdout, without trailing newlines; "" when it fails to
// start. Its stderr is captured and dropped.
std::string run_capture(const std::string& cmd) {
  std::string out;
  try {
    out = run_child({"/bin/sh", "-c", cmd}, SpawnOptions{}).out;
  } catch (const RunError&) {
    return out;
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

std::string git_commit() { return git_commit_of(RELPOS_SOURCE_DIR); }

std::string git_commit_of(const std::string& dir) {
  std::string head = run_capture("git -C '" + dir + "' rev-parse HEAD 2>/dev/null");
  if (head.empty()) return "unknown";
  // results/ holds outputs (the committed experiment results, rewritten by the runs
  // themselves) and docs/ and *.md files prose: changes there do not make the code "dirty".
  const std::string dirty = run_capture(
      "git -C '" + dir +
      "' status --porcelain --untracked-files=no -- . ':(exclude)results' ':(exclude)docs' "
      "':(exclude)*.md' 2>/dev/null");
  return dirty.empty() ? head : head + "-dirty";
}

std::string torch_version() { return TORCH_VERSION; }

std::string machine_summary() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) model = line.substr(c + 2);
      break;
    }
  }
  if (model.empty()) model = "unknown CPU";
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores";
}

}  // namespace relpos
