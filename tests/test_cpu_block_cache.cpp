// The CPU block cache (core/util/cpu_block_cache.h): blocks are reused, never shared by two
// live tensors, idle memory stays bounded, large blocks carry the kernel's huge page advice, and
// training gives the same losses with and without it. Each test case here is its own ctest entry
// and process (tests/CMakeLists.txt), so installing the cache touches no other test.
#include <doctest/doctest.h>
#include <torch/types.h>

#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/util/cpu_block_cache.h"
#include "tests/tiny_run.h"

using namespace relpos;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// The cache can be installed once per process. ctest runs each case in its own process; run
// as one process (relpos_core_tests without a filter), every case after the first is skipped.
bool fresh_process() {
  if (!cpu_block_cache_installed()) return true;
  MESSAGE("skipped: the block cache is already installed in this process");
  return false;
}

// A float tensor of `bytes` bytes filled with `value`.
torch::Tensor block_of(int64_t bytes, float value) {
  return torch::full({bytes / 4}, value, torch::kFloat);
}

// The kernel's own account of the mapping that contains `p` (/proc/self/smaps): its VmFlags
// line, and its AnonHugePages in kB. Empty flags when /proc has no such mapping.
struct MappingFacts {
  std::string flags;
  int64_t anon_huge_kb = 0;
};

MappingFacts mapping_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  MappingFacts facts;
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    // A mapping's header: "start-end perms offset dev inode [path]", addresses in hex.
    const size_t dash = line.find('-');
    if (dash != std::string::npos && dash > 0 &&
        line.find_first_not_of("0123456789abcdef") == dash) {
      if (inside) break;
      const uintptr_t start = std::stoull(line.substr(0, dash), nullptr, 16);
      const uintptr_t end = std::stoull(line.substr(dash + 1), nullptr, 16);
      inside = start <= addr && addr < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      facts.flags = line;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      std::istringstream(line.substr(14)) >> facts.anon_huge_kb;
    }
  }
  return facts;
}

bool has_flag(const std::string& vm_flags, const std::string& flag) {
  return (vm_flags + " ").find(" " + flag + " ") != std::string::npos;
}

// The huge page size read from sysfs here, independently of the cache: 0 where the kernel
// offers none for anonymous memory.
int64_t kernel_huge_page_bytes() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(mode, line) || line.find("[never]") != std::string::npos) return 0;
  std::ifstream size("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
  int64_t bytes = 0;
  size >> bytes;
  return bytes;
}

}  // namespace

TEST_CASE("cpu block cache: a freed block serves the next request of its size, never a live one") {
  if (!fresh_process()) return;
  REQUIRE(install_cpu_block_cache(kMiB));
  CHECK_FALSE(install_cpu_block_cache(kMiB));  // once per process
  CHECK(cpu_block_cache_installed());
  const CpuBlockCacheStats s0 = cpu_block_cache_stats();

  void* first = nullptr;
  {
    torch::Tensor a = block_of(4 * kMiB, 1.f);
    first = a.data_ptr();
    const CpuBlockCacheStats s1 = cpu_block_cache_stats();
    CHECK(s1.maps == s0.maps + 1);
    CHECK(s1.live_bytes == s0.live_bytes + 4 * kMiB);
  }
  CHECK(cpu_block_cache_stats().idle_bytes >= 4 * kMiB);

  // Same size again: the freed block, without a new mapping; a second one at the same time gets
  // another block.
  const int64_t maps_before = cpu_block_cache_stats().maps;
  torch::Tensor b = block_of(4 * kMiB, 2.f);
  torch::Tensor c = block_of(4 * kMiB, 3.f);
  CHECK(b.data_ptr() == first);
  CHECK(c.data_ptr() != first);
  CHECK(cpu_block_cache_stats().maps == maps_before + 1);
  CHECK(cpu_block_cache_stats().hits >= 1);
  // Both keep their own contents.
  CHECK(b.eq(2.f).all().item<bool>());
  CHECK(c.eq(3.f).all().item<bool>());

  // A request more than 1/8 smaller than an idle block does not take it.
  b.reset();
  torch::Tensor small_req = block_of(2 * kMiB, 4.f);
  CHECK(small_req.data_ptr() != first);

  // Below the threshold: LibTorch's own allocator, not counted.
  const CpuBlockCacheStats before_small = cpu_block_cache_stats();
  torch::Tensor tiny = block_of(4096, 5.f);
  CHECK(cpu_block_cache_stats().live_bytes == before_small.live_bytes);
  CHECK(tiny.sum().item<float>() == doctest::Approx(5.f * 1024));
}

