#pragma once
// Child processes run `jobs` at a time: `relpos eval` of a folder's runs, and an experiment's
// length evaluation, share this pool.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/util/process.h"

namespace relpos {

// Runs each argv with run_child (stdout and stderr merged), at most `jobs` at once, and calls
// `done(i, result)` for each as it finishes, one call at a time. Once `stop()` returns true no
// further child is started (those left keep a default ChildResult: not ok). Returns the results
// in the order of `argvs`.
std::vector<ChildResult> run_children(const std::vector<std::vector<std::string>>& argvs,
                                      int64_t jobs,
                                      const std::function<void(size_t, const ChildResult&)>& done,
                                      const std::function<bool()>& stop = {});

}  // namespace relpos
