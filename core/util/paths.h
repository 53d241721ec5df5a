// Where the repository's files are at run time, and how paths are written into outputs.
#pragma once

#include <string>

namespace relpos {

std::string source_dir();  // the repository the binary was built from
std::string config_dir();  // $RELPOS_CONFIG_DIR, else <repository>/configs

// A path as outputs record it (commands.txt, reports, result.json): relative to the repository
// root when it lies inside the repository ("results/huang2020/pretrain/learned-seed1"), so that
// committed results name no machine's folders; any other path as given.
std::string repo_relative(const std::string& path);
// A command-line word as such a record writes it: an absolute path inside the repository, or
// the path of a key=path word ("data.cache_dir=/repo/data"), relative to the repository root.
std::string repo_relative_word(const std::string& word);
// A path read from such a record: absolute as it is; relative, the repository's file when that
// exists, else the path relative to the working folder (a record written by hand).
std::string resolve_repo_path(const std::string& path);

}  // namespace relpos
