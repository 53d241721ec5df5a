#include "core/util/cpu_block_cache.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/util/cpu_allocator_base.h"
#include "core/util/errors.h"

namespace relpos {
namespace {

struct IdleBlock {
  void* ptr;
  size_t bytes;
};

// All state behind one mutex: large requests are a few hundred per training step, so the lock
// costs nothing next to the tensors' arithmetic.
struct CacheState {
  std::mutex mutex;
  size_t min_bytes = 0;
  size_t page = 4096;
  size_t huge_page = 0;  // transparent huge page size when blocks are advised to use them, else 0
  c10::DeleterFnPtr small_delete = nullptr;
  std::unordered_map<void*, size_t> live;  // block -> mapped bytes
  // Idle blocks in the order they were freed (front = oldest), and by size for the look-up.
  std::list<IdleBlock> idle_order;
  std::multimap<size_t, std::list<IdleBlock>::iterator> idle_by_size;
  CpuBlockCacheStats stats;
};

CacheState* g_state = nullptr;  // created once, lives for the whole process

void erase_idle(CacheState& s, std::multimap<size_t, std::list<IdleBlock>::iterator>::iterator it) {
  s.stats.idle_bytes -= static_cast<int64_t>(it->first);
  s.idle_order.erase(it->second);
  s.idle_by_size.erase(it);
}

void unmap_oldest_idle(CacheState& s) {
  const IdleBlock b = s.idle_order.front();
  auto range = s.idle_by_size.equal_range(b.bytes);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second == s.idle_order.begin()) {
      erase_idle(s, it);
      break;
    }
  munmap(b.ptr, b.bytes);
  ++s.stats.unmaps;
}

void unmap_all_idle(CacheState& s) {
  while (!s.idle_order.empty()) unmap_oldest_idle(s);
}

void note_mapped(CacheState& s) {
  s.stats.peak_live_bytes = std::max(s.stats.peak_live_bytes, s.stats.live_bytes);
  s.stats.peak_mapped_bytes =
      std::max(s.stats.peak_mapped_bytes, s.stats.live_bytes + s.stats.idle_bytes);
}

// The kernel's transparent huge page size, or 0 where it has none or uses none for anonymous
// memory ("never"), or where the size is not a power of two of at most 32 MiB (aligning blocks
// to larger pages would waste address space for little gain).
size_t transparent_huge_page_bytes() {
  const std::string mode = transparent_huge_pages_mode();
  if (mode != "always" && mode != "madvise") return 0;
  std::ifstream size("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
  size_t bytes = 0;
  if (!(size >> bytes) || bytes == 0 || (bytes & (bytes - 1)) != 0 || bytes > (size_t{32} << 20))
    return 0;
  return bytes;
}

// Maps `bytes` of anonymous memory. Blocks of at least one huge page start on a huge page
// boundary and are advised to use huge pages: every whole huge page inside the block is then
// backed by one, so a step's tensors take a few hundred TLB entries instead of ~10^5 (on a
// virtual machine each 4 KiB miss is a two-level page walk). The partial huge page at the end
// stays in small pages, so the block uses no more memory than without the advice.
void* map_block(CacheState& s, size_t bytes) {
  const size_t huge = s.huge_page;
  if (huge == 0 || bytes < huge) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  // Over-map by one huge page less a page, then trim both ends to the aligned block.
  const size_t span = bytes + huge - s.page;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + huge - 1) & ~(uintptr_t{huge} - 1);
  const size_t head = aligned - start;
  const size_t tail = span - head - bytes;
  if (head > 0) munmap(raw, head);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  void* p = reinterpret_cast<void*>(aligned);
  // Advice only: a kernel that refuses it (EINVAL without THP support) still gives the memory.
  if (madvise(p, bytes, MADV_HUGEPAGE) == 0) ++s.stats.huge_advised;
  return p;
}

// Returns a block of at least `bytes` (a page multiple), reusing an idle one of at most 1/8
// more, else mapping a new one.
void* take_block(CacheState& s, size_t bytes, size_t* got) {
  auto it = s.idle_by_size.lower_bound(bytes);
  if (it != s.idle_by_size.end() && it->first <= bytes + bytes / 8) {
    void* ptr = it->second->ptr;
    *got = it->first;
    erase_idle(s, it);
    ++s.stats.hits;
    return ptr;
  }
  void* ptr = map_block(s, bytes);
  if (!ptr && !s.idle_order.empty()) {
    unmap_all_idle(s);
    ptr = map_block(s, bytes);
  }
  if (!ptr) return nullptr;
  *got = bytes;
  ++s.stats.maps;
  return ptr;
}

void cache_delete(void* ptr) {
  if (!ptr) return;
  CacheState& s = *g_state;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.live.find(ptr);
    if (it != s.live.end()) {
      const size_t bytes = it->second;
      s.live.erase(it);
      s.stats.live_bytes -= static_cast<int64_t>(bytes);
      s.idle_order.push_back({ptr, bytes});
      s.idle_by_size.emplace(bytes, std::prev(s.idle_order.end()));
      s.stats.idle_bytes += static_cast<int64_t>(bytes);
      // Idle blocks never outgrow the most that was ever alive at once.
      while (s.stats.idle_bytes > s.stats.peak_live_bytes && !s.idle_order.empty())
        unmap_oldest_idle(s);
      return;
    }
  }
  s.small_delete(ptr);  // a small block, from LibTorch's allocator
}

