// Replays the inputs kept from fuzzing (tests/fixtures/fuzz/<harness>/: crashes found by
// scripts/fuzz.sh, named after what they broke) and the harnesses' seeds (every YAML file under
// configs/ for the config harness, as scripts/fuzz.sh seeds it; fuzz/corpus/data for the data
// harness) through the same checks the libFuzzer harnesses run (fuzz/fuzz_checks.h): each input must load
// or be refused with a relpos::Error, and what loads must satisfy the harness's invariants (a
// resolved config survives its YAML round trip, a corpus holds valid UTF-8 and labels in range).
// Memory errors themselves (the config crash kept here was a use-after-free) only show under the
// sanitizers of scripts/fuzz.sh; here the input still runs through the fixed code path.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz/fuzz_checks.h"
#include "tests/helpers.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> inputs_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The seeds scripts/fuzz.sh starts a harness from.
std::vector<fs::path> seeds_of(const std::string& harness) {
  if (harness != "config") return inputs_in(fs::path(RELPOS_SOURCE_DIR) / "fuzz" / "corpus" / harness);
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(RELPOS_SOURCE_DIR) / "configs"))
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs every input of `harness` through `check`; returns how many ran.
template <class Check>
size_t replay(const std::string& harness, Check check) {
  size_t n = 0;
  for (const auto& inputs :
       {inputs_in(relpos::test::fixture_path("fuzz/" + harness)), seeds_of(harness)}) {
    for (const auto& p : inputs) {
      CAPTURE(p.string());
      const std::string b = file_bytes(p);
      try {
        check(reinterpret_cast<const uint8_t*>(b.data()), b.size());
      } catch (const relpos::fuzz::FuzzFinding& e) {
        FAIL_CHECK("fuzz finding: " << std::string(e.what()));
      } catch (const std::exception& e) {
        FAIL_CHECK("an exception that is not a relpos error escaped: " << std::string(e.what()));
      }
      ++n;
    }
  }
  std::error_code ec;
  fs::remove_all(relpos::fuzz::scratch(), ec);
  return n;
}

}  // namespace

TEST_CASE("fuzz regressions: the config parser on the kept crashes and the seed corpus") {
  // The kept crash: a comment-led overlay setting position.type, which made the loader read a
  // YAML node through a reference into a temporary iterator proxy.
  const fs::path crash = relpos::test::fixture_path("fuzz/config/crash-proxy-node-none-overlay.yaml");
  REQUIRE(fs::exists(crash));
  const size_t n = replay("config", relpos::fuzz::check_config);
  CHECK(n >= 10);
}

TEST_CASE("fuzz regressions: the data loaders on the kept inputs and the seed corpus") {
  const size_t n = replay("data", relpos::fuzz::check_data);
  CHECK(n >= 10);
}

TEST_CASE("fuzz checks catch what they claim: a config that loads is round-tripped, bad bytes "
          "are refused with a relpos error") {
  // A sanity check of the harness itself, so that the replays above cannot pass vacuously:
  // a valid config loads (no finding), and a label out of range in a TSV is refused (DataError,
  // swallowed by check_data) rather than loaded.
  const std::string good = "model:\n  layers: 2\n";
  CHECK_NOTHROW(relpos::fuzz::check_config(reinterpret_cast<const uint8_t*>(good.data()), good.size()));
  const std::string tsv = std::string("\x01\x00", 2) + "sentence\tlabel\nhello\t7\n";
  CHECK_NOTHROW(relpos::fuzz::check_data(reinterpret_cast<const uint8_t*>(tsv.data()), tsv.size()));
  CHECK_THROWS_AS(relpos::load_tsv(relpos::fuzz::put("x.tsv", "sentence\tlabel\nhello\t7\n"), {}),
                  relpos::DataError);
  std::error_code ec;
  fs::remove_all(relpos::fuzz::scratch(), ec);
}
