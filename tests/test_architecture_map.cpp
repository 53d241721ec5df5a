// docs/architecture.md's map holds to the code: every row of "Where it happens" names a file that
// exists and holds the named symbol (the text before any "(" or "::" part is searched as written,
// a `Class::member` as "Class::member"), and every path in "How to add ..." exists. A renamed
// file or function fails here until the map follows it.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tests/text_file.h"

using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

std::string map_source(const std::string& rel) { return std::string(RELPOS_SOURCE_DIR) + "/" + rel; }

// The text of docs/architecture.md from the heading `title` to the next "## " heading.
std::string map_section(const std::string& title) {
  const std::string doc = read_text(map_source("docs/architecture.md"));
  const size_t start = doc.find("\n## " + title);
  if (start == std::string::npos) return {};
  const size_t end = doc.find("\n## ", start + 4);
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

struct MapRow {
  std::string what, file, symbol;
};

std::vector<MapRow> where_rows() {
  std::vector<MapRow> rows;
  const std::string section = map_section("Where it happens");
  const std::regex row(R"(\n\| ([^|]+) \| `([^`]+)` \| `([^`]+)` \|)");
  for (auto it = std::sregex_iterator(section.begin(), section.end(), row);
       it != std::sregex_iterator(); ++it)
    rows.push_back({(*it)[1], (*it)[2], (*it)[3]});
  return rows;
}

// What is searched for in the file: "class RunFileWriter" as written; "ModelImpl::forward" as a
// definition "ModelImpl::forward("; a plain function name as "name(".
std::string searched_text(const std::string& symbol) {
  if (symbol.find(' ') != std::string::npos || symbol.find('(') != std::string::npos)
    return symbol;
  return symbol + "(";
}

}  // namespace

TEST_CASE("architecture map: every 'where it happens' row names a file that holds its symbol") {
  const auto rows = where_rows();
  REQUIRE_MESSAGE(rows.size() >= 20, "the table of docs/architecture.md was not found or shrank");
  for (const auto& r : rows) {
    CAPTURE(r.what);
    CAPTURE(r.file);
    CAPTURE(r.symbol);
    const std::string text = read_text(map_source(r.file));
    REQUIRE_MESSAGE(!text.empty(), r.file << " does not exist (or is empty)");
    CHECK(text.find(searched_text(r.symbol)) != std::string::npos);
  }
}

TEST_CASE("architecture map: every path in 'how to add' exists") {
  const std::string section = map_section("How to add");
  REQUIRE(!section.empty());
  const std::regex path(R"(`((?:core|analysis|experiments|app|tests|configs|docs)/[A-Za-z0-9_./]+)`)");
  int paths = 0;
  for (auto it = std::sregex_iterator(section.begin(), section.end(), path);
       it != std::sregex_iterator(); ++it, ++paths) {
    const std::string rel = (*it)[1];
    CAPTURE(rel);
    CHECK(fs::exists(map_source(rel)));
  }
  CHECK(paths >= 15);
}

TEST_CASE("architecture map: the check can fail (a symbol the code does not have is not found)") {
  const std::string text = read_text(map_source("core/model/model.cpp"));
  CHECK(text.find(searched_text("ModelImpl::forward")) != std::string::npos);
  CHECK(text.find(searched_text("ModelImpl::no_such_member")) == std::string::npos);
}
