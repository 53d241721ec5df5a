// Small helpers shared by the tests.
#pragma once

#include <string>

namespace relpos::test {

inline std::string config_path(const std::string& rel) {
  return std::string(RELPOS_SOURCE_DIR) + "/configs/" + rel;
}
inline std::string fixture_path(const std::string& rel) {
  return std::string(RELPOS_TEST_DIR) + "/fixtures/" + rel;
}

}  // namespace relpos::test
