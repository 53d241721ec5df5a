// The checkpoint file: a LibTorch archive (zip) followed by a 24-byte trailer — "RPCKPT01",
// the archive's length and a 64-bit FNV-1a checksum of the archive, little-endian. LibTorch's
// zip reader does not check the CRCs of its records, so without the trailer a truncated or
// overwritten file could load with wrong values. Written to `<path>.tmp.<pid>`, fsync'ed,
// renamed over `path`, and the folder fsync'ed: a crash leaves the old file or the new one.
#include "core/io/checkpoint_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/util/errors.h"

namespace relpos {

namespace {

// 64-bit FNV-1a, fed in pieces.
struct Fnv1a {
  uint64_t h = 0xcbf29ce484222325ULL;
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  }
};

constexpr char kTrailerMagic[8] = {'R', 'P', 'C', 'K', 'P', 'T', '0', '1'};
constexpr size_t kTrailerSize = 24;

void put_u64(char* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get_u64(const char* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

// Writes all bytes to `fd`, counting and hashing them; remembers the first error (errno) and
// then reports every later piece as written, dropping it. A short count would make LibTorch's
// zip writer throw, and it throws again from its destructor while unwinding (std::terminate);
// the caller checks `error` once the archive is done instead.
struct FdSink {
  int fd = -1;
  int error = 0;
  uint64_t bytes = 0;
  Fnv1a hash;
  size_t operator()(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    size_t left = n;
    while (left > 0 && error == 0) {
      const ssize_t w = ::write(fd, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error = w < 0 ? errno : EIO;
        break;
      }
      hash.add(p, static_cast<size_t>(w));
      bytes += static_cast<uint64_t>(w);
      p += w;
      left -= static_cast<size_t>(w);
    }
    return n;  // see above: failures are reported through `error`
  }
};

void fsync_folder(const std::filesystem::path& folder) {
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the rename itself is atomic
  ::fsync(fd);
  ::close(fd);
}

// Temporaries left by processes killed while saving (`<name>.tmp.<pid>`).
void remove_stale_temporaries(const std::filesystem::path& target) {
  const std::string prefix = target.filename().string() + ".tmp.";
  std::error_code ec;
  const auto folder =
      target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) == 0) std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace

void write_archive_atomically(const std::string& path, torch::serialize::OutputArchive& archive) {
  const std::filesystem::path target(path);
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  auto fail = [&](const std::string& why) {
    ::unlink(tmp.c_str());
    return RunError(fmt::format("cannot write checkpoint '{}': {}", path, why),
                    "check that the folder exists, is writable and has free space; the previous "
                    "checkpoint, if any, is unchanged");
  };
  FdSink sink;
  sink.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (sink.fd < 0) throw fail(std::strerror(errno));
  try {
    archive.save_to([&sink](const void* data, size_t n) { return sink(data, n); });
  } catch (const c10::Error& e) {
    ::close(sink.fd);
    throw fail(sink.error ? std::strerror(sink.error) : e.what_without_backtrace());
  }
  char trailer[kTrailerSize];
  std::memcpy(trailer, kTrailerMagic, 8);
  put_u64(trailer + 8, sink.bytes);
  put_u64(trailer + 16, sink.hash.h);
  FdSink tail;
  tail.fd = sink.fd;
  tail(trailer, kTrailerSize);
  if (sink.error || tail.error) {
    ::close(sink.fd);
    throw fail(std::strerror(sink.error ? sink.error : tail.error));
  }
  if (::fsync(sink.fd) != 0) {
    const int err = errno;
    ::close(sink.fd);
    throw fail(std::string("fsync: ") + std::strerror(err));
  }
  if (::close(sink.fd) != 0) throw fail(std::string("close: ") + std::strerror(errno));
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    throw fail(std::string("rename: ") + std::strerror(errno));
  fsync_folder(target.parent_path());
  remove_stale_temporaries(target);
}

// The whole file, checked against its trailer; throws SchemaError naming the file.
std::vector<char> read_verified_archive(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw SchemaError(fmt::format("checkpoint '{}' does not exist or is not a regular file", path));
  std::vector<char> bytes;
  {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      throw SchemaError(
          fmt::format("checkpoint '{}' cannot be opened: {}", path, std::strerror(errno)));
    char buf[1 << 16];
    while (true) {
      const ssize_t r = ::read(fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        const int err = errno;
        ::close(fd);
        throw SchemaError(
            fmt::format("checkpoint '{}' cannot be read: {}", path, std::strerror(err)));
      }
      if (r == 0) break;
      bytes.insert(bytes.end(), buf, buf + r);
    }
    ::close(fd);
  }
  const std::string hint =
      "a checkpoint is replaced atomically, so a damaged one was truncated or changed after it was "
      "written; resume from another run or start again";
  if (bytes.size() < kTrailerSize ||
      std::memcmp(bytes.data() + bytes.size() - kTrailerSize, kTrailerMagic, 8) != 0)
    throw SchemaError(
        fmt::format("'{}' is not a relpos checkpoint, or it is truncated: it does not "
                    "end with the checkpoint marker ({} bytes)",
                    path, bytes.size()),
        hint);
  const char* trailer = bytes.data() + bytes.size() - kTrailerSize;
  const uint64_t length = get_u64(trailer + 8), stored = get_u64(trailer + 16);
  if (length != bytes.size() - kTrailerSize)
    throw SchemaError(fmt::format("checkpoint '{}' is damaged: its marker announces {} bytes of "
                                  "archive, the file holds {}",
                                  path, length, bytes.size() - kTrailerSize),
                      hint);
  Fnv1a hash;
  hash.add(bytes.data(), length);
  if (hash.h != stored)
    throw SchemaError(fmt::format("checkpoint '{}' is corrupt: checksum {:016x}, expected {:016x}",
                                  path, hash.h, stored),
                      hint);
  bytes.resize(length);
  return bytes;
}

}  // namespace relpos
