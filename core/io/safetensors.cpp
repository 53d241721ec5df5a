#include "core/io/safetensors.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/util/text_util.h"
#include "core/util/errors.h"

namespace relpos {

// safetensors stores little-endian values, which the conversions below copy as they are.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw DataError(fmt::format("{}: not a regular file", path));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw DataError(fmt::format("{}: cannot map into memory: {}", path, std::strerror(err)));
    }
    data_ = static_cast<const char*>(p);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  try {
    header_ = parse_safetensors_header(path, data_, size_);
  } catch (...) {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (data_) ::munmap(const_cast<char*>(data_), size_);
}

bool SafetensorsFile::is_float(const std::string& dtype) {
  return dtype == "F32" || dtype == "F16" || dtype == "BF16" || dtype == "F64";
}

torch::Tensor SafetensorsFile::to_float(const SafetensorsEntry& e) const {
  torch::ScalarType st;
  if (e.dtype == "F32") st = torch::kFloat32;
  else if (e.dtype == "F16") st = torch::kFloat16;
  else if (e.dtype == "BF16") st = torch::kBFloat16;
  else if (e.dtype == "F64") st = torch::kFloat64;
  else
    throw DataError(fmt::format("{}: tensor '{}' has dtype {} (expected a floating-point one: "
                                "F32, F16, BF16 or F64)",
                                path_, printable_utf8(e.name), e.dtype));
  // A copy rather than from_blob over the mapping: the data need not be aligned for its type.
  auto t = torch::empty(e.shape, torch::TensorOptions().dtype(st));  // (shape)
  if (e.end > e.begin)
    std::memcpy(t.data_ptr(), data_ + header_.data_start + e.begin, e.end - e.begin);
  return t.to(torch::kFloat32);  // (shape)
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();  // (shape)
    const uint64_t bytes = static_cast<uint64_t>(c.numel()) * 4;
    header[name] = {{"dtype", "F32"},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(c);
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw RunError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  char len[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i, n >>= 8) len[i] = static_cast<char>(n & 0xff);
  out.write(len, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& c : data)
    out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * 4));
  out.flush();
  if (!out) throw RunError(fmt::format("{}: write failed (disk full?)", path));
}

}  // namespace relpos
