// Exact CPU tensor memory of a `relpos bench` child: an allocator that wraps LibTorch's CPU
// allocator and counts the bytes of live tensors and their peak. Unlike peak RSS it leaves out
// the libraries, the allocator's own caching and the BLAS buffers, so it shows what a variant's
// tensors cost.
#pragma once

#include <cstdint>

namespace relpos {

// Installs the counting allocator as LibTorch's CPU allocator (once per process; later calls do
// nothing). Tensors allocated before the call are not counted.
void track_cpu_tensor_memory();

// Bytes of CPU tensors alive now, and the most alive at once since the last reset.
int64_t cpu_tensor_bytes();
int64_t cpu_tensor_peak_bytes();
void reset_cpu_tensor_peak();

}  // namespace relpos
