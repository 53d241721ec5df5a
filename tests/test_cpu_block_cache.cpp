// The CPU block cache (core/util/cpu_block_cache.h): blocks are reused, never shared by two
// live tensors, idle memory stays bounded, and training gives the same losses with and without
// it. Each ctest case is its own process, so installing the cache here touches no other test.
#include <doctest/doctest.h>
#include <torch/types.h>

#include <set>

#include "core/util/cpu_block_cache.h"
#include "tests/tiny_run.h"

using namespace relpos;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// The cache can be installed once per process. ctest runs each case in its own process; run
// as one process (relpos_tests without a filter), every case after the first is skipped.
bool fresh_process() {
  if (!cpu_block_cache_installed()) return true;
  MESSAGE("skipped: the block cache is already installed in this process");
  return false;
}

// A float tensor of `bytes` bytes filled with `value`.
torch::Tensor block_of(int64_t bytes, float value) {
  return torch::full({bytes / 4}, value, torch::kFloat);
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
