// Paths in outputs (core/util/paths.h): inside the repository they are written relative to its
// root, so committed results name no machine's folders, and read back against it; and which
// files a committed report may link, asked of git (analysis/committed_files.h).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "analysis/committed_files.h"
#include "core/util/paths.h"
#include "tests/analysis_sample.h"

using namespace relpos;
namespace fs = std::filesystem;

TEST_CASE("paths inside the repository are written relative to its root, others as given") {
  const std::string root = source_dir();
  CHECK(repo_relative(root + "/results/huang2020/pretrain/learned-seed1") ==
        "results/huang2020/pretrain/learned-seed1");
  CHECK(repo_relative(root + "/results/../configs/base.yaml") == "configs/base.yaml");
  CHECK(repo_relative(root) == ".");
  CHECK(repo_relative("/tmp/elsewhere/run") == "/tmp/elsewhere/run");
  CHECK(repo_relative(fs::path(root).parent_path().string() + "/other/x") ==
        fs::path(root).parent_path().string() + "/other/x");
  CHECK(repo_relative("") == "");
  // Command-line words: a path, or the path of key=path.
  CHECK(repo_relative_word(root + "/build/app/relpos") == "build/app/relpos");
  CHECK(repo_relative_word("data.cache_dir=" + root + "/data") == "data.cache_dir=data");
  CHECK(repo_relative_word("--quiet") == "--quiet");
  CHECK(repo_relative_word("position.type=learned") == "position.type=learned");
  CHECK(repo_relative_word("data.corpus=/data/squad/train.json") == "data.corpus=/data/squad/train.json");
  // Read back: a relative record is the repository's file when that exists.
  CHECK(resolve_repo_path("configs/base.yaml") == root + "/configs/base.yaml");
  CHECK(resolve_repo_path("/abs/path") == "/abs/path");
  CHECK(resolve_repo_path("no/such/folder") == "no/such/folder");
}

TEST_CASE("git says which files .gitignore leaves out, and tracked files are never among them") {
  const fs::path repo = test::analysis_scratch("git_ignored");
  const auto sh = [&](const std::string& cmd) {  // git's errors stay visible in the test's output
    return std::system(("cd '" + repo.string() + "' && " + cmd + " > /dev/null").c_str());
  };
  REQUIRE(sh("git init -q . && git config user.email t@t && git config user.name t") == 0);
  std::ofstream(repo / ".gitignore") << "*.pdf\n/results/**/*-seed[2-9]/figures/\n";
  for (const char* f : {"results/a/learned-seed1/figures/x.png",
                        "results/a/learned-seed2/figures/x.png", "results/a/report.pdf",
                        "results/a/tracked.pdf", "results/a/report.md"}) {
    fs::create_directories((repo / f).parent_path());
    std::ofstream(repo / f) << "x";
  }
  REQUIRE(sh("git add -f results/a/tracked.pdf && git commit -qm t") == 0);
  const std::vector<std::string> files = {
      (repo / "results/a/learned-seed1/figures/x.png").string(),
      (repo / "results/a/learned-seed2/figures/x.png").string(),
      (repo / "results/a/report.pdf").string(), (repo / "results/a/tracked.pdf").string(),
      (repo / "results/a/report.md").string()};
  const auto ignored = analysis::git_ignored(repo.string(), files);
  CHECK(ignored == std::set<std::string>{files[1], files[2]});
  // Not a git work tree: nothing is known to be left out.
  const fs::path plain = test::analysis_scratch("not_git");
  CHECK(analysis::git_ignored(plain.string(), {(plain / "x.pdf").string()}).empty());
  // A report outside the repository's results/ links whatever exists.
  CHECK(analysis::unlinkable(repo.string(), files).empty());
  fs::remove_all(repo);
  fs::remove_all(plain);
}
