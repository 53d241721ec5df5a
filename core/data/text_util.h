// Text helpers of the data layer: reading files with clear errors, UTF-8 checks, content hashes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace relpos {

// The whole file as bytes. Throws DataError naming `what` and the path when it cannot be read.
std::string read_file(const std::string& path, const std::string& what);

// Byte offset of the first byte that breaks UTF-8 (overlong forms, surrogates and code points
// above U+10FFFF count as broken), or std::string::npos when `text` is valid.
size_t utf8_error_offset(const std::string& text);

// Throws DataError "<where>:<line>:<col>: invalid UTF-8 ..." when `text` is not valid UTF-8.
// `where` names the file (and record) the text came from.
void check_utf8(const std::string& text, const std::string& where);

// `text` with every byte that breaks UTF-8 written as <0xNN> (for error messages).
std::string printable_utf8(const std::string& text);

// 1-based line and column (in bytes) of byte `offset` of `text`.
std::pair<int64_t, int64_t> line_col(const std::string& text, size_t offset);

// Decodes the code point at `pos` of valid UTF-8 and advances `pos` past it.
uint32_t next_codepoint(const std::string& text, size_t& pos);
void append_utf8(std::string& out, uint32_t cp);

// FNV-1a, 64 bit: a content hash for cache keys (not for security).
uint64_t fnv1a64(const std::string& bytes, uint64_t h = 0xcbf29ce484222325ULL);
std::string hex64(uint64_t v);

std::string trim(const std::string& s);
std::vector<std::string> split_on(const std::string& s, char sep);
bool ends_with(const std::string& s, const std::string& suffix);

}  // namespace relpos
