#include "core/hf/staged_folder.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "core/util/errors.h"

namespace relpos {

namespace fs = std::filesystem;

StagedFolder::StagedFolder(const std::string& dest, bool overwrite, const std::string& option,
                           const std::string& marker)
    : dest_(dest) {
  const fs::path d = fs::path(dest).lexically_normal();
  std::error_code ec;
  if (fs::exists(d) && !fs::is_directory(d))
    throw ConfigError(fmt::format("{} {}: exists and is not a folder", option, dest));
  if (fs::is_directory(d) && !fs::is_empty(d, ec)) {
    if (!overwrite)
      throw ConfigError(fmt::format("{} {}: the folder exists and is not empty", option, dest),
                        "choose another folder, or add --overwrite to replace it");
    if (!fs::exists(d / marker))
      throw ConfigError(fmt::format("{} {}: --overwrite replaces only a folder with {} in it; "
                                    "this one has none",
                                    option, dest, marker),
                        "choose another folder");
  }
  const fs::path parent = d.has_parent_path() ? d.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec)
    throw RunError(fmt::format("{} {}: cannot create {}: {}", option, dest, parent.string(),
                               ec.message()));
  staging_ = (parent / fmt::format(".{}.partial-{}", d.filename().string(), ::getpid())).string();
  fs::remove_all(staging_, ec);
  fs::create_directory(staging_, ec);
  if (ec)
    throw RunError(fmt::format("{} {}: cannot create the folder {}: {}", option, dest, staging_,
                               ec.message()));
}

StagedFolder::~StagedFolder() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void StagedFolder::commit() {
  std::error_code ec;
  if (fs::exists(dest_)) fs::remove_all(dest_, ec);
  if (ec) throw RunError(fmt::format("cannot remove {} to replace it: {}", dest_, ec.message()));
  fs::rename(staging_, dest_, ec);
  if (ec)
    throw RunError(fmt::format("cannot rename {} to {}: {}", staging_, dest_, ec.message()));
  committed_ = true;
}

}  // namespace relpos
