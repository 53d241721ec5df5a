// Statements of the docs and header comments that a reader acts on, checked against the code:
// the functions "adding a variant / a task" tells them to edit exist under that name, the naive
// test file the recipe names is where the newest variants are tested, and what docs/pretrained.md
// says `relpos eval` adds to an imported run is what it adds.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/position/position_registry.h"
#include "tests/hf_test_util.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

std::string source_text(const std::string& rel) {
  std::ifstream in(std::string(RELPOS_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether `name(` occurs outside a comment in a source file of the four libraries.
bool defined_in_code(const std::string& name) {
  const std::regex call("\\b" + name + "\\(");
  for (const char* dir : {"core", "analysis", "experiments", "app"})
    for (const auto& e : fs::recursive_directory_iterator(std::string(RELPOS_SOURCE_DIR) + "/" + dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".h") continue;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) {
        const size_t comment = line.find("//");
        if (std::regex_search(line.substr(0, comment), call)) return true;
      }
    }
  return false;
}

}  // namespace

TEST_CASE("docs: every function the registries' recipes name exists under that name") {
  // `name()` in the recipes: README "Adding a position encoding", docs/variants.md "Adding a
  // variant", and the header comments of both registries (which once named build_registry()
  // and register_all(), functions that do not exist).
  const std::regex fn("`?\\b([a-z_][a-z0-9_]*)\\(\\)");
  std::set<std::string> names;
  for (const char* file : {"README.md", "docs/variants.md", "core/position/position_registry.h",
                           "core/task/task_registry.h", "docs/architecture.md"}) {
    const std::string text = source_text(file);
    REQUIRE_MESSAGE(!text.empty(), file);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), fn); it != std::sregex_iterator();
         ++it)
      if ((*it)[1].str().find("regist") != std::string::npos) names.insert((*it)[1].str());
  }
  CHECK(names.count("build_position_registry") == 1);
  CHECK(names.count("build_task_registry") == 1);
  for (const auto& n : names) {
    CAPTURE(n);
    CHECK(defined_in_code(n));
  }
}

TEST_CASE("docs: the naive test file the recipe names is where the newest variants are tested") {
  // README step 4 names one file for a new variant's naive loop; the last registered variants
  // must have theirs there (the recipe once named tests/test_variants_naive.cpp, which holds
  // only the first ones).
  const std::string readme = source_text("README.md");
  const std::smatch m = [&] {
    std::smatch r;
    std::regex_search(readme, r, std::regex("4\\. Test it against a naive loop[^`]*`(tests/[a-z_]+\\.cpp)`"));
    return r;
  }();
  REQUIRE(m.size() == 2);
  const std::string file = m[1].str();
  const std::string tests = source_text(file);
  REQUIRE_MESSAGE(!tests.empty(), file);
  const auto names = Registry::get().names();
  const std::string newest = names.back();
  CAPTURE(newest);
  CHECK(std::regex_search(tests, std::regex("naive_tests\\(\\{[^}]*\"" + newest + "\"")));
  CHECK(source_text("docs/variants.md").find(file) != std::string::npos);
}

TEST_CASE("docs: relpos eval adds no attention maps to an imported run, as docs/pretrained.md says") {
  TempFolder tmp("docs_eval_attention");
  const std::string run = tmp.str("bert");
  import_ok(hf_fixture("bert_absolute"), run,
            {"--set", "data.corpus=" + fixture_path("trainer/corpus.txt"), "--set",
             "data.cache_dir=" + tmp.str("cache"), "--set", "eval.max_tokens=256"});
  const ChildResult r = relpos_cli({"eval", "--run", run, "--lengths", "8,16"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto h5 = RunFileReader::open(run_h5_path(run));
  CHECK(h5->exists("/eval/extrapolation"));
  const auto steps = h5->snapshot_steps();
  CHECK(steps == std::vector<int64_t>{0});
  for (const auto& step : steps) CHECK_FALSE(h5->exists(schema::attention_path(step)));
  const std::string doc = source_text("docs/pretrained.md");
  CHECK(doc.find("`relpos eval` adds them") == std::string::npos);
  CHECK(doc.find("`relpos eval` writes only the\nlength-extrapolation table") != std::string::npos);
}
