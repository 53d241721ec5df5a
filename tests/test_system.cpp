// What relpos says about the machine (core/util/system.h): the x86-64 level, against the
// processor's flags as the kernel lists them in /proc/cpuinfo.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/util/system.h"

using namespace relpos;

namespace {

// The flags of the first processor in /proc/cpuinfo; empty when there is none.
std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) {
      std::stringstream words(line.substr(line.find(':') + 1));
      std::set<std::string> out;
      for (std::string w; words >> w;) out.insert(w);
      return out;
    }
  return {};
}

bool has_all(const std::set<std::string>& flags, const std::vector<std::string>& need) {
  for (const auto& f : need)
    if (!flags.count(f)) return false;
  return true;
}

}  // namespace

TEST_CASE("system: the x86-64 level follows the processor's flags, and the machine summary names it") {
#if !defined(__x86_64__)
  CHECK(cpu_isa_level().empty());
#else
  const auto flags = cpuinfo_flags();
  if (flags.empty()) {
    MESSAGE("no /proc/cpuinfo flags: level check skipped");
    return;
  }
  // The levels of the x86-64 psABI, in /proc/cpuinfo's names (abm = LZCNT).
  const bool v2 = has_all(flags, {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"});
  const bool v3 = v2 && has_all(flags, {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm",
                                        "movbe", "xsave"});
  const bool v4 = v3 && has_all(flags, {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"});
  const std::string expected = v4 ? "x86-64-v4" : v3 ? "x86-64-v3" : v2 ? "x86-64-v2" : "x86-64";
  CHECK(cpu_isa_level() == expected);
  CHECK(machine_summary().find(" cores (" + expected + ")") != std::string::npos);
#endif
}
