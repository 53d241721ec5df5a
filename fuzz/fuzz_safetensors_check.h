// What the safetensors fuzz harness checks, shared with its regression test
// (tests/test_safetensors.cpp): given ANY bytes as a whole file, parse_safetensors_header either
// throws DataError or returns a header whose tensors lie inside the file, tile the data section
// in order without gaps or overlaps, and each hold exactly numel × dtype-size bytes.
#pragma once

#include <cstdint>
#include <string>

#include "core/io/safetensors_header.h"
#include "fuzz/fuzz_checks.h"

namespace relpos::fuzz {

inline void check_safetensors(const uint8_t* data, size_t size) {
  SafetensorsHeader h;
  try {
    h = parse_safetensors_header("fuzz.safetensors", reinterpret_cast<const char*>(data), size);
  } catch (const DataError&) {
    return;  // refused with a message: fine
  }
  require(h.data_start >= 8 && h.data_start <= size, "data section outside the file");
  uint64_t at = 0;
  for (const auto& e : h.entries) {
    require(e.begin == at, "tensors do not tile the data in order");
    require(e.end >= e.begin && h.data_start + e.end <= size, "a tensor's bytes leave the file");
    uint64_t numel = 1;
    for (auto d : e.shape) {
      require(d >= 0, "negative dimension accepted");
      numel *= static_cast<uint64_t>(d);
    }
    require(numel * safetensors_dtype_size(e.dtype) == e.end - e.begin,
            "byte range does not match dtype and shape");
    at = e.end;
  }
  require(h.data_start + at == size, "bytes after the last tensor accepted");
}

}  // namespace relpos::fuzz
