// Figures: the data file holds the given numbers, the script is written beside it, and gnuplot
// turns it into a non-empty PNG and PDF (skipped when gnuplot is not installed).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "analysis/figures.h"
#include "analysis/gnuplot.h"
#include "tests/analysis_sample.h"
#include "tests/text_file.h"

using namespace relpos::analysis;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) { return relpos::test::analysis_scratch(name); }

// The numbers of every non-comment line.
std::vector<std::vector<double>> numbers(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::vector<double>> rows;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::vector<double> row;
    std::string tok;
    while (in >> tok) row.push_back(tok == "NaN" ? NAN : std::stod(tok));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("heatmap figure: data file, script, PNG and PDF") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = fresh_dir("heatmap");
  HeatmapPanel p;
  p.title = "test map";
  p.xlabel = "key position j";
  p.ylabel = "query position i";
  p.cblabel = "probability";
  p.x = {0, 1, 2};
  p.y = {0, 1};
  p.values = Matrix(2, 3);
  p.values.data = {0.5, 0.25, 0.25, 0.1, 0.2, 0.7};
  p.top_down = true;
  const FigureFiles f = plot_heatmaps(dir.string(), "map", "test map", {p, p}, 2);
  CHECK(fs::file_size(f.png) > 1000);
  CHECK(fs::file_size(f.pdf) > 1000);
  const std::string script = test::read_text(f.script);
  CHECK(script.find("set output \"map.\" . fmt") != std::string::npos);
  CHECK(script.find("nonuniform matrix with image") != std::string::npos);
  CHECK(script.find("set yrange [1.5:-0.5]") != std::string::npos);  // first row on top
  const auto rows = numbers(f.data);
  REQUIRE(rows.size() == 6);  // two panels: header + 2 rows each
  CHECK(rows[0] == std::vector<double>{3, 0, 1, 2});
  CHECK(rows[1] == std::vector<double>{0, 0.5, 0.25, 0.25});
  CHECK(rows[2] == std::vector<double>{1, 0.1, 0.2, 0.7});
  fs::remove_all(dir);
}

TEST_CASE("a long title is wrapped at spaces to its plot's width, not clipped") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = fresh_dir("long_title");
  HeatmapPanel p;
  p.x = {0, 1};
  p.y = {0, 1};
  p.values = Matrix(2, 2);
  p.values.data = {1, 2, 3, 4};
  // 900 px wide, one panel at 12 pt: (900 - 170) / (0.8 * 12) = 76 characters a line.
  const std::string title =
      "attention layer 0, mean over 12 heads — huang_m4 seed 1 (step 20000) (means of 2×2 "
      "blocks of the probe-averaged map)";
  const FigureFiles f = plot_heatmaps(dir.string(), "long", title, {p});
  const std::string script = test::read_text(f.script);
  const size_t at = script.find("  set title \"");
  REQUIRE(at != std::string::npos);
  const std::string line = script.substr(at + 13, script.find('\n', at) - at - 13);
  // Two lines, split at a space, the words in order, each line at most 76 code points.
  const size_t br = line.find("\\n");
  REQUIRE(br != std::string::npos);
  CHECK(line.find("\\n", br + 1) == std::string::npos);
  const std::string first = line.substr(0, br);
  const std::string second = line.substr(br + 2, line.find('"') - br - 2);
  CHECK(first + " " + second == title);
  auto code_points = [](const std::string& t) {
    int n = 0;
    for (unsigned char c : t) n += (c & 0xC0) != 0x80;
    return n;
  };
  CHECK(code_points(first) <= 76);
  CHECK(code_points(second) <= 76);
  CHECK(script.find("set rmargin 12") != std::string::npos);  // room for the colour bar
  fs::remove_all(dir);
}

