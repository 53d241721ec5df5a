#include "core/util/json_util.h"

#include <fmt/format.h>

#include <atomic>

#include "core/util/text_util.h"
#include "core/util/errors.h"

namespace relpos {

nlohmann::json parse_json(const std::string& text, const std::string& path,
                          const std::string& expected) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based: the position of the last character read.
    const size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    auto [line, col] = line_col(text, offset);
    std::string problem = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line L, column C: ".
    const size_t at = problem.find("column ");
    const size_t colon = at == std::string::npos ? at : problem.find(": ", at);
    if (colon != std::string::npos) problem = problem.substr(colon + 2);
    throw DataError(fmt::format("{}:{}:{}: invalid JSON: {} (expected {})", path, line, col,
                                printable_utf8(problem), expected));
  } catch (const nlohmann::json::exception& e) {
    // Valid syntax the parser still refuses: a number beyond double's range (out_of_range.406,
    // found by fuzzing), and the like. Name the number's line when the message quotes it.
    std::string problem = e.what();
    const size_t bracket = problem.find("] ");
    if (bracket != std::string::npos) problem = problem.substr(bracket + 2);
    std::string where = path;
    const size_t q1 = problem.find('\''), q2 = problem.rfind('\'');
    if (q1 != std::string::npos && q2 > q1) where = locate(text, path, problem.substr(q1 + 1, q2 - q1 - 1));
    throw DataError(fmt::format("{}: invalid JSON: {} (expected {})", where,
                                printable_utf8(problem), expected));
  }
}

namespace {
std::atomic<int64_t> g_locate_calls{0};
}  // namespace

int64_t locate_calls() { return g_locate_calls.load(); }

std::string locate(const std::string& text, const std::string& path, const std::string& needle) {
  ++g_locate_calls;
  const size_t at = needle.empty() ? std::string::npos : text.find(needle);
  if (at == std::string::npos) return path;
  return fmt::format("{}:{}", path, line_col(text, at).first);
}

std::string describe_json(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string describe_json_shallow(const nlohmann::json& v) {
  if (v.is_structured())
    for (const auto& x : v)
      if (x.is_structured()) return fmt::format("a JSON {} of {} items", v.type_name(), v.size());
  return describe_json(v);
}

}  // namespace relpos
