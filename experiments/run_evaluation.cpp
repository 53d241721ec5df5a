#include "experiments/run_evaluation.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "core/io/run_paths.h"
#include "core/util/child_pool.h"
#include "core/util/errors.h"
#include "core/util/system.h"
#include "core/config/fields.h"

namespace relpos {

std::vector<ChildResult> evaluate_runs(
    const std::vector<std::string>& runs,
    const std::function<std::vector<std::string>(const std::string&)>& options_of, int64_t jobs,
    const std::string& binary,
    const std::function<void(size_t, size_t, const ChildResult&)>& done,
    const std::function<bool()>& stop) {
  const std::string program = binary.empty() ? self_executable() : binary;
  std::vector<std::vector<std::string>> argvs;
  for (const auto& r : runs) {
    argvs.push_back({program, "eval", "--run", r});
    const auto options = options_of(r);
    argvs.back().insert(argvs.back().end(), options.begin(), options.end());
  }
  size_t finished = 0;
  return run_children(
      argvs, jobs, [&](size_t i, const ChildResult& r) { done(i, ++finished, r); }, stop);
}

int evaluate_runs_below(const std::string& root, const std::vector<std::string>& options,
                        int64_t jobs) {
  std::vector<std::string> runs, unfinished;
  for (const auto& r : run_folders_below(root)) (run_finished(r) ? runs : unfinished).push_back(r);
  if (runs.empty())
    throw ConfigError(
        fmt::format("eval: {}: not a run folder (no run.h5), and no finished run folder below it{}",
                    root,
                    unfinished.empty() ? ""
                                       : fmt::format(" ({} unfinished: no result.json)",
                                                     unfinished.size())),
        "give a run folder written by relpos train, or a sweep or experiment folder holding some");
  for (const auto& u : unfinished)
    std::cout << fmt::format("skipped {}: unfinished (no result.json)\n", u);
  std::cout << fmt::format("evaluating {} runs under {}, {} at a time\n", runs.size(), root,
                           std::min<int64_t>(jobs, static_cast<int64_t>(runs.size())))
            << std::flush;
  const auto results = evaluate_runs(
      runs, [&](const std::string&) { return options; }, jobs, "",
      [&](size_t i, size_t finished, const ChildResult& r) {
        std::cout << fmt::format("[{}/{}] {}{}\n{}", finished, runs.size(), runs[i],
                                 r.ok() ? "" : " FAILED (" + r.describe(0) + ")", r.out)
                  << std::flush;
      });
  int status = 0;
  std::vector<std::string> failed;
  for (size_t i = 0; i < runs.size(); ++i)
    if (!results[i].ok()) {
      if (status == 0) status = results[i].status();
      failed.push_back(runs[i]);
    }
  std::cout << fmt::format("evaluated {} of {} runs under {}{}\n", runs.size() - failed.size(),
                           runs.size(), root,
                           failed.empty() ? "" : "; failed: " + join_names(failed));
  return status;
}

}  // namespace relpos
