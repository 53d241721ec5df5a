// The header of a safetensors file (Hugging Face's tensor format), parsed and checked without
// touching the tensor data. Layout of a file:
//   bytes 0..7       N, the header length, unsigned 64-bit little-endian
//   bytes 8..8+N     a JSON object: {"<name>": {"dtype": "F32", "shape": [2, 3],
//                    "data_offsets": [begin, end]}, ..., "__metadata__": {"<key>": "<text>"}}
//                    (may be padded with trailing spaces)
//   bytes 8+N..      the data: each tensor row-major, little-endian, at [begin, end) counted
//                    from the start of the data; together the tensors cover it without a gap
//                    or an overlap.
// Kept apart from the file reader (safetensors.h) so that the fuzz harness (fuzz/) exercises
// exactly this parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace relpos {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;            // "F32", "F16", "BF16", "I64", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range within the data section
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;        // in the order of their data
  std::map<std::string, std::string> metadata;  // "__metadata__"
  uint64_t data_start = 0;                      // 8 + N: where the data section begins
  const SafetensorsEntry* find(const std::string& name) const;
};

// Bytes per element of a safetensors dtype name; 0 for a name the format does not define.
size_t safetensors_dtype_size(const std::string& dtype);

// The dtype names the format defines, comma-separated (for messages).
std::string safetensors_dtype_names();

// Parses and checks the header of a file whose first `size` bytes are `bytes` (the whole file:
// offsets are checked against its length). Throws DataError naming `file` and, where there is
// one, the tensor: a file too short for the length field, a header length past the end of the
// file, a header that is not a JSON object, an entry without dtype/shape/data_offsets or with
// values of the wrong type, an unknown dtype, a byte range that does not match dtype and shape,
// runs past the data, overlaps another tensor's or leaves a gap.
SafetensorsHeader parse_safetensors_header(const std::string& file, const char* bytes, size_t size);

}  // namespace relpos