TEST_CASE("curves figure with a second axis, a marked x and a gap") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = fresh_dir("curves");
  CurvesPanel p;
  p.xlabel = "step";
  p.ylabel = "invariance";
  p.y2label = "valid_loss";
  p.curves.push_back({"invariance", {0, 10, 20}, {0.1, 0.5, 0.9}, false, CurveStyle::linespoints});
  p.curves.push_back(
      {"valid_loss \"quoted\"", {0, 10, 20}, {3.0, NAN, 2.0}, true, CurveStyle::lines});
  p.vlines.push_back({10, "train length"});
  const FigureFiles f = plot_curves(dir.string(), "curves", "invariance during training", {p});
  CHECK(fs::file_size(f.png) > 1000);
  const std::string script = test::read_text(f.script);
  CHECK(script.find("axes x1y2") != std::string::npos);
  CHECK(script.find("title \"valid_loss \\\"quoted\\\"\"") != std::string::npos);
  const auto rows = numbers(f.data);
  REQUIRE(rows.size() == 6);
  CHECK(rows[4][0] == 10);
  CHECK(std::isnan(rows[4][1]));
  fs::remove_all(dir);
}

TEST_CASE("a mismatched heatmap is refused with its shapes") {
  HeatmapPanel p;
  p.x = {0, 1};
  p.y = {0};
  p.values = Matrix(2, 2);
  if (find_gnuplot().empty()) return;
  CHECK_THROWS_WITH(plot_heatmaps(fresh_dir("bad").string(), "bad", "bad", {p}),
                    doctest::Contains("values 2x2 but 1 y and 2 x coordinates"));
}

TEST_CASE("large heatmaps are drawn from block means") {
  HeatmapPanel p;
  p.title = "big";
  p.x = {0, 1, 2, 3, 4};
  p.y = {10, 11, 12, 13, 14};
  p.values = Matrix(5, 5);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 5; ++j) p.values(i, j) = j > i ? NAN : 10.0 * i + j;
  // 5 cells per axis, at most 2: blocks of 3 -> rows {0,1,2},{3,4}, same for columns.
  const HeatmapPanel q = downsample(p, 2);
  CHECK(q.title == "big (means of 3×3 blocks)");
  CHECK(q.x == std::vector<double>{1, 3.5});
  CHECK(q.y == std::vector<double>{11, 13.5});
  // block (0,0): visible 0, 10, 11, 20, 21, 22 -> 84/6 = 14
  CHECK(q.values(0, 0) == doctest::Approx(14.0));
  CHECK(std::isnan(q.values(0, 1)));  // rows 0-2, columns 3-4: all masked
  // block (1,0): rows 3,4 x cols 0..2: 30,31,32,40,41,42 -> 216/6 = 36
  CHECK(q.values(1, 0) == doctest::Approx(36.0));
  // block (1,1): 33, 43, 44 (34 masked) -> 120/3 = 40
  CHECK(q.values(1, 1) == doctest::Approx(40.0));
  CHECK(downsample(p, 5).values.data.size() == 25);  // small enough: unchanged
}

TEST_CASE("curves with a fixed line number keep their colour across panels") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = fresh_dir("lines");
  CurvesPanel a, b;
  a.curves.push_back({"alpha", {0, 1}, {0, 1}, false, CurveStyle::lines, 0});
  a.curves.push_back({"beta", {0, 1}, {1, 0}, false, CurveStyle::lines, 1});
  b.curves.push_back({"beta", {0, 1}, {1, 1}, false, CurveStyle::lines, 1});  // first in b
  b.curves.push_back({"gamma", {0, 1}, {0, 0}, false, CurveStyle::lines});    // by place: 2nd
  const FigureFiles f = plot_curves(dir.string(), "lines", "two panels", {a, b}, 2);
  const std::string script = test::read_text(f.script);
  // beta is line 2 in both panels, gamma (no number) takes its place in its panel: line 2 too.
  CHECK(script.find("\"lines.dat\" index 0 using 1:2 with lines lt 1 dt 1 title \"alpha\"") !=
        std::string::npos);
  CHECK(script.find("index 1 using 1:2 with lines lt 2 dt 1 title \"beta\"") != std::string::npos);
  CHECK(script.find("index 2 using 1:2 with lines lt 2 dt 1 title \"beta\"") != std::string::npos);
  CHECK(script.find("index 3 using 1:2 with lines lt 2 dt 1 title \"gamma\"") != std::string::npos);
  fs::remove_all(dir);
}

namespace {

// Every "lt N dt M pt P" of a script's plot clauses that carries a title (legend entries).
std::vector<std::string> legend_styles(const std::string& script) {
  std::vector<std::string> out;
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);) {
    const size_t lt = line.find(" lt "), title = line.find(" title ");
    if (lt == std::string::npos || title == std::string::npos) continue;
    out.push_back(line.substr(lt, title - lt));
  }
  return out;
}

}  // namespace

