// The claims engine (analysis/claims.h, docs/analysis.md "Claims and verdicts") on constructed
// runs: the verdict rule with its hand-computed numbers (paired t over seeds, the evaluation
// noise added to the seed variance, Holm over the family), each testability gate (floor,
// chance, untrained rows, failed regime check, power), correlations within groups, the exact
// ratio of an architecture claim, and the Claims section, claims.json and CLAIMS.md (decided
// again as one family) written from them.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/claims.h"
#include "analysis/claims_report.h"
#include "analysis/distributions.h"
#include "analysis/run_records.h"
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

ComparisonConfig cmp(const std::string& test = "better", bool higher = true) {
  ComparisonConfig c;
  c.test = test;
  c.a = "A";
  c.b = "B";
  c.key = "m";
  c.higher_is_better = higher;
  return c;
}

ClaimConfig claim(const std::vector<ComparisonConfig>& parts, const std::string& id = "id") {
  ClaimConfig c;
  c.id = id;
  c.quote = "A beats B";
  c.source = "Someone 2020, Table 1";
  c.metric = "metric (0–1)";
  c.comparisons = parts;
  return c;
}

ClaimResult judge_one(const ClaimConfig& c, const std::vector<RunRecord>& r) {
  return judge({c}, r, "exp").at(0);
}

// The paired t statistic and two-sided p written out from the textbook formula.
std::pair<double, double> hand_t(const std::vector<double>& d, double extra_var = 0) {
  double m = 0, ss = 0;
  for (double v : d) m += v;
  m /= d.size();
  for (double v : d) ss += (v - m) * (v - m);
  const double n = static_cast<double>(d.size()), s2 = ss / (n - 1);
  const double se = std::sqrt(s2 / n + extra_var);
  const double df = extra_var == 0 ? n - 1 : std::pow(se, 4) / (std::pow(s2 / n, 2) / (n - 1));
  const double t = m / se;
  return {t, 2 * student_t_cdf(-std::abs(t), df)};
}

const std::vector<double> kWinA{0.31, 0.35, 0.33, 0.36, 0.30}, kWinB{0.26, 0.27, 0.25, 0.26, 0.27};

}  // namespace

TEST_CASE("verdict: a clear win is supported, with the paired t test written out by hand") {
  const auto r = judge_one(claim({cmp()}), runs(kWinA, kWinB));
  REQUIRE(r.parts.size() == 1);
  const auto& p = r.parts[0];
  std::vector<double> d;
  for (size_t k = 0; k < 5; ++k) d.push_back(kWinA[k] - kWinB[k]);
  const auto [t, p_two] = hand_t(d);
  CHECK(p.n == 5);
  CHECK(p.effect == doctest::Approx(0.068));
  CHECK(p.t == doctest::Approx(t));
  CHECK(p.p_two == doctest::Approx(p_two));
  CHECK(p.p_adjusted == doctest::Approx(p_two));  // a family of one
  CHECK(p.flip_p == doctest::Approx(1.0 / 32));   // every difference positive
  CHECK_FALSE(p.eval_noise);                      // the runs record none
  CHECK(p.verdict == Verdict::supported);
  CHECK(r.verdict == Verdict::supported);
  // The same numbers where lower is better: significantly the other way.
  CHECK(judge_one(claim({cmp("better", false)}), runs(kWinA, kWinB)).verdict == Verdict::not_supported);
}

TEST_CASE("verdict: the evaluation set's noise widens the interval and can turn a win inconclusive") {
  auto r = runs(kWinA, kWinB);
  // Each run's number has an evaluation variance (shared test set): var(a) + var(b) per pair.
  for (auto& x : r) x.values["var:m"] = 0.0004;
  const auto part = judge_one(claim({cmp()}), r).parts.at(0);
  std::vector<double> d;
  for (size_t k = 0; k < 5; ++k) d.push_back(kWinA[k] - kWinB[k]);
  const auto [t, p_two] = hand_t(d, 0.0008);
  CHECK(part.eval_noise);
  CHECK(part.eval_var == doctest::Approx(0.0008));
  CHECK(part.t == doctest::Approx(t));
  CHECK(part.p_two == doctest::Approx(p_two));
  CHECK(part.hi - part.lo > 2 * 1.96 * std::sqrt(0.0008));
  // A larger noise: the same seeds no longer decide it.
  for (auto& x : r) x.values["var:m"] = 0.004;
  const auto noisy = judge_one(claim({cmp()}), r);
  CHECK(noisy.verdict == Verdict::inconclusive);
  CHECK(noisy.parts[0].why.find("Holm-adjusted p") != std::string::npos);
}

