// Where the repository's files are at run time.
#pragma once

#include <string>

namespace relpos {

std::string source_dir();  // the repository the binary was built from
std::string config_dir();  // $RELPOS_CONFIG_DIR, else <repository>/configs

}  // namespace relpos
