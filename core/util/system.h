// Facts about the environment: time, git commit, library versions, the machine's memory, the
// running executable.
#pragma once

#include <chrono>
#include <string>

namespace relpos {

// Seconds of the steady clock since `t0`.
double seconds_since(std::chrono::steady_clock::time_point t0);
std::string utc_timestamp();      // "2026-11-22T17:45:03Z"
// HEAD of the source tree, +"-dirty" when tracked files other than results/, docs/ and *.md
// differ from it, or "unknown" outside a git checkout. git_commit_of: the same for DIR.
std::string git_commit();
std::string git_commit_of(const std::string& dir);
std::string torch_version();      // "1.13.0"
std::string machine_summary();    // "Intel(R) Xeon(R) Processor, 2 cores" (from /proc/cpuinfo)
double physical_memory_mb();      // physical memory of the machine in MB (0 if unknown)
// Absolute path of the running executable (/proc/self/exe), for child processes of relpos.
std::string self_executable();

}  // namespace relpos
