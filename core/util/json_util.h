// JSON parsing (nlohmann/json, Debian nlohmann-json3-dev) with errors that name the file, line
// and column. Internal to the data layer.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace relpos {

// Parses `text` (the contents of `path`). Throws DataError "<path>:<line>:<col>: invalid JSON:
// <problem> (expected <expected>)".
nlohmann::json parse_json(const std::string& text, const std::string& path,
                          const std::string& expected);

// "<path>:<line>" where `needle` first occurs in `text` (to point at a record), else "<path>".
// It searches from the start of `text`: call it for an error message, never once per record.
std::string locate(const std::string& text, const std::string& path, const std::string& needle);
// How many times locate() has run in this process (tests: loading a valid file calls it never).
int64_t locate_calls();

// A short rendering of a JSON value for error messages.
std::string describe_json(const nlohmann::json& v);
// The same without serialising nested structures (a list or object of lists or objects is named
// by its type and size): a hostile file can nest millions deep, and dump() recurses per level.
std::string describe_json_shallow(const nlohmann::json& v);

}  // namespace relpos
