#include "core/bench/tensor_memory.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "core/util/cpu_allocator_base.h"

namespace relpos {
namespace {

std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};
std::mutex g_mutex;
std::unordered_map<void*, int64_t>* g_sizes = nullptr;  // live block -> bytes
c10::DeleterFnPtr g_base_deleter = nullptr;

// Keeps the wrapped allocator's raw interface (context == data), which ATen uses for some
// buffers: the size of each block lives in a side table instead of in the context.
void counting_delete(void* ptr) {
  if (ptr) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_sizes->find(ptr);
    if (it != g_sizes->end()) {
      g_current.fetch_sub(it->second, std::memory_order_relaxed);
      g_sizes->erase(it);
    }
  }
  g_base_deleter(ptr);
}

class CountingAllocator final : public CpuAllocatorBase {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}

  c10::DeleterFnPtr raw_deleter() const override { return &counting_delete; }

 private:
  c10::DataPtr allocate_impl(size_t n) const override {
    // Freed by counting_delete, which passes the block on to the base's raw deleter.
    c10::DataPtr out = allocate_from(base_, n, &counting_delete, "counting allocator");
    void* data = out.get();
    if (data) {
      const auto bytes = static_cast<int64_t>(n);
      {
        std::lock_guard<std::mutex> lock(g_mutex);
        (*g_sizes)[data] = bytes;
      }
      const int64_t now = g_current.fetch_add(bytes, std::memory_order_relaxed) + bytes;
      int64_t peak = g_peak.load(std::memory_order_relaxed);
      while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
      }
    }
    return out;
  }

  c10::Allocator* base_;
};

}  // namespace

void track_cpu_tensor_memory() {
  static bool installed = [] {
    c10::Allocator* base = c10::GetCPUAllocator();
    g_base_deleter = base->raw_deleter();
    TORCH_CHECK(g_base_deleter, "counting allocator: the CPU allocator has no raw deleter");
    g_sizes = new std::unordered_map<void*, int64_t>();  // lives for the whole process
    c10::SetCPUAllocator(new CountingAllocator(base), /*priority=*/100);
    return true;
  }();
  (void)installed;
}

int64_t cpu_tensor_bytes() { return g_current.load(); }
int64_t cpu_tensor_peak_bytes() { return g_peak.load(); }
void reset_cpu_tensor_peak() { g_peak.store(g_current.load()); }

}  // namespace relpos
