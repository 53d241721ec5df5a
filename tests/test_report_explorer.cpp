// The explorer of report.html (analysis/explorer.h, analysis/explorer.js) in a real headless
// Chromium: a report of two tiny trained runs is opened with #selftest=<probes>, the page drives
// its own selectors and cursor and writes what it showed into the DOM, which --dump-dom returns;
// every value must equal run.h5's (read here through core/io, P·Pᵀ and the curves' rows computed
// here from the stored tensors), and the page must record no script error. Chromium comes from
// scripts/setup.sh (Debian's `chromium`); without it the test fails and says so.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "analysis/explorer.h"
#include "analysis/report.h"
#include "analysis/run_source.h"
#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/util/process.h"
#include "core/util/system.h"
#include "tests/child_log.h"
#include "tests/text_file.h"
#include "tests/tiny_run.h"

using namespace relpos;
namespace fs = std::filesystem;

namespace {

// $RELPOS_CHROMIUM, else Debian's browser binary itself, else chromium, chromium-browser or
// google-chrome on PATH; "" if none. Debian's /usr/bin/chromium is a wrapper script that refuses
// to start ("lacks support for the sse3 instruction set") when /proc/cpuinfo's flag list has no
// sse3, as on a VM whose hypervisor trims the list (issue 53); the binary asks the processor.
std::string explorer_browser() {
  if (const char* env = std::getenv("RELPOS_CHROMIUM"); env && *env) return env;
  if (access("/usr/lib/chromium/chromium", X_OK) == 0) return "/usr/lib/chromium/chromium";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (std::string p = find_on_path(name); !p.empty()) return p;
  return "";
}

// The tiny run of tests/tiny_run.h with `variant`, 20 steps, snapshots at 0, 10 and 20.
std::vector<std::string> explorer_run_sets(const std::string& cache, const std::string& variant) {
  std::vector<std::string> sets = test::tiny_run(cache, 20);
  for (auto& s : sets) {
    if (s.rfind("position.type=", 0) == 0) s = "position.type=" + variant;
    if (s.rfind("snapshots.every_percent=", 0) == 0) s = "snapshots.every_percent=50";
    if (s.rfind("snapshots.probe_size=", 0) == 0) s = "snapshots.probe_size=3";
  }
  return sets;
}

// The text of the last element <tag id="id" ...>…</tag> in an HTML text (the page's own code,
// earlier, may quote the tag), entities &lt; &gt; &amp; decoded; "(absent)" when there is none.
std::string explorer_element_text(const std::string& html, const std::string& tag,
                                  const std::string& id) {
  const size_t at = html.rfind("<" + tag + " id=\"" + id + "\"");
  if (at == std::string::npos) return "(absent)";
  const size_t start = html.find('>', at) + 1, end = html.find("</" + tag + ">", start);
  std::string t = html.substr(start, end - start), out;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t.compare(k, 4, "&lt;") == 0) out += '<', k += 3;
    else if (t.compare(k, 4, "&gt;") == 0) out += '>', k += 3;
    else if (t.compare(k, 5, "&amp;") == 0) out += '&', k += 4;
    else out += t[k];
  }
  return out;
}

float explorer_at(const torch::Tensor& t, std::initializer_list<int64_t> index) {
  torch::Tensor v = t;
  for (int64_t k : index) v = v[k];
  return v.item<float>();
}

}  // namespace

