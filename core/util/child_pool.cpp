#include "core/util/child_pool.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace relpos {

std::vector<ChildResult> run_children(const std::vector<std::vector<std::string>>& argvs,
                                      int64_t jobs,
                                      const std::function<void(size_t, const ChildResult&)>& done,
                                      const std::function<bool()>& stop) {
  std::vector<ChildResult> results(argvs.size());
  std::atomic<size_t> next{0};
  std::mutex report;
  auto worker = [&] {
    for (size_t i = next++; i < argvs.size() && !(stop && stop()); i = next++) {
      results[i] = run_child(argvs[i], SpawnOptions{}, /*merge_output=*/true);
      std::lock_guard<std::mutex> guard(report);
      if (done) done(i, results[i]);
    }
  };
  std::vector<std::thread> pool;
  for (int64_t j = 0; j < std::min<int64_t>(jobs, static_cast<int64_t>(argvs.size())); ++j)
    pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return results;
}

}  // namespace relpos
