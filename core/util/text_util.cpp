#include "core/util/text_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/util/errors.h"

namespace relpos {

namespace fs = std::filesystem;

std::string file_kind(const std::string& path) {
  std::error_code ec;
  switch (fs::status(path, ec).type()) {
    case fs::file_type::regular:
      return "a regular file";
    case fs::file_type::directory:
      return "a folder";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    case fs::file_type::not_found:
      return fs::is_symlink(fs::symlink_status(path, ec)) ? "a broken symbolic link" : "missing";
    default:
      return "not a file relpos can read";
  }
}

void check_regular_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::regular || st.type() == fs::file_type::not_found) return;
  throw DataError(
      fmt::format("{}: not a regular file ({}; expected a {} file)", path, file_kind(path), what));
}

std::string read_utf8_file(const std::string& path, const std::string& what) {
  std::string text = read_file(path, what);
  check_utf8(text, path);
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  return text;
}

std::string read_file(const std::string& path, const std::string& what) {
  check_regular_file(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(fmt::format("cannot read {} '{}': {}", what, path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t utf8_error_offset(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t min_cp;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2, min_cp = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min_cp = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min_cp = 0x10000, cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string::npos;
}

std::string printable_utf8(const std::string& text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t bad = utf8_error_offset(text.substr(pos));
    const size_t stop = bad == std::string::npos ? text.size() : pos + bad;
    // Valid UTF-8 up to `stop`: copy it, escaping control characters and byte order marks.
    while (pos < stop) {
      const size_t at = pos;
      const uint32_t cp = next_codepoint(text, pos);
      if (cp < 0x20 || cp == 0x7F)
        out += fmt::format("<0x{:02X}>", cp);
      else if (cp == 0xFEFF)
        out += "<U+FEFF>";
      else
        out.append(text, at, pos - at);
    }
    if (pos < text.size()) {
      out += fmt::format("<0x{:02X}>", static_cast<unsigned char>(text[pos]));
      ++pos;
    }
  }
  return out;
}

std::pair<int64_t, int64_t> line_col(const std::string& text, size_t offset) {
  int64_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

void check_utf8(const std::string& text, const std::string& where) {
  const size_t bad = utf8_error_offset(text);
  if (bad == std::string::npos) return;
  auto [line, col] = line_col(text, bad);
  throw DataError(
      fmt::format("{}:{}:{}: invalid UTF-8 (byte 0x{:02X} at byte offset {}; expected UTF-8 text)",
                  where, line, col, static_cast<unsigned char>(text[bad]), bad),
      "convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8");
}

uint32_t next_codepoint(const std::string& text, size_t& pos) {
  const auto c = static_cast<unsigned char>(text[pos]);
  int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
  uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < len && pos + k < text.size(); ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(text[pos + k]) & 0x3F);
  pos += len;
  return cp;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint64_t fnv1a64(const std::string& bytes, uint64_t h) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  const size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t p = s.find(sep, start);
    if (p == std::string::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, p - start));
    start = p + 1;
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = static_cast<int64_t>(std::llround(s));
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  const auto low = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  const size_t n = a.size(), m = b.size();
  // d[i][j]: distance of a's first i and b's first j characters.
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = low(a[i - 1]) == low(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && low(a[i - 1]) == low(b[j - 2]) && low(a[i - 2]) == low(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  const size_t limit = std::max<size_t>(1, word.size() / 4);
  std::string best;
  size_t best_d = limit + 1;
  for (const auto& n : names) {
    if (n == word) return "";
    const size_t d = edit_distance(word, n);
    if (d < best_d) best = n, best_d = d;
  }
  return best;
}

}  // namespace relpos
