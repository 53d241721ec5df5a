// A whole file as a string, for tests that look for text in what a command wrote.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace relpos::test {

// The bytes of `path`; empty when it cannot be opened.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace relpos::test
