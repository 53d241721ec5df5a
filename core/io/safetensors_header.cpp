#include "core/io/safetensors_header.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/util/json_util.h"
#include "core/util/text_util.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

// The format's own limit on the header (the reference implementation refuses larger ones): a
// corrupt length field then fails here instead of allocating gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

const std::vector<std::pair<std::string, size_t>>& dtypes() {
  static const std::vector<std::pair<std::string, size_t>> d = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2},
      {"U16", 2},  {"F16", 2}, {"BF16", 2}, {"I32", 4},    {"U32", 4},     {"F32", 4},
      {"F64", 8},  {"I64", 8}, {"U64", 8}};
  return d;
}

uint64_t read_le64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// A non-negative JSON integer that fits in uint64_t (floats such as 2.0 are refused: the format
// writes integers).
bool as_offset(const nlohmann::json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

}  // namespace

const SafetensorsEntry* SafetensorsHeader::find(const std::string& name) const {
  for (const auto& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

size_t safetensors_dtype_size(const std::string& dtype) {
  for (const auto& [name, size] : dtypes())
    if (name == dtype) return size;
  return 0;
}

std::string safetensors_dtype_names() {
  std::string out;
  for (const auto& [name, size] : dtypes()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

namespace {

// The header's JSON object, after checking the length field against the file.
nlohmann::json header_json(const std::string& file, const char* bytes, size_t size,
                           uint64_t& n) {
  const std::string hint =
      "the file is not a complete safetensors file (an interrupted download?): fetch it again";
  if (size < 8)
    throw DataError(fmt::format("{}: truncated: {} bytes, fewer than the 8-byte header length "
                                "that starts a safetensors file",
                                file, size),
                    hint);
  n = read_le64(bytes);
  if (n > size - 8)
    throw DataError(fmt::format("{}: the header length field says {} bytes, but only {} bytes "
                                "follow it (file size {}): truncated or not a safetensors file",
                                file, n, size - 8, size),
                    hint);
  if (n > kMaxHeaderBytes)
    throw DataError(fmt::format("{}: header of {} bytes (expected at most {}, the format's limit)",
                                file, n, kMaxHeaderBytes));
  if (n == 0 || bytes[8] != '{')
    throw DataError(fmt::format("{}: the header does not start with '{{' (expected a JSON object "
                                "after the 8-byte length)",
                                file));
  const std::string text(bytes + 8, bytes + 8 + n);
  nlohmann::json j = parse_json(text, file + " (header)", "a JSON object of tensor entries");
  if (!j.is_object())
    throw DataError(fmt::format("{}: the header is {}, expected a JSON object", file,
                                describe_json_shallow(j)));
  return j;
}

std::map<std::string, std::string> header_metadata(const std::string& file,
                                                   const nlohmann::json& value) {
  if (!value.is_object())
    throw DataError(fmt::format("{}: __metadata__ is {} (expected an object of strings)", file,
                                describe_json_shallow(value)));
  std::map<std::string, std::string> out;
  for (const auto& [mk, mv] : value.items()) {
    if (!mv.is_string())
      throw DataError(fmt::format("{}: __metadata__.{} is {} (expected a string)", file,
                                  printable_utf8(mk), describe_json_shallow(mv)));
    out[mk] = mv.get<std::string>();
  }
  return out;
}

// One tensor entry, checked: dtype known, shape of non-negative sizes, data_offsets inside the
// data section and exactly the bytes dtype and shape need.
SafetensorsEntry header_entry(const std::string& file, const std::string& key,
                              const nlohmann::json& value, uint64_t data_size, size_t size) {
  const std::string name = printable_utf8(key);
  auto bad = [&](const std::string& what) {
    return DataError(fmt::format("{}: tensor '{}': {}", file, name, what));
  };
  if (!value.is_object())
    throw bad(fmt::format("entry is {} (expected an object with dtype, shape and data_offsets)",
                          describe_json_shallow(value)));
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!value.contains(field)) throw bad(fmt::format("no \"{}\"", field));
  SafetensorsEntry e;
  e.name = key;
  if (!value["dtype"].is_string())
    throw bad(fmt::format("dtype is {} (expected a string)", describe_json_shallow(value["dtype"])));
  e.dtype = value["dtype"].get<std::string>();
  const size_t elem = safetensors_dtype_size(e.dtype);
  if (elem == 0)
    throw bad(fmt::format("unknown dtype '{}' (known: {})", printable_utf8(e.dtype),
                          safetensors_dtype_names()));
  const auto& shape = value["shape"];
  if (!shape.is_array())
    throw bad(fmt::format("shape is {} (expected a list of sizes)", describe_json_shallow(shape)));
  // Element count with an overflow check: a huge shape must not wrap to a small byte count.
  uint64_t numel = 1;
  bool overflow = false, empty = false;
  for (const auto& s : shape) {
    uint64_t dim = 0;
    if (!as_offset(s, dim) || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw bad(fmt::format("shape {} has {} (expected non-negative integers)",
                            describe_json_shallow(shape), describe_json_shallow(s)));
    e.shape.push_back(static_cast<int64_t>(dim));
    if (dim == 0) empty = true;
    if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
    numel *= dim;
  }
  if (empty) overflow = false, numel = 0;
  const auto& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !as_offset(offsets[0], e.begin) ||
      !as_offset(offsets[1], e.end))
    throw bad(fmt::format("data_offsets is {} (expected [begin, end], two non-negative integers)",
                          describe_json_shallow(offsets)));
  if (e.begin > e.end)
    throw bad(fmt::format("data_offsets [{}, {}] end before they begin", e.begin, e.end));
  if (e.end > data_size)
    throw bad(fmt::format("data_offsets [{}, {}] run past the data, which is {} bytes (file "
                          "size {}): truncated file or wrong offsets",
                          e.begin, e.end, data_size, size));
  if (overflow || numel > std::numeric_limits<uint64_t>::max() / elem ||
      numel * elem != e.end - e.begin)
    throw bad(fmt::format("{} bytes at data_offsets [{}, {}], but dtype {} and shape {} need {}",
                          e.end - e.begin, e.begin, e.end, e.dtype, describe_json_shallow(shape),
                          overflow ? std::string("more than 2^64") : std::to_string(numel * elem)));
  return e;
}

// The tensors tile the data section: no overlap (two names for the same bytes) and no gap
// (bytes that belong to nothing), as the format requires. Sorts the entries by offset.
void check_tiling(const std::string& file, std::vector<SafetensorsEntry>& entries,
                  uint64_t data_size) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
                     return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
                   });
  uint64_t covered = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const auto& e : entries) {
    if (e.begin < covered)
      throw DataError(fmt::format("{}: tensor '{}' at data_offsets [{}, {}] overlaps tensor '{}' "
                                  "at [{}, {}]",
                                  file, printable_utf8(e.name), e.begin, e.end,
                                  printable_utf8(prev->name), prev->begin, prev->end));
    if (e.begin > covered)
      throw DataError(fmt::format("{}: bytes [{}, {}) of the data belong to no tensor (the next "
                                  "is '{}'; the format allows no gaps)",
                                  file, covered, e.begin, printable_utf8(e.name)));
    covered = e.end;
    prev = &e;
  }
  if (covered != data_size)
    throw DataError(fmt::format("{}: bytes [{}, {}) at the end of the data belong to no tensor "
                                "(the format allows no gaps)",
                                file, covered, data_size));
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const std::string& file, const char* bytes, size_t size) {
  uint64_t n = 0;
  const nlohmann::json j = header_json(file, bytes, size, n);
  SafetensorsHeader h;
  h.data_start = 8 + n;
  const uint64_t data_size = size - h.data_start;
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__")
      h.metadata = header_metadata(file, value);
    else
      h.entries.push_back(header_entry(file, key, value, data_size, size));
  }
  check_tiling(file, h.entries, data_size);
  return h;
}

}  // namespace relpos
