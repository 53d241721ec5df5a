#include "core/util/threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <thread>

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

int automatic_threads() { return available_cpus(); }

ThreadSettings configure_threads(int64_t requested) {
  if (requested < 0)
    throw ConfigError("threads: out of range (got " + std::to_string(requested) +
                      "; expected 0 for automatic or a positive count)");
  ThreadSettings s;
  s.available = available_cpus();
  s.automatic = requested == 0;
  const int n = s.automatic ? automatic_threads() : static_cast<int>(requested);
  at::set_num_threads(n);
  s.torch_threads = at::get_num_threads();
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
