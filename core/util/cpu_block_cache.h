// A caching CPU allocator for large tensors (docs/performance.md, "CPU block cache").
//
// Training repeats the same tensor shapes every step. With glibc malloc each large tensor is
// either its own mmap (above the dynamic mmap threshold, at most 32 MB), which the kernel
// zero-fills page by page on every step, or a heap chunk that a later, differently sized request
// cannot reuse, so the heap grows past what is alive. The block cache serves every request of
// at least `min_block_bytes` from blocks it maps itself and keeps after they are freed: a later
// request of the same size (up to 1/8 larger) takes a kept block, so a steady training step maps
// nothing and its resident memory stays close to the tensors it holds. Idle blocks are unmapped,
// least recently freed first, when they would otherwise exceed the most memory ever alive in
// blocks at once (so the cache at most doubles the large-tensor peak), and all of them when a
// mapping fails. Smaller requests go to LibTorch's own CPU allocator.
//
// Where the kernel offers transparent huge pages (Linux THP in `always` or `madvise` mode), blocks
// of a huge page or more are mapped on a huge page boundary and advised to use them: fewer TLB
// misses made a bench step at T=512 take 0.63x the time on a 2-CPU VM and removed most of the speed
// difference between processes (docs/performance.md). The memory used is the same.
//
// Installed by `train`, `eval` and `bench` unless the config says `cpu_allocator: system`
// (`cache_small_pages`: the cache without huge pages). Results do not depend on it: every tensor
// is written before it is read.
#pragma once

#include <cstdint>
#include <string>

namespace relpos {

struct CpuBlockCacheStats {
  int64_t live_bytes = 0;         // in blocks held by tensors now
  int64_t idle_bytes = 0;         // in blocks kept for reuse
  int64_t peak_live_bytes = 0;    // most live_bytes ever
  int64_t peak_mapped_bytes = 0;  // most live_bytes + idle_bytes ever
  int64_t hits = 0;               // requests served by an idle block
  int64_t maps = 0;               // requests that mapped a new block
  int64_t unmaps = 0;             // idle blocks given back to the system
  int64_t huge_advised = 0;       // mapped blocks the kernel accepted huge page advice for
};

constexpr int64_t kDefaultMinBlockBytes = int64_t{1} << 20;

// Makes the block cache LibTorch's CPU allocator (first call in a process; later calls do
// nothing and return false). Tensors allocated before the call keep their own deleter.
// `huge_pages`: align and advise blocks for transparent huge pages where the kernel has them.
bool install_cpu_block_cache(int64_t min_block_bytes = kDefaultMinBlockBytes,
                             bool huge_pages = true);
bool cpu_block_cache_installed();

// The huge page size blocks are aligned to and advised for; 0 when they are not (the cache is not
// installed, was installed without huge pages, or the kernel has no transparent huge pages).
int64_t cpu_block_cache_huge_page_bytes();

// The kernel's transparent huge page mode for anonymous memory ("always", "madvise", "never"),
// "unavailable" where it has none. The cache uses huge pages in the first two.
std::string transparent_huge_pages_mode();

// Applies the config key `cpu_allocator`: "cache" installs the block cache, "cache_small_pages"
// installs it without huge pages, "system" leaves LibTorch's allocator. Throws ConfigError for
// another value.
void apply_cpu_allocator(const std::string& setting);

CpuBlockCacheStats cpu_block_cache_stats();

// Unmaps every idle block (a no-op when the cache is not installed).
void release_idle_cpu_blocks();

}  // namespace relpos
