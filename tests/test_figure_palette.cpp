// One colour per variant across the figures of a report, and the invariance figures of an
// experiment: the final-invariance scatter draws the baseline-corrected P·Pᵀ score (the claims'
// quantity), the P·Pᵀ panel the random-table level. Checked on the gnuplot scripts and data files
// the analysis writes, against values computed here by hand.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "analysis/experiment.h"
#include "analysis/gnuplot.h"
#include "analysis/variant_palette.h"
#include "tests/analysis_sample.h"
#include "tests/text_file.h"

using namespace relpos;
using namespace relpos::analysis;
namespace fs = std::filesystem;

namespace {

// The colour of every legend entry of a gnuplot script: title -> "#rrggbb", from its
// "set linetype N lc rgb '#...'" lines and each plot clause's "lt N ... title \"NAME\"".
std::map<std::string, std::string> palette_legend_colours(const std::string& script) {
  std::map<int, std::string> linetype;
  const std::regex lt_def(R"(set linetype (\d+) lc rgb '(#[0-9a-f]{6})')");
  for (std::sregex_iterator it(script.begin(), script.end(), lt_def), end; it != end; ++it)
    linetype[std::stoi((*it)[1])] = (*it)[2];
  std::map<std::string, std::string> out;
  const std::regex clause(R"re( lt (\d+) [^\n]*? title "([^"]*)")re");
  for (std::sregex_iterator it(script.begin(), script.end(), clause), end; it != end; ++it) {
    std::string title = (*it)[2];
    // "learned (only at 64)": the legend says where a lone point lies; the variant is before it
    if (const size_t at = title.find(" (only at"); at != std::string::npos) title.resize(at);
    out[title] = linetype.at(std::stoi((*it)[1]));
  }
  return out;
}

// A run of `group` with 5 snapshots, its final P·Pᵀ score `gram` (for variants with a learned
// table), a length evaluation when `lengths`, and final valid_ppl `ppl`.
RunResult palette_run(const std::string& group, int64_t seed, double gram, double ppl,
                      bool lengths) {
  RunResult r;
  r.info.group = r.info.position_types = group;
  r.info.name = fmt::format("{}-seed{}", group, seed);
  r.info.seed = seed;
  r.info.task = "clm";
  r.info.tokenizer = "bytes";
  r.info.train_length = 64;
  r.info.metrics["valid_ppl"] = {{0, 50, 100}, {30, 10, ppl}};
  r.metric = "valid_ppl";
  r.final_metric = ppl;
  r.steps = {0, 25, 50, 75, 100};
  r.metric_at_step = {30, 20, 10, 9, ppl};
  r.invariance["attention"] = {0.2, 0.3, 0.4, 0.5, 0.6 + 0.01 * seed};
  if (group.rfind("learned", 0) == 0) {
    r.invariance["gram:learned"] = {0.667, 0.68, 0.7, 0.72, gram};
    r.baselines["gram:learned"] = {0.667, 0.66, 0.674, 200, "random 64 × 128 Gaussian tables"};
  }
  if (lengths) {
    r.info.extrapolation.length = {64, 128};
    r.info.extrapolation.columns = {{"ppl", {ppl, 2 * ppl}}};
    r.info.extrapolation.attrs = {{"split", "test"}, {"task", "clm"}};
  }
  return r;
}

}  // namespace

TEST_CASE("a variant has one colour in every figure of a report, whatever the figure shows") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("palette");
  // Three variants, two seeds each; only rope and learned are evaluated at other lengths, only
  // learned and learned+tisa have a P·Pᵀ score: three figures, three different subsets.
  std::vector<RunResult> runs;
  const std::map<std::string, std::vector<double>> gram = {{"learned", {0.70, 0.75}},
                                                           {"learned+tisa", {0.80, 0.90}},
                                                           {"rope", {NAN, NAN}}};
  const std::map<std::string, std::vector<double>> ppl = {{"learned", {9.0, 8.5}},
                                                          {"learned+tisa", {8.0, 7.0}},
                                                          {"rope", {7.5, 7.2}}};
  for (const std::string v : {"rope", "learned+tisa", "learned"})
    for (int s = 0; s < 2; ++s)
      runs.push_back(palette_run(v, s + 1, gram.at(v)[s], ppl.at(v)[s], v != "learned+tisa"));
  AnalyzeOptions o;
  summarize_experiment(runs, dir.string(), o);

  const fs::path figs = dir / "figures";
  const auto extrapolation = palette_legend_colours(test::read_text(figs / "extrapolation_ppl.gp"));
  const auto by_variant = palette_legend_colours(test::read_text(figs / "invariance_by_variant.gp"));
  const auto scatter =
      palette_legend_colours(test::read_text(figs / "final_invariance_vs_metric.gp"));
  CHECK(extrapolation.size() == 2);
  CHECK(scatter.size() == 2);  // the variants with an absolute table
  REQUIRE(by_variant.size() == 3);
  // Every variant the same colour wherever it is drawn; distinct variants distinct colours.
  for (const auto* fig : {&extrapolation, &scatter})
    for (const auto& [variant, colour] : *fig) {
      CAPTURE(variant);
      REQUIRE(by_variant.count(variant));
      CHECK(colour == by_variant.at(variant));
    }
  std::set<std::string> distinct;
  for (const auto& [variant, colour] : by_variant) distinct.insert(colour);
  CHECK(distinct.size() == 3);
  // Every panel of the by-variant figure draws each variant in that colour too (one clause per
  // panel and variant: attention and metric panels hold all three, P·Pᵀ two).
  const std::string script = test::read_text(figs / "invariance_by_variant.gp");
  for (const auto& [variant, colour] : by_variant) {
    std::string quoted;  // the name as a regex: '+' of a stack is literal
    for (char c : variant) quoted += c == '+' ? std::string("\\+") : std::string(1, c);
    const std::regex clause(" lt (\\d+) [^\\n]*? title \"" + quoted + "\"");
    std::set<std::string> lts;
    for (std::sregex_iterator it(script.begin(), script.end(), clause), end; it != end; ++it)
      lts.insert((*it)[1]);
    CAPTURE(variant);
    CHECK(lts.size() == 1);
  }
  fs::remove_all(dir);
}

TEST_CASE("the final-invariance figure draws the baseline-corrected P·Pᵀ score, the by-variant "
          "figure the random table's level") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("palette_gram");
  std::vector<RunResult> runs;
  const std::vector<double> finals = {0.70, 0.75, 0.80, 0.90, 0.72};
  for (int s = 0; s < 5; ++s)
    runs.push_back(palette_run(s < 3 ? "learned" : "learned+tisa", s + 1, finals[s],
                               9.0 - 0.3 * s, false));
  summarize_experiment(runs, dir.string(), AnalyzeOptions{});
  const fs::path figs = dir / "figures";
  const std::string script = test::read_text(figs / "final_invariance_vs_metric.gp");
  CHECK(test::contains(script, "P·Pᵀ translation invariance, baseline-corrected"));
  CHECK_FALSE(test::contains(script, "attention"));
  CHECK(test::contains(script, "set label \"random table (I₀)\" at 0,"));
  // The data: (I − I₀)/(1 − I₀) with I₀ = 0.667, by hand, against each run's final ppl.
  std::istringstream data(test::read_text(figs / "final_invariance_vs_metric.dat"));
  std::multiset<std::pair<long, long>> got, want;
  for (std::string line; std::getline(data, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    double x = 0, y = 0;
    in >> x >> y;
    got.insert({std::lround(x * 1e5), std::lround(y * 1e5)});
  }
  for (int s = 0; s < 5; ++s)
    want.insert({std::lround((finals[s] - 0.667) / (1 - 0.667) * 1e5),
                 std::lround((9.0 - 0.3 * s) * 1e5)});
  CHECK(got == want);
  // The P·Pᵀ panel of the by-variant figure: a dotted line at I₀ with its value.
  const std::string panels = test::read_text(figs / "invariance_by_variant.gp");
  CHECK(test::contains(panels, "set arrow from graph 0, first 0.667 to graph 1, first 0.667"));
  CHECK(test::contains(panels, "set label \"random table I₀ = 0.667\""));
  // Five runs: the correlation across runs is printed, and equals Pearson's r written out
  // (final attention 0.61..0.65 against final ppl 9.0..7.8).
  const auto corr = test::read_lines(dir / "tables" / "final_invariance_correlation.csv");
  REQUIRE(corr.size() >= 2);
  std::vector<double> att, metric;
  for (int s = 0; s < 5; ++s) att.push_back(0.6 + 0.01 * (s + 1)), metric.push_back(9.0 - 0.3 * s);
  const std::string row = corr[1];
  CHECK(row.rfind("inv. attention (0–1),5,", 0) == 0);
  const double r = std::stod(row.substr(std::string("inv. attention (0–1),5,").size()));
  CHECK(r == doctest::Approx(test::naive_pearson(att, metric)).epsilon(1e-6));
  fs::remove_all(dir);
}

TEST_CASE("the palette: a variant's style is its place in the report's sorted list") {
  const VariantPalette p({"rope", "learned", "alibi", "learned", "learned+tisa"});
  CHECK(p.names() == std::vector<std::string>{"alibi", "learned", "learned+tisa", "rope"});
  CHECK(p.line("alibi") == 0);
  CHECK(p.line("rope") == 3);
  CHECK(p.colour("learned") == "#ff7f0e");  // Tableau-10's second colour
  // A name outside the list: after the list, the same each time.
  CHECK(p.line("cope") >= 4);
  CHECK(p.line("cope") == VariantPalette({"rope", "alibi", "learned+tisa", "learned"}).line("cope"));
}
