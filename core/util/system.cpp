#include "core/util/system.h"

#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

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

std::string git_commit() {
  const std::string built = build_commit();
  if (built != "unknown") return built;
  // A copy of the tree without its .git (as a GPU machine receives it) names its commit here.
  const char* given = std::getenv("RELPOS_COMMIT");
  return given && *given ? std::string(given) : built;
}

std::string torch_version() { return TORCH_VERSION; }

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? std::string() : line.substr(colon + 2);
    }
  return {};
}

std::string cpu_isa_level() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4";
  if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3";
  if (__builtin_cpu_supports("x86-64-v2")) return "x86-64-v2";
  return "x86-64";
#else
  return {};
#endif
}

std::string machine_summary() {
  std::string model = cpu_model();
  if (model.empty()) model = "unknown CPU";
  std::string out = model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores";
  // Two VMs both called "AMD EPYC" ran different vector kernels (docs/experiments.md, "Runs repeat
  // exactly on one machine"): the level tells them apart.
  if (const std::string isa = cpu_isa_level(); !isa.empty()) out += " (" + isa + ")";
  // The GPUs, so that a report made on a GPU machine says so (its runs' config says `device`).
  const auto gpus = torch::cuda::is_available() ? torch::cuda::device_count() : 0;
  if (gpus == 0) return out;
  std::vector<std::string> names;
  if (const std::string smi = find_on_path("nvidia-smi"); !smi.empty()) {
    const ChildResult r = run_child(smi, {"--query-gpu=name", "--format=csv,noheader"}, {10, 0});
    std::stringstream lines(r.ok() ? r.out : std::string());
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) names.push_back(line);
  }
  // nvidia-smi lists every GPU of the machine; CUDA_VISIBLE_DEVICES may show this process fewer.
  if (names.size() != gpus) names.assign(gpus, "CUDA device");
  out += fmt::format(", {} GPU{}: ", gpus, gpus == 1 ? "" : "s");
  for (size_t i = 0; i < names.size();) {  // "2 x NVIDIA H200" for equal neighbours
    size_t j = i;
    while (j < names.size() && names[j] == names[i]) ++j;
    out += (i == 0 ? "" : ", ") + (j - i > 1 ? fmt::format("{} x ", j - i) : "") + names[i];
    i = j;
  }
  return out;
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    const std::string candidate = (d.empty() ? std::string(".") : d) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

}  // namespace relpos
