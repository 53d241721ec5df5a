// The claim verdict rule (analysis/claims.h, docs/analysis.md "Claims and verdicts") on
// constructed runs: a clear win, a clear loss, an overlap, too few seeds, a non-inferiority
// margin, a correlation, an exact count ratio, missing variants; and the Claims section and
// results/CLAIMS.md written from them.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/claims.h"
#include "analysis/claims_report.h"
#include "core/util/errors.h"
#include "tests/analysis_sample.h"
#include "tests/text_file.h"

using namespace relpos;
using namespace relpos::analysis;
namespace fs = std::filesystem;

namespace {

// Runs of two variants over seeds 1..n with the given values of key "m".
std::vector<RunRecord> runs(const std::vector<double>& a, const std::vector<double>& b,
                            const std::string& ga = "A", const std::string& gb = "B") {
  std::vector<RunRecord> out;
  for (size_t k = 0; k < a.size(); ++k) out.push_back({ga, {{"m", a[k]}}, int64_t(k + 1)});
  for (size_t k = 0; k < b.size(); ++k) out.push_back({gb, {{"m", b[k]}}, int64_t(k + 1)});
  return out;
}

Claim better(bool higher = true) {
  Comparison c;
  c.a = {"A", "m"};
  c.b = {"B", "m"};
  c.higher_is_better = higher;
  return {"id", "A beats B", "Someone 2020, Table 1", "metric (0–1)", {c}};
}

}  // namespace

TEST_CASE("verdict: a clear win with five seeds is supported") {
  const auto r = evaluate_claim(better(), runs({0.31, 0.35, 0.33, 0.36, 0.30},
                                               {0.26, 0.27, 0.25, 0.26, 0.27}));
  REQUIRE(r.parts.size() == 1);
  CHECK(r.parts[0].n == 5);
  CHECK(r.parts[0].effect == doctest::Approx(0.068));  // mean of the paired differences
  CHECK(r.parts[0].lo > 0);
  CHECK(r.parts[0].paired.flip_greater == 1.0 / 32);  // every difference positive
  CHECK(r.verdict == Verdict::supported);
  // The same numbers where lower is better: the claim is now clearly refuted.
  CHECK(evaluate_claim(better(false), runs({0.31, 0.35, 0.33, 0.36, 0.30},
                                           {0.26, 0.27, 0.25, 0.26, 0.27}))
            .verdict == Verdict::not_supported);
}

TEST_CASE("verdict: a clear loss is not supported") {
  const auto r = evaluate_claim(better(), runs({0.20, 0.21, 0.19, 0.22, 0.20},
                                               {0.26, 0.27, 0.25, 0.26, 0.27}));
  CHECK(r.parts[0].hi < 0);
  CHECK(r.verdict == Verdict::not_supported);
}

TEST_CASE("verdict: overlapping seeds are inconclusive, and say why") {
  const auto r = evaluate_claim(better(), runs({0.61, 0.55, 0.66, 0.58, 0.63, 0.60},
                                               {0.60, 0.59, 0.62, 0.61, 0.58, 0.64}));
  CHECK(r.parts[0].lo < 0);
  CHECK(r.parts[0].hi > 0);
  CHECK(r.verdict == Verdict::inconclusive);
  CHECK(r.parts[0].note == "the 95% interval includes 0");
}

TEST_CASE("verdict: fewer than five paired seeds are inconclusive, however large the effect") {
  // Three seeds, every one far ahead: the t interval excludes 0, but three seeds decide nothing.
  const auto r = evaluate_claim(better(), runs({16.5, 17.5, 16.4}, {7.0, 6.0, 8.5}));
  CHECK(r.parts[0].n == 3);
  CHECK(r.parts[0].lo > 0);  // the interval alone would say "supported"
  CHECK(r.verdict == Verdict::inconclusive);
  CHECK(r.parts[0].note == "n = 3 < 5 seeds");
  // Seeds that only one variant has are not paired: 5 runs each but 4 common seeds.
  auto rs = runs({0.4, 0.4, 0.5, 0.45, 0.44}, {0.1, 0.2, 0.1, 0.2, 0.1});
  rs.back().seed = 9;
  CHECK(evaluate_claim(better(), rs).parts[0].n == 4);
}

TEST_CASE("verdict: the interval on the claimed side but the sign-flip test not below 0.05") {
  // Six pairs, two of them slightly against the claim: the t interval excludes 0, but flipping
  // the two small negative differences gives sums at least as large, so the exact sign-flip p
  // is 4/64 = 0.0625: inconclusive.
  const auto r = evaluate_claim(better(), runs({1.0, 1.0, 1.0, 1.0, 0.9, 0.9},
                                               {0.9, 0.9, 0.9, 0.9, 0.91, 0.91}));
  CHECK(r.parts[0].paired.flip_greater == 4.0 / 64);
  CHECK(r.parts[0].lo > 0);
  CHECK(r.parts[0].paired.flip_greater > 0.05);
  CHECK(r.verdict == Verdict::inconclusive);
}

TEST_CASE("verdict: non-inferiority within a margin") {
  Claim c = better();
  c.comparisons[0].test = ClaimTest::not_worse;
  c.comparisons[0].margin = 0.02;
  // A slightly worse by 0.005 ± little: within the margin, supported.
  CHECK(evaluate_claim(c, runs({0.600, 0.610, 0.595, 0.605, 0.600},
                               {0.605, 0.614, 0.600, 0.611, 0.604}))
            .verdict == Verdict::supported);
  // A worse by 0.05: beyond the margin, not supported.
  CHECK(evaluate_claim(c, runs({0.550, 0.560, 0.545, 0.555, 0.550},
                               {0.605, 0.614, 0.600, 0.611, 0.596}))
            .verdict == Verdict::not_supported);
}

