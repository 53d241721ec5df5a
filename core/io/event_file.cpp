#include "core/io/event_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/util/errors.h"

namespace relpos {
namespace fs = std::filesystem;

namespace {

// The byte-at-a-time table of the reflected Castagnoli polynomial.
std::array<uint32_t, 256> ev_make_crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

void ev_put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}

// Protocol-buffer wire format (encoding.md of protocol buffers): a field is its key
// (field number << 3 | wire type) as a varint, then the value; wire types 0 varint,
// 1 fixed 64-bit, 2 length-delimited, 5 fixed 32-bit.
void ev_put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7Fu) | 0x80u));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void ev_put_key(std::string& out, int field, int wire_type) {
  ev_put_varint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}
// int32 and int64 fields: a negative value is its 64-bit two's complement, as the format says.
void ev_put_int_field(std::string& out, int field, int64_t v) {
  ev_put_key(out, field, 0);
  ev_put_varint(out, static_cast<uint64_t>(v));
}
void ev_put_bytes_field(std::string& out, int field, const std::string& bytes) {
  ev_put_key(out, field, 2);
  ev_put_varint(out, bytes.size());
  out += bytes;
}
void ev_put_double_field(std::string& out, int field, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  ev_put_key(out, field, 1);
  ev_put_le(out, bits, 8);
}
void ev_put_float_field(std::string& out, int field, float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  ev_put_key(out, field, 5);
  ev_put_le(out, bits, 4);
}

// Event.wall_time (1) and Event.step (2), which every event starts with.
std::string ev_event_head(double wall_time, int64_t step) {
  std::string e;
  ev_put_double_field(e, 1, wall_time);
  ev_put_int_field(e, 2, step);
  return e;
}

// An Event whose summary (5) holds the given Summary.Value messages, each one value (1).
std::string ev_summary_event(double wall_time, int64_t step,
                             const std::vector<std::string>& values) {
  std::string summary;
  for (const auto& v : values) ev_put_bytes_field(summary, 1, v);
  std::string e = ev_event_head(wall_time, step);
  ev_put_bytes_field(e, 5, summary);
  return e;
}

std::string ev_host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string h(buf);
  // Keep the name one field of the file name.
  std::replace(h.begin(), h.end(), '.', '_');
  std::replace(h.begin(), h.end(), '/', '_');
  return h;
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> table = ev_make_crc32c_table();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t c = crc32c(data, size);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord(const std::string& data) {
  std::string length;
  ev_put_le(length, data.size(), 8);
  std::string r = length;
  ev_put_le(r, masked_crc32c(length.data(), length.size()), 4);
  r += data;
  ev_put_le(r, masked_crc32c(data.data(), data.size()), 4);
  return r;
}

std::string file_version_event(double wall_time) {
  std::string e = ev_event_head(wall_time, 0);
  ev_put_bytes_field(e, 3, "brain.Event:2");
  return e;
}

std::string session_start_event(double wall_time, int64_t step) {
  std::string log;
  ev_put_int_field(log, 1, 1);  // SessionLog.status = START
  std::string e = ev_event_head(wall_time, step);
  ev_put_bytes_field(e, 7, log);
  return e;
}

std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, float>>& values) {
  std::vector<std::string> encoded;
  for (const auto& [tag, v] : values) {
    std::string value;
    ev_put_bytes_field(value, 1, tag);
    ev_put_float_field(value, 2, v);
    encoded.push_back(std::move(value));
  }
  return ev_summary_event(wall_time, step, encoded);
}

std::string image_event(double wall_time, int64_t step, const std::string& tag,
                        const EventImage& image) {
  std::string img;
  ev_put_int_field(img, 1, image.height);
  ev_put_int_field(img, 2, image.width);
  ev_put_int_field(img, 3, image.colorspace);
  ev_put_bytes_field(img, 4, image.png);
  std::string value;
  ev_put_bytes_field(value, 1, tag);
  ev_put_bytes_field(value, 4, img);
  return ev_summary_event(wall_time, step, {value});
}

double unix_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) &&
        it->path().filename().string().find("tfevents") != std::string::npos)
      out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

int64_t event_file_seconds(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  const std::string key = "tfevents.";
  const size_t at = name.find(key);
  if (at == std::string::npos) return 0;
  int64_t s = 0;
  for (size_t i = at + key.size(); i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i)
    s = s * 10 + (name[i] - '0');
  return s;
}

EventFileWriter::EventFileWriter(const std::string& dir, const std::string& suffix) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const double now = unix_time_now();
  int64_t seconds = static_cast<int64_t>(now);
  for (const auto& f : event_files(dir)) seconds = std::max(seconds, event_file_seconds(f) + 1);
  path_ = (fs::path(dir) / fmt::format("events.out.tfevents.{:010d}.{}.{}.{}", seconds,
                                       ev_host_name(), ::getpid(), suffix))
              .string();
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_)
    throw RunError(fmt::format("{}: cannot create the event file: {}", path_, std::strerror(errno)),
                   "check that the run folder is writable");
  write(file_version_event(now));
}

void EventFileWriter::write(const std::string& event) {
  out_ << tfrecord(event);
  out_.flush();
  if (!out_)
    throw RunError(fmt::format("{}: cannot write an event (disk full?)", path_),
                   "free some space; the records written before are whole");
}

EventImage png_image(std::string png, const std::string& what) {
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  // Signature (8 bytes), IHDR chunk: length (4), "IHDR", width and height (4 each, big endian),
  // bit depth (1), colour type (1).
  if (png.size() < 26 || png.compare(0, 8, kSignature, 8) != 0 || png.compare(12, 4, "IHDR") != 0)
    throw DataError(fmt::format("{}: not a PNG file (no PNG signature and IHDR header)", what));
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(png[at + i]);
    return static_cast<int32_t>(v);
  };
  EventImage img;
  img.width = be32(16);
  img.height = be32(20);
  // PNG colour types: 0 greyscale, 4 greyscale + alpha, 6 RGBA; 2 RGB and 3 palette as RGB.
  const unsigned char colour_type = static_cast<unsigned char>(png[25]);
  img.colorspace = colour_type == 0 ? 1 : colour_type == 4 ? 2 : colour_type == 6 ? 4 : 3;
  img.png = std::move(png);
  return img;
}

}  // namespace relpos
