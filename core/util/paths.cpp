#include "core/util/paths.h"

#include <cstdlib>

namespace relpos {

std::string source_dir() { return RELPOS_SOURCE_DIR; }

std::string config_dir() {
  if (const char* env = std::getenv("RELPOS_CONFIG_DIR")) return env;
  return source_dir() + "/configs";
}

}  // namespace relpos
