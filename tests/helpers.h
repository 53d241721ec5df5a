// Small helpers shared by the tests.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.h"

namespace relpos::test {

// The system Python the reference scripts run under (Debian's, with the packages setup.sh installs).
inline const char* kPython = "/usr/bin/python3";

inline std::string config_path(const std::string& rel) {
  return std::string(RELPOS_SOURCE_DIR) + "/configs/" + rel;
}
inline std::string fixture_path(const std::string& rel) {
  return std::string(RELPOS_TEST_DIR) + "/fixtures/" + rel;
}

// configs/base.yaml with `sets` ("key=value") applied.
inline Config base_config_with(const std::vector<std::string>& sets) {
  return load_config({config_path("base.yaml")}, sets).config;
}

}  // namespace relpos::test