TEST_CASE("verdict: Holm over the family; fewer than five seeds stay out of it, inconclusive") {
  // Three comparisons of one claim: C beats B by a lot, A beats B (kWin), D vs B on n = 3.
  auto r = runs(kWinA, kWinB);
  for (int64_t k = 1; k <= 5; ++k) r.push_back({"C", {{"m", 0.5 + 0.01 * k}}, k});
  for (int64_t k = 1; k <= 3; ++k) r.push_back({"D", {{"m", 0.9}}, k});
  auto c1 = cmp(), c2 = cmp(), c3 = cmp();
  c2.a = "C";
  c3.a = "D";
  const auto res = judge_one(claim({c1, c2, c3}), r);
  REQUIRE(res.parts.size() == 3);
  // Holm by hand: m = 2 tested; the smaller p is doubled, the larger kept (and never below it).
  const double pa = res.parts[0].p_two, pc = res.parts[1].p_two;
  const double small = std::min(pa, pc), large = std::max(pa, pc);
  CHECK((pa < pc ? res.parts[0] : res.parts[1]).p_adjusted == doctest::Approx(2 * small));
  CHECK((pa < pc ? res.parts[1] : res.parts[0]).p_adjusted == doctest::Approx(std::max(large, 2 * small)));
  CHECK(std::isnan(res.parts[2].p_adjusted));
  CHECK(res.parts[2].verdict == Verdict::inconclusive);
  CHECK(res.parts[2].why == "n = 3 < 5 seeds");
  CHECK(res.verdict == Verdict::inconclusive);
}

TEST_CASE("gate: every run of an arm at the metric's floor, or both arms at chance, is not testable") {
  auto c = claim({cmp()});
  c.bounds = {0, 1};
  const auto floor = judge_one(c, runs({0, 0, 0, 0, 0}, {0.1, 0.0, 0.2, 0.0, 0.1}));
  CHECK(floor.verdict == Verdict::not_testable);
  CHECK(floor.parts[0].gate == "every run of A (5) is at the metric's floor 0");
  CHECK(std::isnan(floor.parts[0].p_adjusted));  // not tested, not in the family
  // Both at the floor would have been "+0 [+0, +0]" and, before the gates, "not supported".
  CHECK(judge_one(c, runs({0, 0, 0, 0, 0}, {0, 0, 0, 0, 0})).verdict == Verdict::not_testable);
  // Chance: both arms' intervals include 0.5.
  c.bounds.clear();
  c.chance = 0.5;
  const auto chance = judge_one(c, runs({0.49, 0.52, 0.50, 0.51, 0.48}, {0.50, 0.47, 0.53, 0.49, 0.52}));
  CHECK(chance.verdict == Verdict::not_testable);
  CHECK(chance.parts[0].gate.find("both A and B are at chance (0.5)") == 0);
  // One arm clearly above chance: testable.
  CHECK(judge_one(c, runs({0.70, 0.72, 0.71, 0.73, 0.69}, {0.50, 0.47, 0.53, 0.49, 0.52})).verdict ==
        Verdict::supported);
}

TEST_CASE("gate: a comparison reading position-table rows never trained before the stage") {
  auto r = runs(kWinA, kWinB);
  r[2].values["untrained_rows"] = 112;  // one A run read 112 untrained rows
  const auto res = judge_one(claim({cmp()}), r);
  CHECK(res.verdict == Verdict::not_testable);
  CHECK(res.parts[0].gate.find("A reads up to 112 position-table rows that no earlier stage trained") == 0);
}