TEST_CASE("the report's explorer shows run.h5's values for the chosen run, map, snapshot, layer "
          "and head, and overlays curves, in headless Chromium") {
  const std::string browser = explorer_browser();
  if (browser.empty())
    FAIL("Chromium not found (looked at $RELPOS_CHROMIUM, chromium, chromium-browser, "
         "google-chrome): run scripts/setup.sh, which installs Debian's chromium package");
  test::TempFolder tmp("explorer");
  const std::string exp = tmp.str("sweep");
  const std::string a = exp + "/learned+tisa-seed1", b = exp + "/alibi-seed1";
  test::train_here(explorer_run_sets(tmp.str("cache"), "learned+tisa"), a);
  test::train_here(explorer_run_sets(tmp.str("cache"), "alibi"), b);
  analysis::ReportInputs in;
  in.dir = exp;
  in.experiment = true;
  for (const auto& d : {a, b}) in.runs.push_back(analysis::RunFileSource(d).info());
  analysis::write_report(in);
  const std::string html_path = exp + "/report.html";
  const std::string page = test::read_text(html_path);
  // Self-contained: nothing loaded from elsewhere, and small.
  CHECK_FALSE(test::contains(page, "src=\"http"));
  CHECK_FALSE(test::contains(page, "<link"));
  CHECK(fs::file_size(html_path) < 2'000'000);

  const nlohmann::json probes = nlohmann::json::array({
      {{"run", "learned+tisa-seed1"}, {"map", "attention"}, {"step", 10}, {"layer", 1}, {"head", 1}, {"i", 7}, {"j", 3}},
      {{"run", "learned+tisa-seed1"}, {"map", "position scores: learned"}, {"step", 20}, {"layer", 0}, {"head", 0}, {"i", 2}, {"j", 5}},
      {{"run", "learned+tisa-seed1"}, {"map", "P·Pᵀ: learned"}, {"step", 0}, {"layer", 0}, {"head", 0}, {"i", 4}, {"j", 9}},
      {{"run", "alibi-seed1"}, {"map", "attention"}, {"step", 20}, {"layer", 0}, {"head", 1}, {"i", 30}, {"j", 5}},
      {{"run", "learned+tisa-seed1"}, {"curve", "tisa/f"}, {"row", "layer 0 head 1"}, {"step", 10}, {"r", -3}},
      {{"run", "alibi-seed1"}, {"curve", "alibi/profile"}, {"row", "head 1"}, {"step", 20}, {"r", 2}}});
  std::string hash;
  for (unsigned char c : probes.dump())
    hash += std::isalnum(c) ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  // Under coreutils' timeout: a browser that hangs fails the test instead of stalling ctest.
  std::vector<std::string> argv = {find_on_path("timeout"), std::to_string(test::kPatienceS)};
  if (argv[0].empty()) argv.clear();
  for (const std::string& a :
       {browser, std::string("--headless"), std::string("--no-sandbox"), std::string("--disable-gpu"),
        "--user-data-dir=" + tmp.str("chromium-profile"), std::string("--virtual-time-budget=20000"),
        std::string("--dump-dom"), "file://" + fs::absolute(html_path).string() + "#selftest=" + hash})
    argv.push_back(a);
  const ChildResult r = run_child(argv, SpawnOptions{});
  REQUIRE_MESSAGE(r.status() == 0, "chromium failed: " << r.err.substr(0, 2000));
  const std::string dom = r.out;
  CHECK(explorer_element_text(dom, "pre", "rx-errors").empty());
  const std::string result = explorer_element_text(dom, "pre", "rx-selftest");
  REQUIRE_MESSAGE(result != "(absent)", "no self-test result in the page:\n" << dom.substr(0, 3000));
  const nlohmann::json got = nlohmann::json::parse(result, nullptr, /*allow_exceptions=*/false);
  REQUIRE_MESSAGE(!got.is_discarded(), "the self-test result is not JSON:\n" << result);
  REQUIRE(got["results"].size() == probes.size());
  for (const auto& g : got["results"]) REQUIRE_MESSAGE(!g.contains("error"), g.dump());

  // What run.h5 holds there, read here.
  const auto ra = RunFileReader::open(a + "/run.h5"), rb = RunFileReader::open(b + "/run.h5");
  const auto& res = got["results"];
  const auto value = [&](size_t k) { return res[k]["value"].get<double>(); };
  for (size_t k = 0; k < 4; ++k) {  // T = 32 <= 64: every position shown, the asked cell
    CHECK(res[k]["i"] == probes[k]["i"]);
    CHECK(res[k]["j"] == probes[k]["j"]);
  }
  CHECK(value(0) == explorer_at(ra->dataset(schema::attention_path(10)).value, {1, 1, 7, 3}));
  CHECK(value(1) ==
        explorer_at(ra->dataset(schema::position_scores_path(20, "learned")).value, {0, 0, 2, 5}));
  const torch::Tensor table = ra->dataset(schema::position_path(0, "learned", "table")).value;
  double gram = 0;
  for (int64_t c = 0; c < table.size(1); ++c)
    gram += static_cast<double>(table[4][c].item<float>()) * table[9][c].item<float>();
  CHECK(value(2) == doctest::Approx(gram).epsilon(1e-6));  // shown as float32
  CHECK(value(3) == explorer_at(rb->dataset(schema::attention_path(20)).value, {0, 1, 30, 5}));
  // Curves: the row's value at the index of r in the variant's distances.
  const auto curve_value = [](const RunFileReader& f, int64_t step, const std::string& v,
                              const std::string& name, std::vector<int64_t> row, double r) {
    const torch::Tensor d = f.dataset(schema::position_path(step, v, "distances")).value;
    int64_t at = -1;
    for (int64_t k = 0; k < d.numel(); ++k)
      if (d[k].item<double>() == r) at = k;
    row.push_back(at);
    torch::Tensor t = f.dataset(schema::position_path(step, v, name)).value;
    for (int64_t k : row) t = t[k];
    return t.item<float>();
  };
  CHECK(res[4]["r"] == -3);
  CHECK(res[4]["step"] == 10);
  CHECK(value(4) == curve_value(*ra, 10, "tisa", "f", {0, 1}, -3));
  CHECK(res[5]["r"] == 2);
  CHECK(value(5) == curve_value(*rb, 20, "alibi", "profile", {1}, 2));
  // The readout says what it shows.
  CHECK(test::contains(res[0]["readout"].get<std::string>(), "query i = 7, key j = 3"));
  CHECK(test::contains(res[0]["readout"].get<std::string>(), "step 10, layer 1, head 1"));
}

