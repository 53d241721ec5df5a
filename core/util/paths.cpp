#include "core/util/paths.h"

#include <cstdlib>
#include <filesystem>

namespace relpos {
namespace fs = std::filesystem;

std::string source_dir() { return RELPOS_SOURCE_DIR; }

std::string config_dir() {
  if (const char* env = std::getenv("RELPOS_CONFIG_DIR")) return env;
  return source_dir() + "/configs";
}

std::string repo_relative(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec).lexically_normal();
  if (ec) return path;
  const fs::path root = fs::path(source_dir()).lexically_normal();
  const fs::path rel = abs.lexically_relative(root);
  // Outside the repository the relative path climbs out of it ("../..."): keep the path.
  if (rel.empty() || *rel.begin() == "..") return path;
  return rel == "." ? std::string(".") : rel.generic_string();
}

std::string repo_relative_word(const std::string& a) {
  if (!a.empty() && a[0] == '/') return repo_relative(a);
  const size_t eq = a.find('=');
  if (eq != std::string::npos && eq + 1 < a.size() && a[eq + 1] == '/')
    return a.substr(0, eq + 1) + repo_relative(a.substr(eq + 1));
  return a;
}

std::string resolve_repo_path(const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  const fs::path in_repo = fs::path(source_dir()) / path;
  std::error_code ec;
  return fs::exists(in_repo, ec) ? in_repo.string() : path;
}

}  // namespace relpos