TEST_CASE("extrapolation figure: 13 variants get distinct colour and marker pairs, a lone point "
          "is drawn on top, accuracy spans its data") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = fresh_dir("extrapolation13");
  std::vector<ExtrapolationLine> lines;
  for (int v = 0; v < 13; ++v)
    lines.push_back({"variant" + std::to_string(v), {64, 128, 256},
                     {0.2 + 0.02 * v, 0.19 + 0.02 * v, 0.18 + 0.02 * v}});
  lines[2].value = {0.2, NAN, NAN};  // like learned: not applicable past its table
  extrapolation_figure(lines, "accuracy", 64, dir.string(), "ex", {"", "", "", "", "mlm", "test"});
  const std::string script = test::read_text((dir / "ex.gp").string());
  const auto styles = legend_styles(script);
  REQUIRE(styles.size() == 13);
  // (colour, marker) pairs: colour = lt, marker = pt; the dash may repeat, the pair may not.
  std::set<std::pair<std::string, std::string>> pairs;
  for (const auto& st : styles) {
    std::istringstream in(st);
    std::string w, lt, pt;
    while (in >> w) {
      if (w == "lt") in >> lt;
      if (w == "pt") in >> pt;
    }
    CAPTURE(st);
    CHECK_FALSE(pt.empty());
    pairs.insert({lt, pt});
  }
  CHECK(pairs.size() == 13);
  // Variant 2's one point: its legend says where, and it is plotted again, larger, untitled,
  // after every titled curve (on top).
  CHECK(script.find("title \"variant2 (only at 64)\"") != std::string::npos);
  const size_t again = script.find("index 2 using 1:2 with points lt 3");
  REQUIRE(again != std::string::npos);
  CHECK(script.find("ps 2.2 notitle", again) != std::string::npos);
  CHECK(again > script.find("title \"variant12\""));
  // The training-length line is behind the curves.
  CHECK(script.find("set arrow from 64, graph 0 to 64, graph 1 nohead dt 2 lw 1.5 lc rgb '#444444' back") !=
        std::string::npos);
  // The axis: what is counted and on which split; the data (0.18..0.44) with a margin of
  // max(0.02, 8 % of the span) = 0.0208, not all of [0, 1].
  CHECK(script.find("set ylabel \"masked-token accuracy on the test split\"") != std::string::npos);
  CHECK(script.find("set yrange [0.1592:0.4608]") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("per-head grid: one colour bar for all panels, labels on the outer panels") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = fresh_dir("one_bar");
  std::vector<HeatmapPanel> panels(4);
  for (int k = 0; k < 4; ++k) {
    HeatmapPanel& p = panels[k];
    p.title = "head " + std::to_string(k);
    p.xlabel = "key position j";
    p.ylabel = "query position i";
    p.cblabel = "attention probability";
    p.x = {0, 1};
    p.y = {0, 1};
    p.values = Matrix(2, 2);
    p.values.data = {0.5, 0.5, 0.25 * k, 1 - 0.25 * k};
    p.cbrange = std::make_pair(0.0, 1.0);
  }
  const FigureFiles f = plot_heatmaps(dir.string(), "grid", "attention per head", panels, 2,
                                      {900, 800}, true);
  CHECK(fs::file_size(f.png) > 1000);
  const std::string script = test::read_text(f.script);
  // Per output format (PNG, PDF): the bar with the last panel only, the others without.
  CHECK(test::count_occurrences(script, "set colorbox user origin screen") ==
        1);  // inside the format loop
  CHECK(test::count_occurrences(script, "unset colorbox") == 3);
  CHECK(test::count_occurrences(script, "set rmargin 12") == 0);
  // y label on the first column (panels 1, 3), x label on the bottom row (panels 3, 4).
  CHECK(test::count_occurrences(script, "set ylabel \"query position i\"") == 2);
  CHECK(test::count_occurrences(script, "set xlabel \"key position j\"") == 2);
  CHECK(script.find("margins screen") != std::string::npos);
  // The data are the panels' own, whatever the layout.
  const auto rows = numbers(f.data);
  REQUIRE(rows.size() == 12);
  CHECK(rows[11] == std::vector<double>{1, 0.75, 0.25});

  panels[3].cbrange = std::make_pair(0.0, 0.5);  // a different scale cannot share the bar
  CHECK_THROWS_WITH(plot_heatmaps(dir.string(), "bad", "bad", panels, 2, {900, 800}, true),
                    doctest::Contains("panel 4 differs from panel 1"));
  fs::remove_all(dir);
}