TEST_CASE("verdict: a correlation across runs and an exact count ratio") {
  Claim corr{"c", "goes with", "src", "r", {}};
  Comparison cc;
  cc.test = ClaimTest::correlation;
  cc.a = {"", "x"};
  cc.b = {"", "y"};
  corr.comparisons = {cc};
  std::vector<RunRecord> rs;
  for (int k = 0; k < 8; ++k)
    rs.push_back({k % 2 ? "learned" : "learned+tisa", {{"x", 0.1 * k}, {"y", 0.2 * k + 0.01 * (k % 3)}}, k});
  const auto up = evaluate_claim(corr, rs);
  CHECK(up.parts[0].effect > 0.99);
  CHECK(up.verdict == Verdict::supported);
  for (auto& r : rs) r.values["y"] = -r.values["y"];
  CHECK(evaluate_claim(corr, rs).verdict == Verdict::not_supported);
  rs.resize(4);
  CHECK(evaluate_claim(corr, rs).verdict == Verdict::inconclusive);  // n = 4 < 5

  Claim ratio{"r", "orders of magnitude less", "src", "count", {}};
  Comparison rc;
  rc.test = ClaimTest::ratio;
  rc.a = {"tisa", "params"};
  rc.b = {"learned", "params"};
  rc.margin = 100;
  ratio.comparisons = {rc};
  const std::vector<RunRecord> counts = {{"tisa", {{"params", 60}}, 1}, {"learned", {{"params", 4096}}, 1}};
  const auto mini = evaluate_claim(ratio, counts);
  CHECK(mini.parts[0].effect == doctest::Approx(4096.0 / 60));
  CHECK(mini.verdict == Verdict::not_supported);  // 68x is less than two orders of magnitude
  ratio.comparisons[0].margin = 10;
  CHECK(evaluate_claim(ratio, counts).verdict == Verdict::supported);
}

TEST_CASE("verdict: optional arms without runs are left out and named, and a claim of several "
          "comparisons needs every one") {
  Claim c = better();
  Comparison extra;
  extra.a = {"C", "m"};
  extra.b = {"B", "m"};
  extra.optional = true;
  c.comparisons.push_back(extra);
  const auto rs = runs({0.31, 0.35, 0.33, 0.36, 0.30}, {0.26, 0.27, 0.25, 0.26, 0.27});
  const auto r = evaluate_claim(c, rs);
  CHECK(r.parts.size() == 1);
  CHECK(r.note == "C vs B left out: no runs of C here.");
  CHECK(r.verdict == Verdict::supported);
  // With C present and losing to B, the claim is not supported.
  auto more = rs;
  for (int64_t k = 1; k <= 5; ++k) more.push_back({"C", {{"m", 0.1}}, k});
  CHECK(evaluate_claim(c, more).verdict == Verdict::not_supported);
  // Every arm missing: nothing to compare, inconclusive.
  Claim none{"n", "q", "s", "m", {extra}};
  const auto empty = evaluate_claim(none, {});
  CHECK(empty.parts.empty());
  CHECK(empty.verdict == Verdict::inconclusive);
  CHECK(combine({Verdict::supported, Verdict::inconclusive}) == Verdict::inconclusive);
  CHECK(combine({Verdict::supported, Verdict::not_supported}) == Verdict::not_supported);
}

TEST_CASE("claims: the report section, claims.json and the CLAIMS.md index linking each report") {
  const fs::path root = test::analysis_scratch("claims_index");
  const auto win = evaluate_claim(better(), runs({0.31, 0.35, 0.33, 0.36, 0.30},
                                                 {0.26, 0.27, 0.25, 0.26, 0.27}));
  const std::string md = write_claims((root / "exp1").string(), "exp1", {win});
  CHECK(md.find("## Claims") == 0);
  CHECK(md.find("| 1 | \"A beats B\" | Someone 2020, Table 1 | metric (0–1) | **supported** |") !=
        std::string::npos);
  CHECK(md.find("| 1 | A vs B | a − b > 0 | 5 | +0.068 [") != std::string::npos);
  const auto j = nlohmann::json::parse(test::read_text((root / "exp1" / "claims.json").string()));
  CHECK(j.at("claims").at(0).at("verdict") == "supported");
  // No report.md yet: the index leaves exp1 out (it lists experiments whose reports exist).
  CHECK(write_claims_index(root.string()).empty());
  std::ofstream(root / "exp1" / "report.md") << "# exp1\n";
  const std::string index = write_claims_index(root.string());
  REQUIRE(index == (root / "CLAIMS.md").string());
  const std::string text = test::read_text(index);
  // The link resolves from CLAIMS.md (the folder is outside the repository, so its text is the
  // path as given).
  CHECK(text.find("(exp1/report.md) | \"A beats B\"") != std::string::npos);
  CHECK(text.find("**supported**") != std::string::npos);
  // A broken record is an error naming the file.
  fs::create_directories(root / "exp2");
  std::ofstream(root / "exp2" / "report.md") << "# exp2\n";
  std::ofstream(root / "exp2" / "claims.json") << "[1, 2]";
  CHECK_THROWS_WITH_AS(write_claims_index(root.string()),
                       doctest::Contains("exp2/claims.json: not a claims record"), SchemaError);
  fs::remove_all(root);
}
