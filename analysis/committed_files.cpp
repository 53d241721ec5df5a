#include "analysis/committed_files.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/util/paths.h"

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
  const std::string cmd = "git -C '" + root.string() + "' check-ignore --stdin < '" +
                          list.string() + "' 2>/dev/null";
  std::set<std::string> ignored;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf{};
    while (fgets(buf.data(), buf.size(), p)) {
      std::string line = buf.data();
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      ignored.insert(line);
    }
    pclose(p);
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