TEST_CASE("invariance figure: the metric axis in words, the legend under the plot") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = fresh_dir("inv_labels");
  const FigureInfo fig = invariance_figure({{"attention", {{0, 10}, {0.1, 0.2}}}}, "valid_accuracy",
                                           {{0, 10}, {0.2, 0.3}}, dir.string(), "x seed 1", "mlm");
  const std::string script = test::read_text((dir / "invariance_vs_step.gp").string());
  CHECK(script.find("set y2label \"validation masked-token accuracy\"") != std::string::npos);
  CHECK(script.find("title \"validation masked-token accuracy (right axis)\"") != std::string::npos);
  CHECK(script.find("valid_accuracy") == std::string::npos);
  CHECK(script.find("set key bmargin center horizontal") != std::string::npos);
  CHECK(fig.caption.find("validation masked-token accuracy on the right axis") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("metric axis labels say what the task counts") {
  CHECK(metric_axis_label("valid_accuracy", "mlm") == "validation masked-token accuracy");
  CHECK(metric_axis_label("accuracy", "classify") == "classification accuracy");
  CHECK(metric_axis_label("accuracy", "copy") == "token accuracy");
  CHECK(metric_axis_label("seq_accuracy", "copy") == "sequence accuracy");
  CHECK(metric_axis_label("valid_loss", "clm") == "validation next-token loss (nats)");
  // With the tokenizer: per byte or per token, as the tables say (units.h).
  CHECK(metric_axis_label("valid_loss", "clm", "bytes") ==
        "validation next-token loss (nats/byte)");
  CHECK(metric_axis_label("loss", "mlm", "sentencepiece") == "masked-token loss (nats/token)");
  CHECK(metric_axis_label("valid_accuracy", "mlm", "bytes") == "validation masked-token accuracy");
  CHECK(metric_axis_label("test_bits_per_byte", "clm") == "test loss (bits/byte)");
  CHECK(metric_axis_label("test_ppl", "clm") == "test perplexity (nonoverlapping chunks)");
  CHECK(metric_axis_label("valid_f1", "span_qa") == "validation F1 (%)");
  CHECK(metric_axis_label("valid_mcc", "classify") == "validation Matthews correlation");
  CHECK(metric_axis_label("f1", "classify") == "classification F1 (label 1, or macro)");
  CHECK(metric_axis_label("valid_f1") == "valid_f1");  // unknown without the task
  CHECK(metric_axis_label("accuracy") == "accuracy");
}

TEST_CASE("a title too long for one line breaks before its dash, never inside \"(step N)\"") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = fresh_dir("dash_title");
  HeatmapPanel p;
  p.x = {0, 1};
  p.y = {0, 1};
  p.values = Matrix(2, 2);
  p.values.data = {1, 2, 3, 4};
  // 760 px, one panel at 12 pt: (760 - 170) / (0.8 * 12) = 61 characters a line; 66 here.
  const std::string title = "attention layer 0, mean over 4 heads — huang_m4 seed 1 (step 600)";
  plot_heatmaps(dir.string(), "dash", title, {p}, 1, {760, 680});
  const std::string script = test::read_text((dir / "dash.gp").string());
  CHECK(script.find("set title \"attention layer 0, mean over 4 heads\\n— huang_m4 seed 1 (step "
                    "600)\"") != std::string::npos);
  // Without a dash: words wrap greedily, but "(step 600)" stays whole.
  // 51 characters, then " (step" would still fit in 61 and " 600)" would not.
  const std::string plain = "attention layer 0 mean over 4 heads of the model m4 (step 600)";
  plot_heatmaps(dir.string(), "plain", plain, {p}, 1, {760, 680});
  const std::string s2 = test::read_text((dir / "plain.gp").string());
  CHECK(s2.find("\\n(step 600)\"") != std::string::npos);
  fs::remove_all(dir);
}
