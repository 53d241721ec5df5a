// Intra-op thread settings for LibTorch and the BLAS underneath it, set together so that they
// do not oversubscribe the cores (docs/scaling.md). The trainer and `relpos bench` call
// configure_threads() once, before any tensor work.
#pragma once

#include <cstdint>
#include <string>

namespace relpos {

struct ThreadSettings {
  int torch_threads = 1;  // at::get_num_threads() after the call
  int blas_threads = -1;  // OpenBLAS threads after the call; -1 when OpenBLAS is not loaded
  int available = 1;      // CPUs this process may run on (sched_getaffinity)
  bool automatic = false; // requested == 0
};

// CPUs this process may run on (its affinity mask; falls back to hardware_concurrency()).
int available_cpus();

// Physical cores among those CPUs (distinct package/core ids in sysfs; available_cpus() when
// the topology cannot be read).
int physical_cores();

// The thread count `threads: 0` resolves to: 1 with two CPUs or fewer, else physical_cores()
// (the measurement behind it is in docs/performance.md).
int automatic_threads();

// The automatic thread count of each of `processes` processes that run at once on this
// process's CPUs (a sweep's --jobs): automatic_threads() for one; for more, the physical cores
// among those CPUs split between them, at least 1 each (as data-parallel ranks split them).
int automatic_threads_shared(int64_t processes);

// Sets LibTorch's intra-op threads and OpenBLAS's threads to `requested` (0: automatic), and
// flushes subnormal floats to zero on those threads. Throws ConfigError for a negative count or
// one above available_cpus().
ThreadSettings configure_threads(int64_t requested);

// The shared library that provides sgemm_ in this process (the BLAS LibTorch calls), e.g.
// "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"; "" when no sgemm_ is loaded.
std::string blas_library();

// OpenBLAS's openblas_get_config() string, or "" when OpenBLAS is not loaded.
std::string openblas_config();

}  // namespace relpos
