// Facts about the environment a run records: time, git commit, library versions.
#pragma once

#include <string>

namespace relpos {

std::string utc_timestamp();      // "2026-11-22T17:45:03Z"
std::string git_commit();         // HEAD of the source tree (+"-dirty" when tracked files outside results/ changed), or "unknown"
std::string torch_version();      // "1.13.0"
std::string machine_summary();    // "Intel(R) Xeon(R) Processor, 2 cores" (from /proc/cpuinfo)

}  // namespace relpos