TEST_CASE("gate: a claim whose regime check is not supported is not testable, whatever its data") {
  ClaimConfig regime = claim({cmp()}, "regime");
  regime.role = "regime";
  ClaimConfig main = claim({cmp()}, "main");
  main.comparisons[0].a = "C";
  auto r = runs({0.30, 0.25, 0.33, 0.24, 0.31}, kWinB);  // A vs B: not decided
  for (int64_t k = 1; k <= 5; ++k) r.push_back({"C", {{"m", 0.9}}, k});
  const auto out = judge({regime, main}, r, "exp");
  CHECK(out[0].verdict == Verdict::inconclusive);
  CHECK(out[1].verdict == Verdict::not_testable);
  CHECK(out[1].gate.find("its stage's regime check (regime) is inconclusive") == 0);
  // With a supported regime check the same claim is judged.
  const auto ok = judge({regime, main}, runs(kWinA, kWinB, "A", "B"), "exp");
  CHECK(ok[0].verdict == Verdict::supported);
  // An architecture claim (judged at the source's size) is never gated by a regime check.
  main.paper_size = {"model.width=768"};
  main.comparisons[0].test = "ratio";
  main.comparisons[0].margin = 2;
  auto counts = r;
  for (auto& x : counts) x.values["m"] = x.group == "C" ? 10 : 30;
  const auto arch = judge({regime, main}, counts, "exp");
  CHECK(arch[1].verdict == Verdict::supported);  // B / C = 3 >= 2, exact counts
  CHECK(arch[1].parts[0].effect == doctest::Approx(3.0));
}

TEST_CASE("gate: too little power for the effect the source reports is not testable here") {
  const std::vector<double> a{0.30, 0.25, 0.33, 0.24, 0.31}, b{0.27, 0.29, 0.26, 0.28, 0.25};
  auto c = cmp();
  c.target_effect = 0.01;
  c.target_note = "the source";
  const auto res = judge_one(claim({c}), runs(a, b));
  const auto& p = res.parts[0];
  // The smallest detectable effect at 80% power, one-sided 0.05: (t_.95 + t_.80) sd / sqrt(n).
  std::vector<double> d;
  for (size_t k = 0; k < 5; ++k) d.push_back(a[k] - b[k]);
  double m = 0, ss = 0;
  for (double v : d) m += v;
  m /= 5;
  for (double v : d) ss += (v - m) * (v - m);
  const double sd = std::sqrt(ss / 4);
  const double mde = (student_t_quantile(0.95, 4) + student_t_quantile(0.8, 4)) * sd / std::sqrt(5.0);
  CHECK(p.mde == doctest::Approx(mde));
  CHECK(p.verdict == Verdict::not_testable);
  CHECK(p.gate.find("too little power") == 0);
  CHECK(p.seeds_needed > 5);
  // A target larger than what the runs detect leaves an honest inconclusive, saying so.
  c.target_effect = 1.0;
  const auto big = judge_one(claim({c}), runs(a, b));
  CHECK(big.verdict == Verdict::inconclusive);
  CHECK(big.parts[0].why.find("detects") != std::string::npos);
}

TEST_CASE("correlation: judged within each group, partialling out a value, intervals over seeds") {
  // Two groups at different levels: pooled they correlate strongly, within each not at all.
  std::vector<RunRecord> r;
  for (int64_t s = 1; s <= 6; ++s)
    for (int step : {1, 2, 3}) {
      const double noise = ((s * 7 + step * 3) % 5 - 2) * 0.01;
      r.push_back({"L", {{"x", 0.2 + noise}, {"y", 1.0 - noise * 0.1 * step}}, s, "", {{"steps", std::to_string(step)}}});
      r.push_back({"T", {{"x", 0.8 + noise}, {"y", 5.0 + noise}}, s, "", {{"steps", std::to_string(step)}}});
    }
  ComparisonConfig c;
  c.test = "correlation";
  c.key = "x";
  c.y_key = "y";
  c.over = {"L", "T"};
  const auto res = judge_one(claim({c}), r);
  REQUIRE(res.parts.size() == 2);  // one per group
  CHECK(res.parts[0].label.find("L: x against y") == 0);
  CHECK(res.parts[0].n == 18);
  CHECK(res.note.find("Pooled over L, T (description, not judged") != std::string::npos);
  CHECK(std::isfinite(res.parts[0].lo));
  // A perfect within-group relation is supported.
  std::vector<RunRecord> line;
  for (int64_t s = 1; s <= 6; ++s)
    for (int step : {1, 2, 3}) line.push_back({"L", {{"x", step + 0.1 * s}, {"y", 2.0 * step + 0.2 * s}}, s});
  c.over = {"L"};
  const auto perfect = judge_one(claim({c}), line);
  CHECK(perfect.parts[0].effect == doctest::Approx(1.0));
  CHECK(perfect.verdict == Verdict::supported);
}

