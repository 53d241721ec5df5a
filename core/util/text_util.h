// Text helpers of the config and data layers: reading files with clear errors, UTF-8 checks,
// content hashes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace relpos {

// The whole file as bytes. Throws DataError naming `what` and the path when it cannot be read,
// and (check_regular_file) when it is not a regular file.
std::string read_file(const std::string& path, const std::string& what);

// read_file, then check_utf8 (offsets count from the file's first byte), then one leading UTF-8
// byte order mark (EF BB BF, which Windows editors write) dropped: text data files.
std::string read_utf8_file(const std::string& path, const std::string& what);

// Throws DataError "PATH: not a regular file (a FIFO; expected a <what> file)" when `path`
// exists (after symbolic links) but is a folder, FIFO, device or socket. Checked with stat(),
// before opening: open() of a FIFO blocks until a writer comes, and /dev/zero never ends.
// A missing path passes (the open that follows names it).
void check_regular_file(const std::string& path, const std::string& what);

// "a folder", "a FIFO", "a character device", ... for the object at `path`
// (after symbolic links; "a broken symbolic link" when the link's target is missing).
std::string file_kind(const std::string& path);

// Byte offset of the first byte that breaks UTF-8 (overlong forms, surrogates and code points
// above U+10FFFF count as broken), or std::string::npos when `text` is valid.
size_t utf8_error_offset(const std::string& text);

// Throws DataError "<where>:<line>:<col>: invalid UTF-8 ..." when `text` is not valid UTF-8.
// `where` names the file (and record) the text came from.
void check_utf8(const std::string& text, const std::string& where);

// `text` with every byte that breaks UTF-8, and every control character (NUL, tab, newline,
// DEL, ...), written as <0xNN>, and a byte order mark as <U+FEFF>: for error messages, which a
// NUL would cut short and an invisible character would make unreadable.
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

// A duration in seconds, rounded: "1h02m", "3m05s", "12s"; "?" when negative or not finite.
std::string format_duration(double seconds);
// The edit distance of `a` and `b` (optimal string alignment: insertions, deletions,
// substitutions, and swaps of two neighbouring characters, each one edit), ASCII case ignored.
size_t edit_distance(const std::string& a, const std::string& b);
// The name of `names` that `word` most likely misspells, for "did you mean ...?": the closest by
// edit_distance when it is at most max(1, size of word / 4) edits away ("stpes" -> "steps",
// "sinusodal" -> "sinusoidal"); "" when none is that close or `word` is one of them. Ties go
// to the first in `names`.
std::string closest_name(const std::string& word, const std::vector<std::string>& names);

}  // namespace relpos
