// Which files a committed report may link. Reports under the repository's results/ are
// committed, but .gitignore leaves some of what they could show out (figures of later seeds and
// of fine-tuning runs, PDFs, plot data): a link to such a file is dead in every other checkout.
// git itself says which files it ignores (`git check-ignore`), so the rules stay in .gitignore.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace relpos::analysis {

// The files among `files` (paths as given) that git, in the work tree at `repo`, would not
// commit because .gitignore excludes them (a tracked file is never among them). Empty when git
// or the work tree is missing: then nothing is known to be left out.
std::set<std::string> git_ignored(const std::string& repo, const std::vector<std::string>& files);

// The files a report written into `report_dir` must not link: git_ignored() of the repository
// (core/util/paths.h: source_dir()) when report_dir lies inside its results/ folder; otherwise
// none (a user's own run folders are not committed, and their reports link what exists).
std::set<std::string> unlinkable(const std::string& report_dir,
                                 const std::vector<std::string>& files);

}  // namespace relpos::analysis
