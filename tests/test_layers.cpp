// The layer rule (docs/architecture.md, "Layers") is checked by every build with
// scripts/check_layers.cmake. Here: the repository passes it, and a source tree with an upward
// include fails it with the file, the line and what the layer may include.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/util/process.h"
#include "tests/child_log.h"
#include "tests/io_test_util.h"

namespace fs = std::filesystem;
using namespace relpos;

namespace {

ChildResult check_layers(const std::string& root) {
  return test::call_program(
      RELPOS_CMAKE,
      {"-DROOT=" + root, "-P", std::string(RELPOS_SOURCE_DIR) + "/scripts/check_layers.cmake"});
}

void write_source(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("layers: the sources follow the layer rule") {
  const ChildResult r = check_layers(RELPOS_SOURCE_DIR);
  CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
}

TEST_CASE("layers: an include from a higher layer fails, naming the file, line and rule") {
  test::ScratchDir dir("layers");
  const fs::path root = dir.path;
  // A tree that follows the rule, then one upward include at a time.
  write_source(root / "core/util/errors.h", "#pragma once\n");
  write_source(root / "core/train/trainer.h", "#pragma once\n#include \"core/util/errors.h\"\n");
  write_source(root / "analysis/figures.h", "#pragma once\n#include \"core/util/errors.h\"\n");
  write_source(root / "experiments/sweep.cpp",
               "#include \"analysis/figures.h\"\n#include \"core/train/trainer.h\"\n");
  REQUIRE_MESSAGE(check_layers(root.string()).exit_code == 0, "the clean tree must pass");

  struct Case {
    std::string file, text, message;
  };
  const Case cases[] = {
      {"core/util/paths.cpp", "// a helper\n#include <string>\n#include \"analysis/figures.h\"\n",
       "core/util/paths.cpp:3: includes \"analysis/figures.h\" (analysis), but core/util may "
       "include only core/util and: nothing outside itself"},
      {"core/train/run.cpp", "#include \"experiments/sweep.h\"\n",
       "core/train/run.cpp:1: includes \"experiments/sweep.h\" (experiments), but core/train may "
       "include only core/train and: core/util, core/config, core/position, core/data, "
       "core/task, core/model, core/io, core/dist"},
      {"analysis/tables.cpp", "#include \"core/train/trainer.h\"\n",
       "analysis/tables.cpp:1: includes \"core/train/trainer.h\" (core/train), but analysis may "
       "include only analysis and: core/util, core/config, core/io, core/task"},
      {"core/config/config.cpp", "  #  include \"core/position/position_registry.h\"\n",
       "core/config/config.cpp:1: includes \"core/position/position_registry.h\" (core/position), but "
       "core/config may include only core/config and: core/util"}};
  for (const auto& c : cases) {
    CAPTURE(c.file);
    write_source(root / c.file, c.text);
    const ChildResult r = check_layers(root.string());
    CHECK(r.exit_code != 0);
    const std::string said = r.out + r.err;
    CHECK_MESSAGE(said.find("layer rule broken") != std::string::npos, said);
    // CMake wraps long messages at spaces; compare with the spacing taken out.
    auto squeeze = [](std::string s) {
      s.erase(std::remove_if(s.begin(), s.end(), [](char ch) { return std::isspace(ch); }), s.end());
      return s;
    };
    CHECK_MESSAGE(squeeze(said).find(squeeze(c.message)) != std::string::npos, said);
    fs::remove(root / c.file);
  }
}
