#include "core/util/threads.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "core/util/errors.h"

namespace relpos {
namespace {

// OpenBLAS is looked up at run time: a LibTorch built on MKL (or a process whose sgemm_ comes
// from another BLAS) has no openblas_* symbols, and then there is nothing to configure.
template <class F>
F openblas_symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

int physical_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return available_cpus();
  std::set<std::pair<int, int>> cores;  // (package, core) of every CPU we may run on
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    std::ifstream pkg(dir + "physical_package_id"), core(dir + "core_id");
    int p = -1, k = -1;
    if (!(pkg >> p) || !(core >> k)) return available_cpus();
    cores.insert({p, k});
  }
  return cores.empty() ? available_cpus() : static_cast<int>(cores.size());
}

// threads: 0. With two CPUs or fewer, one thread: on the 2-core machine this project is developed
// on, two intra-op threads made a training step of the quickstart model 1.1-3.8x slower than one
// (docs/performance.md), because OpenMP's worker spins while the other core is busy with
// something else (another run of a sweep, a compiler). Beyond that, one thread per physical core:
// hyper-threads add little to BLAS-bound work.
int automatic_threads() {
  if (available_cpus() <= 2) return 1;
  return std::max(1, physical_cores());
}

int automatic_threads_shared(int64_t processes) {
  if (processes <= 1) return automatic_threads();
  return static_cast<int>(std::max<int64_t>(1, physical_cores() / processes));
}

ThreadSettings configure_threads(int64_t requested) {
  if (requested < 0)
    throw ConfigError("threads: out of range (got " + std::to_string(requested) +
                      "; expected 0 for automatic or a positive count)");
  ThreadSettings s;
  s.available = available_cpus();
  // More compute threads than CPUs only slows a run down, and a huge count (threads: 100000)
  // spent minutes creating threads, deaf to SIGTERM: refuse it.
  if (requested > s.available)
    throw ConfigError("threads: out of range (got " + std::to_string(requested) +
                          "; expected 0 for automatic or at most the " +
                          std::to_string(s.available) + " CPUs this process may run on)",
                      "leave threads at 0 to pick the count automatically");
  s.automatic = requested == 0;
  const int n = s.automatic ? automatic_threads() : static_cast<int>(requested);
  at::set_num_threads(n);
  s.torch_threads = at::get_num_threads();
  // Subnormal floats flushed to zero, on this thread and the intra-op threads (the setting is
  // per thread). A softmax over strongly negative scores (ALiBi's -m|i-j| at long T) leaves
  // exp() results below 1.2e-38, and x86 arithmetic on subnormals is many times slower; their
  // contribution to a probability is below float32's resolution anyway. docs/performance.md
  // has the measurement.
  at::globalContext().setFlushDenormal(true);
  at::parallel_for(0, n, 1, [](int64_t, int64_t) { at::globalContext().setFlushDenormal(true); });
  // OpenBLAS keeps its own pool (OPENBLAS_NUM_THREADS, read once at load, defaults to every
  // core). ATen's batched matmuls call sgemm_ from its n intra-op threads, so an OpenBLAS pool
  // of its own on top would run up to n x cores threads: give BLAS the same count.
  using SetFn = void (*)(int);
  using GetFn = int (*)();
  if (auto set = openblas_symbol<SetFn>("openblas_set_num_threads")) {
    set(n);
    if (auto get = openblas_symbol<GetFn>("openblas_get_num_threads")) s.blas_threads = get();
  }
  return s;
}

std::string blas_library() {
  void* sym = dlsym(RTLD_DEFAULT, "sgemm_");
  if (!sym) return "";
  Dl_info info;
  if (dladdr(sym, &info) == 0 || !info.dli_fname) return "";
  return info.dli_fname;
}

std::string openblas_config() {
  using ConfigFn = char* (*)();
  auto get = openblas_symbol<ConfigFn>("openblas_get_config");
  return get ? std::string(get()) : std::string();
}

}  // namespace relpos
