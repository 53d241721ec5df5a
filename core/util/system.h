// Facts about the environment: time, git commit, library versions, the machine's memory, the
// running executable.
#pragma once

#include <chrono>
#include <string>

namespace relpos {

// Seconds of the steady clock since `t0`.
double seconds_since(std::chrono::steady_clock::time_point t0);
std::string utc_timestamp();      // "2026-11-22T17:45:03Z"
// The commit this binary was built from, compiled in by scripts/build_commit.cmake: HEAD of the
// source tree as the build started, +"-dirty" when tracked files other than results/, docs/
// and *.md differed from it; "unknown" when the tree had no .git. Edits made after the build
// (a branch switched, a file changed) do not change it: it names the code that runs.
const char* build_commit();
// What runs, reports and benchmarks record: build_commit(), or where that is "unknown",
// $RELPOS_COMMIT when set (a copy of the tree sent to another machine), else "unknown".
std::string git_commit();
std::string torch_version();      // "1.13.0"
// The processor's "model name" in /proc/cpuinfo ("Intel(R) Xeon(R) Processor"), "" if none.
std::string cpu_model();
// "Intel(R) Xeon(R) Processor, 2 cores (x86-64-v3)" (from /proc/cpuinfo and cpu_isa_level()),
// followed by the CUDA GPUs where LibTorch sees any: ", 1 GPU: NVIDIA H200" (names from
// nvidia-smi, else "CUDA device").
std::string machine_summary();

// The x86-64 micro-architecture level of this processor: "x86-64-v4" (AVX-512), "x86-64-v3"
// (AVX2, FMA), "x86-64-v2" or "x86-64"; "" on other architectures. It decides which vector
// kernels LibTorch and relpos run, and so the last digits of a run: machine_summary() names it.
std::string cpu_isa_level();
double physical_memory_mb();      // physical memory of the machine in MB (0 if unknown)
// The first executable NAME in the folders of $PATH, or "" when there is none.
std::string find_on_path(const std::string& name);
// Absolute path of the running executable (/proc/self/exe), for child processes of relpos.
std::string self_executable();

}  // namespace relpos