TEST_CASE("claims: optional arms without runs are left out and named; a claim combines its parts") {
  auto c1 = cmp(), c2 = cmp();
  c2.b = "Missing";
  c2.optional = true;
  const auto res = judge_one(claim({c1, c2}), runs(kWinA, kWinB));
  CHECK(res.parts.size() == 1);
  CHECK(res.note == "A vs Missing left out: no runs of Missing here.");
  CHECK(res.verdict == Verdict::supported);
  // A supported part and a not-testable one: not testable as a whole, with the reason.
  auto c3 = cmp();
  c3.a = "Z";
  auto r = runs(kWinA, kWinB);
  for (int64_t k = 1; k <= 5; ++k) r.push_back({"Z", {{"m", 0.0}}, k});
  auto mixed = claim({c1, c3});
  mixed.bounds = {0, 1};
  const auto m = judge_one(mixed, r);
  CHECK(m.parts[0].verdict == Verdict::supported);
  CHECK(m.parts[1].verdict == Verdict::not_testable);
  CHECK(m.verdict == Verdict::not_testable);
  CHECK(m.gate.find("every run of Z") == 0);
}

TEST_CASE("pairing: runs of two variants pair by seed although each config writes its own "
          "variant's block; other varied settings and a swept variant parameter do not pair") {
  // As run_records builds them: settings are what varies over the configs of the compared runs.
  std::vector<std::string> yamls;
  for (int64_t k = 1; k <= 5; ++k)
    yamls.push_back(fmt::format("seed: {}\nposition: {{type: none, none: {{}}}}\n", k));
  for (int64_t k = 1; k <= 5; ++k)
    yamls.push_back(fmt::format(
        "seed: {}\nposition: {{type: t5_bias, t5_bias: {{buckets: 32, max_distance: 128}}}}\n", k));
  const auto settings = varied_settings(yamls);
  REQUIRE(settings.count("position.t5_bias.buckets") == 1);
  auto r = runs(kWinA, kWinB);
  for (size_t i = 0; i < r.size(); ++i)
    for (const auto& [key, values] : settings) r[i].settings[key] = values[i];
  const auto res = judge_one(claim({cmp()}), r);
  CHECK(res.parts.at(0).n == 5);  // was 0: "no runs of A and B with the same seed and settings"
  CHECK(res.verdict == Verdict::supported);

  // A setting outside the variants' blocks still unpairs: B at another learning rate.
  auto lr = r;
  for (auto& run : lr) run.settings["train.lr"] = run.group == "B" ? "0.003" : "0.001";
  CHECK(judge_one(claim({cmp()}), lr).parts.at(0).n == 0);

  // Two runs of B per seed (a sweep over its own clip) cannot be paired until `where` picks one.
  auto swept = r;
  for (size_t k = 0; k < 5; ++k) {
    RunRecord extra = r[5 + k];
    extra.settings["position.t5_bias.buckets"] = "16";
    swept.push_back(extra);
  }
  const auto amb = judge_one(claim({cmp()}), swept);
  CHECK(amb.parts.at(0).n == 0);
  CHECK(amb.parts.at(0).note.find("several runs of B share seed=1") == 0);
  auto picked = cmp();
  picked.where = {"position.t5_bias.buckets=16"};
  // A condition on B's own parameter picks among B's runs and leaves A's (which lack it) in.
  const auto one = judge_one(claim({picked}), swept);
  CHECK(one.parts.at(0).n == 5);
  CHECK(one.parts.at(0).effect == doctest::Approx(judge_one(claim({cmp()}), r).parts.at(0).effect));
}

