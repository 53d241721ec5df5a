#include "analysis/committed_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/process.h"

namespace relpos::analysis {
namespace fs = std::filesystem;

std::set<std::string> git_ignored(const std::string& repo, const std::vector<std::string>& files) {
  std::set<std::string> out;
  if (files.empty()) return out;
  std::error_code ec;
  const fs::path root = fs::absolute(repo, ec).lexically_normal();
  if (ec || !fs::exists(root / ".git", ec)) return out;
  // Paths relative to the work tree, one per line, for `git check-ignore --stdin`, which prints
  // back the ones that are ignored (and not tracked).
  std::vector<std::string> rel;
  for (const auto& f : files) rel.push_back(fs::absolute(f, ec).lexically_normal().lexically_relative(root).generic_string());
  const fs::path list = fs::temp_directory_path() / ("relpos-check-ignore-" + std::to_string(getpid()));
  {
    std::ofstream l(list);
    for (const auto& r : rel) l << r << '\n';
  }
  // Through the process helper (core/util/process.h), as every child of relpos.
  std::set<std::string> ignored;
  try {
    const ChildResult r = run_child({"/bin/sh", "-c",
                                     "git -C '" + root.string() + "' check-ignore --stdin < '" +
                                         list.string() + "'"},
                                    SpawnOptions{});
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      while (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) ignored.insert(line);
    }
  } catch (const RunError&) {
    // No shell to run git: nothing is known to be ignored (as without a repository).
  }
  fs::remove(list, ec);
  for (size_t k = 0; k < files.size(); ++k)
    if (ignored.count(rel[k])) out.insert(files[k]);
  return out;
}

std::set<std::string> unlinkable(const std::string& report_dir,
                                 const std::vector<std::string>& files) {
  std::error_code ec;
  const fs::path results = (fs::path(source_dir()) / "results").lexically_normal();
  const fs::path rel = fs::absolute(report_dir, ec).lexically_normal().lexically_relative(results);
  if (ec || rel.empty() || *rel.begin() == "..") return {};
  return git_ignored(source_dir(), files);
}

}  // namespace relpos::analysis