TEST_CASE("cpu block cache: idle blocks never exceed the peak of live blocks, and are released") {
  if (!fresh_process()) return;
  REQUIRE(install_cpu_block_cache(kMiB));
  // Shapes that change every round, as with varying lengths: without the bound the idle pool
  // would grow by every size ever seen.
  for (int round = 0; round < 40; ++round) {
    std::vector<torch::Tensor> live;
    for (int k = 0; k < 3; ++k) live.push_back(block_of((2 + round * 3 + k) * kMiB, 1.f));
    const CpuBlockCacheStats s = cpu_block_cache_stats();
    CHECK(s.idle_bytes <= s.peak_live_bytes);
    CHECK(s.peak_mapped_bytes <= 2 * s.peak_live_bytes);
  }
  const CpuBlockCacheStats s = cpu_block_cache_stats();
  CHECK(s.live_bytes == 0);
  CHECK(s.unmaps > 0);
  CHECK(s.idle_bytes <= s.peak_live_bytes);
  release_idle_cpu_blocks();
  CHECK(cpu_block_cache_stats().idle_bytes == 0);
}

TEST_CASE("cpu block cache: a training run gives the same losses with and without it") {
  if (!fresh_process()) return;
  test::TempFolder tmp("block_cache");
  const std::string cache = tmp.str("cache");
  // First with LibTorch's allocator (the cache is not installed yet in this process)...
  auto sets = test::tiny_run(cache, 20);
  sets.push_back("cpu_allocator=system");
  test::train_here(sets, tmp.str("system"));
  REQUIRE_FALSE(cpu_block_cache_installed());
  // ...then with every tensor of 4 KiB or more from the cache, reused from step to step.
  REQUIRE(install_cpu_block_cache(4096));
  sets.back() = "cpu_allocator=cache";
  test::train_here(sets, tmp.str("cache_run"));
  CHECK(cpu_block_cache_stats().hits > 100);

  const auto a = test::logged(tmp.str("system"), "train_loss");
  const auto b = test::logged(tmp.str("cache_run"), "train_loss");
  REQUIRE(a.size() == 20);
  CHECK(a == b);
  CHECK(test::logged(tmp.str("system"), "valid_loss") ==
        test::logged(tmp.str("cache_run"), "valid_loss"));
}

TEST_CASE("cpu block cache: the config key installs it or leaves LibTorch's allocator") {
  if (!fresh_process()) return;
  apply_cpu_allocator("system");
  CHECK_FALSE(cpu_block_cache_installed());
  CHECK_THROWS_AS(apply_cpu_allocator("tcmalloc"), ConfigError);
  apply_cpu_allocator("cache");
  CHECK(cpu_block_cache_installed());
}

TEST_CASE(
    "cpu block cache: blocks of a huge page or more start on one and are advised to use them") {
  if (!fresh_process()) return;
  const int64_t huge = kernel_huge_page_bytes();
  if (huge <= 0 || huge > 32 * kMiB) {
    MESSAGE("not run: this kernel offers no transparent huge pages ("
            << transparent_huge_pages_mode() << ")");
    return;
  }
  REQUIRE(install_cpu_block_cache(kMiB));
  CHECK(cpu_block_cache_huge_page_bytes() == huge);
  // Not a multiple of the huge page: the whole huge pages inside get them, the rest stays small.
  const int64_t bytes = 2 * huge + 3 * 4096;
  torch::Tensor a = block_of(bytes, 7.f);
  const auto addr = reinterpret_cast<uintptr_t>(a.data_ptr());
  CHECK(addr % static_cast<uintptr_t>(huge) == 0);
  CHECK(cpu_block_cache_stats().huge_advised == 1);
  const MappingFacts m = mapping_of(a.data_ptr());
  REQUIRE_MESSAGE(!m.flags.empty(), "no /proc/self/smaps entry holds the block");
  CHECK_MESSAGE(has_flag(m.flags, "hg"), m.flags);
  // Whether the kernel found free huge pages depends on the machine's memory: reported only.
  MESSAGE("AnonHugePages of the block's mapping: " << m.anon_huge_kb << " kB");
  CHECK(a.eq(7.f).all().item<bool>());
  // Below a huge page: no advice.
  torch::Tensor b = block_of(huge / 2, 1.f);
  CHECK(cpu_block_cache_stats().huge_advised == 1);
  CHECK_FALSE(has_flag(mapping_of(b.data_ptr()).flags, "hg"));
}

TEST_CASE("cpu block cache: cache_small_pages maps blocks without huge page advice") {
  if (!fresh_process()) return;
  apply_cpu_allocator("cache_small_pages");
  REQUIRE(cpu_block_cache_installed());
  CHECK(cpu_block_cache_huge_page_bytes() == 0);
  torch::Tensor a = block_of(8 * kMiB, 2.f);
  CHECK(cpu_block_cache_stats().huge_advised == 0);
  const MappingFacts m = mapping_of(a.data_ptr());
  if (!m.flags.empty()) CHECK_FALSE(has_flag(m.flags, "hg"));
  CHECK(a.eq(2.f).all().item<bool>());
}