TEST_CASE("claims: the report section, claims.json read back, and CLAIMS.md deciding all together") {
  const fs::path root = test::analysis_scratch("claims_index");
  // Two experiments, each with one win that its own family (m = 1) supports.
  // Differences 0.010, 0.030, 0.005, 0.020, 0.010: t = 3.35 on 4 df, two-sided p = 0.029.
  const std::vector<double> a{0.300, 0.325, 0.296, 0.312, 0.306}, b{0.290, 0.295, 0.291, 0.292, 0.296};
  const auto one = judge({claim({cmp()}, "c1")}, runs(a, b), "exp1");
  const auto two = judge({claim({cmp()}, "c2")}, runs(a, b), "exp2");
  REQUIRE(one[0].verdict == Verdict::supported);
  const double p = one[0].parts[0].p_two;
  REQUIRE(p < 0.05);
  REQUIRE(2 * p >= 0.05);  // doubled by Holm over both it is not below 0.05
  const std::string md = write_claims((root / "exp1").string(), "exp1", one);
  CHECK(md.find("## Claims") == 0);
  CHECK(md.find("| 1 | \"A beats B\" | Someone 2020, Table 1 | metric (0–1) | **supported** |") !=
        std::string::npos);
  write_claims((root / "exp2").string(), "exp2", two);
  const auto back = read_claims((root / "exp1" / "claims.json").string());
  REQUIRE(back.size() == 1);
  CHECK(back[0].claim.id == "c1");
  CHECK(back[0].parts[0].p_two == doctest::Approx(p));
  CHECK(back[0].parts[0].spec.a == "A");
  // No report.md yet: the index leaves the folders out.
  CHECK(write_claims_index(root.string()).empty());
  for (const char* e : {"exp1", "exp2"}) std::ofstream(root / e / "report.md") << "# e\n";
  const std::string text = test::read_text(write_claims_index(root.string()));
  CHECK(text.find("Holm adjustment runs over all 2 tested comparisons") != std::string::npos);
  CHECK(text.find("(exp1/report.md) | \"A beats B\"") != std::string::npos);
  CHECK(text.find("**supported**") == std::string::npos);  // 2p >= 0.05 for both
  CHECK(text.find("**inconclusive**") != std::string::npos);
  // A record of an earlier relpos (verdicts without claim configs) stays out of the family and
  // is listed with the command that judges it.
  fs::create_directories(root / "exp0");
  std::ofstream(root / "exp0" / "report.md") << "# exp0\n";
  std::ofstream(root / "exp0" / "claims.json")
      << R"({"claims": [{"id": "old", "quote": "X beats Y", "verdict": "supported"}]})";
  CHECK_THROWS_AS(read_claims((root / "exp0" / "claims.json").string()), EarlierClaimsRecord);
  const std::string with_old = test::read_text(write_claims_index(root.string()));
  CHECK(with_old.find("Holm adjustment runs over all 2 tested comparisons") != std::string::npos);
  CHECK(with_old.find("## Not judged at this revision") != std::string::npos);
  CHECK(with_old.find("`build/app/relpos reproduce exp0 --scale mini`") != std::string::npos);
  CHECK(with_old.find("X beats Y") == std::string::npos);
  fs::remove_all(root / "exp0");
  // A broken record is an error naming the file.
  fs::create_directories(root / "exp3");
  std::ofstream(root / "exp3" / "report.md") << "# exp3\n";
  std::ofstream(root / "exp3" / "claims.json") << "[1, 2]";
  CHECK_THROWS_WITH_AS(write_claims_index(root.string()),
                       doctest::Contains("exp3/claims.json: not a claims record"), SchemaError);
  fs::remove_all(root);
}

TEST_CASE("claims: not-testable claims list their reason and what testing them would take") {
  auto c = claim({cmp()});
  c.bounds = {0, 1};
  c.to_test = "a GPU run (relpos reproduce x --scale gpu, 5 minutes)";
  ProvenanceConfig prov;
  prov.change = "steps 100 -> 200.";
  prov.why = "A pilot stayed at the floor.";
  prov.claims = {"id"};
  const auto res = judge({c}, runs({0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}), "exp", {prov});
  REQUIRE(res[0].provenance.size() == 1);
  const std::string md = claims_markdown(res, "1 comparison");
  CHECK(md.find("### Not testable here") != std::string::npos);
  CHECK(md.find("To test it: a GPU run (relpos reproduce x --scale gpu, 5 minutes)") != std::string::npos);
  CHECK(md.find("### Configuration changes made after a result was seen") != std::string::npos);
  CHECK(md.find("- steps 100 -> 200. Why: A pilot stayed at the floor. Claims it touched: id.") !=
        std::string::npos);
}
