// Reading and writing safetensors files (format: safetensors_header.h). The reader maps the file
// into memory and converts one tensor at a time, so a checkpoint of any size costs the memory of
// the tensors actually taken from it; the writer stores float32 tensors for `relpos export`.
#pragma once

#include <torch/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/io/safetensors_header.h"

namespace relpos {

class SafetensorsFile {
 public:
  // Maps `path` read-only and checks its header. Throws DataError naming the file when it cannot
  // be opened or its header is not valid (parse_safetensors_header).
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }

  // Whether to_float() can convert this dtype (F32, F16, BF16, F64).
  static bool is_float(const std::string& dtype);
  // The entry's values as a float32 CPU tensor of its shape (a copy). Throws DataError naming the
  // file and tensor when its dtype is not a floating-point one.
  torch::Tensor to_float(const SafetensorsEntry& e) const;

 private:
  std::string path_;
  const char* data_ = nullptr;  // the mapped file
  size_t size_ = 0;
  SafetensorsHeader header_;
};

// Writes `tensors` (float32, any device) as F32 in that order, with `metadata` as __metadata__;
// the header is padded with spaces to a multiple of 8 bytes so that every tensor starts aligned.
// Throws RunError naming the file when it cannot be written.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace relpos