class BlockCacheAllocator final : public CpuAllocatorBase {
 public:
  explicit BlockCacheAllocator(c10::Allocator* small) : small_(small) {}

  c10::DeleterFnPtr raw_deleter() const override { return &cache_delete; }

 private:
  c10::DataPtr allocate_impl(size_t n) const override {
    CacheState& s = *g_state;
    // Small: LibTorch's allocator, freed by cache_delete through that allocator's deleter.
    if (n < s.min_bytes) return allocate_from(small_, n, &cache_delete, "CPU block cache");
    const size_t bytes = (n + s.page - 1) / s.page * s.page;
    std::lock_guard<std::mutex> lock(s.mutex);
    size_t got = 0;
    void* ptr = take_block(s, bytes, &got);
    TORCH_CHECK(ptr, "CPU block cache: cannot map ", n, " bytes: ", std::strerror(errno));
    s.live.emplace(ptr, got);
    s.stats.live_bytes += static_cast<int64_t>(got);
    note_mapped(s);
    return {ptr, ptr, &cache_delete, c10::Device(c10::DeviceType::CPU)};
  }

  c10::Allocator* small_;
};

}  // namespace

bool install_cpu_block_cache(int64_t min_block_bytes, bool huge_pages) {
  static std::mutex once;
  std::lock_guard<std::mutex> lock(once);
  if (g_state) return false;
  c10::Allocator* small = c10::GetCPUAllocator();
  auto* s = new CacheState();
  s->small_delete = small->raw_deleter();
  TORCH_CHECK(s->small_delete, "CPU block cache: LibTorch's CPU allocator has no raw deleter");
  s->min_bytes = static_cast<size_t>(std::max<int64_t>(min_block_bytes, 1));
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) s->page = static_cast<size_t>(page);
  if (huge_pages) s->huge_page = transparent_huge_page_bytes();
  if (s->huge_page != 0 && s->huge_page % s->page != 0) s->huge_page = 0;
  g_state = s;
  // Below the tensor-counting allocator of `relpos bench` (priority 100), which wraps this one.
  c10::SetCPUAllocator(new BlockCacheAllocator(small), /*priority=*/50);
  return true;
}

bool cpu_block_cache_installed() { return g_state != nullptr; }

std::string transparent_huge_pages_mode() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(mode, line)) return "unavailable";
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return line;
  return line.substr(open + 1, close - open - 1);
}

int64_t cpu_block_cache_huge_page_bytes() {
  return g_state ? static_cast<int64_t>(g_state->huge_page) : 0;
}

void apply_cpu_allocator(const std::string& setting) {
  if (setting == "cache")
    install_cpu_block_cache(kDefaultMinBlockBytes, /*huge_pages=*/true);
  else if (setting == "cache_small_pages")
    install_cpu_block_cache(kDefaultMinBlockBytes, /*huge_pages=*/false);
  else if (setting != "system")
    throw ConfigError("cpu_allocator: '" + setting +
                      "' (expected cache, cache_small_pages or system)");
}

CpuBlockCacheStats cpu_block_cache_stats() {
  if (!g_state) return {};
  std::lock_guard<std::mutex> lock(g_state->mutex);
  return g_state->stats;
}

void release_idle_cpu_blocks() {
  if (!g_state) return;
  std::lock_guard<std::mutex> lock(g_state->mutex);
  unmap_all_idle(*g_state);
}

}  // namespace relpos