namespace {

// A run of T = 256 positions, 2 layers and heads, 11 snapshots, attention entry (l, h, i, j) =
// l + h/10 + i/1000 + j/1e6 (exact enough in float32 to find each entry again).
class ExplorerBigRun : public analysis::RunSource {
 public:
  analysis::RunInfo run;
  ExplorerBigRun() {
    run.name = "big";
    run.group = "rope";
    for (int64_t s = 0; s <= 100; s += 10) run.snapshot_steps.push_back(s);
  }
  const analysis::RunInfo& info() const override { return run; }
  analysis::SnapshotData snapshot(int64_t step) const override {
    analysis::SnapshotData s;
    s.step = step;
    const auto i = torch::arange(256, torch::kFloat64);
    s.attention = (torch::arange(2, torch::kFloat64).view({2, 1, 1, 1}) +
                   torch::arange(2, torch::kFloat64).view({1, 2, 1, 1}) / 10 + i.view({1, 1, 256, 1}) / 1000 +
                   i.view({1, 1, 1, 256}) / 1e6)
                      .to(torch::kFloat32);  // (L,H,T,T)
    return s;
  }
};

}  // namespace

TEST_CASE("the explorer keeps to its budget on a large run: every s-th position, some snapshots, "
          "and the page says so") {
  ExplorerBigRun big;
  analysis::ExplorerBudget budget;
  budget.max_values = 20000;
  // T = 256 at most 64 a side: stride 4, 2·2·64² = 16384 values a snapshot, 3 snapshots too many;
  // stride 8: 4096 a snapshot, 4 snapshots = 16384 <= 20000.
  const nlohmann::json j = nlohmann::json::parse(
      analysis::explorer_json({&big}, analysis::VariantPalette({"rope"}), budget));
  const auto& run = j["runs"][0];
  CHECK(run["stride"] == 8);
  CHECK(run["steps"] == std::vector<int64_t>{0, 30, 70, 100});
  CHECK(test::contains(j["note"].get<std::string>(), "big: every 8th query/key (position) shown, 4 of its 11 snapshots"));
  const auto& map = run["maps"][0];
  REQUIRE(map["pos"].size() == 32);
  CHECK(map["pos"][3] == 24);
  // The embedded entry (layer 1, head 0, shown row 3, shown column 5) is the original (24, 40).
  const std::string bytes = [&] {
    const std::string b64 = map["data"][1].get<std::string>();
    std::string out;
    int val = 0, bits = -8;
    for (char c : b64) {
      const auto p = std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/").find(c);
      if (p == std::string::npos) break;
      val = (val << 6) + static_cast<int>(p), bits += 6;
      if (bits >= 0) out.push_back(static_cast<char>((val >> bits) & 0xFF)), bits -= 8;
    }
    return out;
  }();
  REQUIRE(bytes.size() == 2 * 2 * 32 * 32 * 4);
  const size_t at = ((1 * 2 + 0) * 32 + 3) * 32 + 5;
  uint32_t u = 0;
  for (int k = 3; k >= 0; --k) u = (u << 8) | static_cast<unsigned char>(bytes[4 * at + k]);
  float v = 0;
  std::memcpy(&v, &u, 4);
  CHECK(v == static_cast<float>(1.0 + 24 / 1000.0 + 40 / 1e6));
  CHECK(test::contains(analysis::explorer_html({&big}, analysis::VariantPalette({"rope"}), budget),
                       "every 8th query/key"));
}
