// Helpers for the data-layer tests.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/config/config.h"
#include "core/data/corpus.h"
#include "core/util/errors.h"
#include "helpers.h"

namespace relpos::test {

inline std::string data_fixture(const std::string& rel) { return fixture_path("data/" + rel); }

// The message of the DataError `fn` throws ("" when it throws nothing).
template <class F>
std::string data_error(F&& fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

// A temporary folder removed at the end of the scope.
struct TempDir {
  std::string path;
  TempDir() {
    path = (std::filesystem::temp_directory_path() /
            ("relpos_test_" + std::to_string(reinterpret_cast<uintptr_t>(this)) + "_" +
             std::to_string(::getpid())))
               .string();
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// The project's data cache, where scripts/fetch_data.sh puts the built-in corpora and relpos
// looks for them: the checkout's data/, or $RELPOS_DATA_DIR when set.
inline std::string cache_dir() { return resolve_cache_dir(DataConfig{}); }

}  // namespace relpos::test
