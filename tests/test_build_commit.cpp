// The commit a build records (scripts/build_commit.cmake, git_commit() in core/util/system.h):
// the script run on scratch git repositories, checked against git's own HEAD, and the value
// compiled into this test binary.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "core/util/process.h"
#include "core/util/system.h"
#include "tests/child_log.h"
#include "tests/io_test_util.h"

namespace fs = std::filesystem;
using namespace relpos;

namespace {

// The commit scripts/build_commit.cmake writes for SOURCE into OUTPUT.
std::string commit_written(const std::string& source, const std::string& output) {
  const ChildResult r = test::call_program(
      RELPOS_CMAKE, {"-DSOURCE_DIR=" + source, "-DOUTPUT=" + output, "-P",
                     std::string(RELPOS_SOURCE_DIR) + "/scripts/build_commit.cmake"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.out << r.err);
  std::ifstream in(output);
  std::stringstream text;
  text << in.rdbuf();
  std::smatch m;
  const std::string s = text.str();
  REQUIRE_MESSAGE(std::regex_search(s, m, std::regex("return \"([^\"]*)\";")), s);
  return m[1];
}

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string git(const std::string& dir, const std::string& args) {
  const ChildResult r = test::call_program(
      "/bin/sh", {"-c", "git -C '" + dir + "' -c user.name=t -c user.email=t@t " + args});
  REQUIRE_MESSAGE(r.exit_code == 0, "git " << args << ": " << r.err);
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

TEST_CASE("build commit: HEAD, -dirty for changed code or configs, never for results or docs") {
  test::ScratchDir tmp("build_commit");
  const std::string d = tmp.file("repo"), out = tmp.file("build_commit.cpp");
  for (const std::string f : {"/results/run/report.md", "/docs/x.md", "/README.md",
                              "/configs/a.yaml", "/main.cpp"})
    write(d + f, "v1\n");
  const ChildResult init = test::call_program("/bin/sh", {"-c", "git init -q '" + d + "'"});
  if (init.exit_code != 0) FAIL("git is needed for this test: " << init.err);
  git(d, "add -A");
  git(d, "commit -qm init");
  const std::string head = git(d, "rev-parse HEAD");  // git's own answer, the reference
  REQUIRE(head.size() == 40);
  CHECK(commit_written(d, out) == head);
  for (const std::string f : {"/results/run/report.md", "/docs/x.md", "/README.md"}) {
    write(d + f, "v2\n");
    CHECK_MESSAGE(commit_written(d, out) == head, f);
  }
  fs::remove(d + "/results/run/report.md");  // a results folder deleted before a re-run
  CHECK(commit_written(d, out) == head);
  write(d + "/configs/a.yaml", "v2\n");
  CHECK(commit_written(d, out) == head + "-dirty");
  git(d, "checkout -q -- configs");
  CHECK(commit_written(d, out) == head);
  write(d + "/main.cpp", "v2\n");
  CHECK(commit_written(d, out) == head + "-dirty");
  write(d + "/untracked.cpp", "new\n");  // untracked files are not part of any commit
  git(d, "checkout -q -- main.cpp");
  CHECK(commit_written(d, out) == head);

  // A new commit is a new answer.
  write(d + "/main.cpp", "v3\n");
  git(d, "commit -qam second");
  const std::string second = git(d, "rev-parse HEAD");
  CHECK(second != head);
  CHECK(commit_written(d, out) == second);
}

TEST_CASE("build commit: unknown outside a checkout, and for a copy inside someone else's") {
  test::ScratchDir tmp("build_commit_copy");
  const std::string out = tmp.file("build_commit.cpp");
  write(tmp.file("plain/main.cpp"), "v1\n");
  CHECK(commit_written(tmp.file("plain"), out) == "unknown");
  // relpos's tree copied (without its .git) into a folder of another repository: that
  // repository's HEAD says nothing about relpos's code.
  const std::string outer = tmp.file("outer");
  write(outer + "/relpos/main.cpp", "v1\n");
  const ChildResult init = test::call_program("/bin/sh", {"-c", "git init -q '" + outer + "'"});
  if (init.exit_code != 0) FAIL("git is needed for this test: " << init.err);
  git(outer, "add -A");
  git(outer, "commit -qm outer");
  CHECK(commit_written(outer + "/relpos", out) == "unknown");
  CHECK(commit_written(outer, out) == git(outer, "rev-parse HEAD"));
}

TEST_CASE("build commit: the file is not rewritten when its text is unchanged") {
  // Rewriting it would recompile it and relink every executable at every build.
  test::ScratchDir tmp("build_commit_stamp");
  const std::string out = tmp.file("build_commit.cpp");
  write(tmp.file("plain/main.cpp"), "v1\n");
  commit_written(tmp.file("plain"), out);
  const auto old = fs::last_write_time(out) - std::chrono::hours(24);
  fs::last_write_time(out, old);
  commit_written(tmp.file("plain"), out);
  CHECK(fs::last_write_time(out) == old);
  std::ofstream(out) << "// something else\n";
  CHECK(commit_written(tmp.file("plain"), out) == "unknown");
}

TEST_CASE("git_commit: the commit compiled in; $RELPOS_COMMIT only for a build without one") {
  const std::string built = build_commit();
  CHECK_MESSAGE(std::regex_match(built, std::regex("[0-9a-f]{40}(-dirty)?|unknown")), built);
  const char* before = std::getenv("RELPOS_COMMIT");
  const std::string saved = before ? before : "";
  setenv("RELPOS_COMMIT", "0123abcd", 1);
  CHECK(git_commit() == (built == "unknown" ? std::string("0123abcd") : built));
  unsetenv("RELPOS_COMMIT");
  CHECK(git_commit() == built);
  if (before) setenv("RELPOS_COMMIT", saved.c_str(), 1);
}
