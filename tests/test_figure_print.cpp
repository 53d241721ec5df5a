// Paper-ready figures: the trained distances marked on relative-weight figures, SVG beside PNG
// and PDF, the figures.size presets (checked on the files gnuplot wrote: the PDF's page box, the
// PNG's header), the probe count in attention captions, and statistics over fewer than 5 points
// left out of the tables.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <regex>

#include "analysis/figures.h"
#include "analysis/gnuplot.h"
#include "analysis/run_analysis.h"
#include "analysis/run_source.h"
#include "core/config/config.h"
#include "core/util/errors.h"
#include "tests/analysis_sample.h"
#include "tests/helpers.h"
#include "tests/run_file_sample.h"
#include "tests/text_file.h"

using namespace relpos;
using namespace relpos::analysis;
namespace fs = std::filesystem;

namespace {

// Width and height in PDF points of the first page (its /MediaBox), read from the file's text.
std::pair<double, double> print_media_box(const std::string& pdf) {
  const std::string text = test::read_text(pdf);
  std::smatch m;
  const std::regex box(R"(/MediaBox\s*\[\s*0\s+0\s+([0-9.]+)\s+([0-9.]+)\s*\])");
  if (!std::regex_search(text, m, box)) return {0, 0};
  return {std::stod(m[1]), std::stod(m[2])};
}

// Width of a PNG in pixels: bytes 16..19 of the file, big-endian (the IHDR chunk, PNG spec §11.2.2).
uint32_t print_png_width(const std::string& png) {
  const std::string b = test::read_text(png);
  if (b.size() < 24 || b.compare(1, 3, "PNG") != 0) return 0;
  uint32_t w = 0;
  for (int k = 16; k < 20; ++k) w = (w << 8) | static_cast<unsigned char>(b[k]);
  return w;
}

bool print_is_svg(const std::string& path) {
  const std::string t = test::read_text(path);
  return t.rfind("<?xml", 0) == 0 && test::contains(t, "<svg") && test::contains(t, "</svg>");
}

}  // namespace

TEST_CASE("relative-weight figures mark the trained distances |r| < T, causal ones r <= 0 too") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("trained_band");
  FigureOptions fo;
  fo.train_length = 8;
  const auto figs = relative_weight_figures(test::sample_snapshot(), dir.string(), "x", 50, false, fo);
  for (const auto& f : figs) CHECK(test::contains(f.caption, "the distances |r| < 8"));
  // Curves (ALiBi per head, TISA per layer and head): a band over r in [−7, 7] in every panel.
  const std::string alibi = test::read_text(dir / "relpos_alibi_profile.gp");
  CHECK(test::contains(alibi, "set object 1 rect from -7, graph 0 to 7, graph 1 back"));
  CHECK(test::contains(alibi, "set label \"trained |r| < 8\" at 0, graph 0.97"));
  CHECK(test::count_occurrences(test::read_text(dir / "relpos_tisa_f.gp"),
                                "set object 1 rect from -7, graph 0 to 7, graph 1") == 2);
  // Huang m1's scales over |r|: the band starts at 0.
  CHECK(test::contains(test::read_text(dir / "relpos_huang_m1_scale.gp"),
                       "set object 1 rect from 0, graph 0 to 7, graph 1"));
  // A table drawn as a heatmap (Shaw's keys, r in [−12, 12]): dashed lines at ±7.
  const std::string shaw = test::read_text(dir / "relpos_shaw_keys_layer0.gp");
  CHECK(test::contains(shaw, "set arrow from -7, graph 0 to -7, graph 1 nohead"));
  CHECK(test::contains(shaw, "set arrow from 7, graph 0 to 7, graph 1 nohead"));
  CHECK(test::contains(shaw, "\"trained |r| < 8\""));
  fs::remove_all(dir);

  const fs::path causal = test::analysis_scratch("trained_band_causal");
  relative_weight_figures(test::sample_snapshot(100, true), causal.string(), "x", 50, true, fo);
  CHECK(test::contains(test::read_text(causal / "relpos_alibi_profile.gp"),
                       "set object 1 rect from -7, graph 0 to 0, graph 1"));
  fs::remove_all(causal);
}

TEST_CASE("every figure is written as SVG beside PNG and PDF; column and page presets set the "
          "printed width") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("print_sizes");
  const analysis::SnapshotData s = test::sample_snapshot();
  const std::vector<ExtrapolationLine> lines = {{"alibi", {64, 128}, {3.0, 3.1}},
                                                {"rope", {64, 128}, {3.0, 4.0}}};
  // Screen: the figure's own size, 900 px and 9 in.
  const FigureInfo screen = extrapolation_figure(lines, "loss", 64, dir.string(), "screen");
  const fs::path stem = fs::path(screen.png).replace_extension();
  CHECK(print_png_width(screen.png) == 900);
  CHECK(print_media_box(stem.string() + ".pdf").first == doctest::Approx(648.0).epsilon(0.01));  // 9 in
  CHECK(print_is_svg(stem.string() + ".svg"));
  // Column: 3.3 in (237.6 pt), the PNG at 300 dots an inch, a legend right of the plot moved
  // under it, fonts of 8 pt and more.
  FigureOptions column;
  column.size = FigurePreset::column;
  const FigureInfo col = extrapolation_figure(lines, "loss", 64, dir.string(), "column", {}, column);
  const std::string col_stem = fs::path(col.png).replace_extension().string();
  CHECK(print_media_box(col_stem + ".pdf").first == doctest::Approx(237.6).epsilon(0.01));
  CHECK(print_png_width(col.png) == 990);  // 3.3 in at 300 dots an inch
  CHECK(print_is_svg(col_stem + ".svg"));
  const std::string script = test::read_text(col_stem + ".gp");
  CHECK(test::contains(script, "set terminal pdfcairo size 3.30in,"));
  CHECK(test::contains(script, "font \"Sans,8\""));
  CHECK(test::contains(script, "set key bmargin center horizontal"));
  // A grid of head panels does not fit a column: page width (6.9 in = 496.8 pt).
  const auto att = attention_figures(s, dir.string(), "x", false, {}, column);
  REQUIRE(att.size() == 4);  // per layer: head average, heads
  CHECK(print_media_box(fs::path(att[0].png).replace_extension().string() + ".pdf").first ==
        doctest::Approx(237.6).epsilon(0.01));
  CHECK(print_media_box(fs::path(att[1].png).replace_extension().string() + ".pdf").first ==
        doctest::Approx(496.8).epsilon(0.01));
  for (const auto& f : att) CHECK(print_is_svg(fs::path(f.png).replace_extension().string() + ".svg"));
  FigureOptions page;
  page.size = FigurePreset::page;
  const FigureInfo pg = extrapolation_figure(lines, "loss", 64, dir.string(), "page", {}, page);
  CHECK(print_media_box(fs::path(pg.png).replace_extension().string() + ".pdf").first ==
        doctest::Approx(496.8).epsilon(0.01));
  fs::remove_all(dir);
}

TEST_CASE("figures.size: screen, column or page; anything else is an error naming the key") {
  CHECK(load_config({test::config_path("base.yaml")}).config.figures.size == "screen");
  CHECK(load_config({test::config_path("base.yaml")}, {"figures.size=column"}).config.figures.size ==
        "column");
  try {
    load_config({test::config_path("base.yaml")}, {"figures.size=poster"});
    FAIL("figures.size=poster was accepted");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    CHECK(test::contains(what, "figures.size: unknown value"));
    CHECK(test::contains(what, "'poster'"));
    CHECK(test::contains(what, "screen | column | page"));
  }
  CHECK(figure_preset("page") == FigurePreset::page);
  CHECK_THROWS_WITH_AS(figure_preset("A4", "--figure-size"),
                       doctest::Contains("--figure-size: unknown figure size (got 'A4'"),
                       ConfigError);
  // The analysis takes the run's figures.size, and --figure-size over it.
  AnalyzeOptions o;
  RunInfo run;
  CHECK(figure_preset_of(o, run) == FigurePreset::screen);
  run.figure_size = "column";
  CHECK(figure_preset_of(o, run) == FigurePreset::column);
  o.figure_size = "page";
  CHECK(figure_preset_of(o, run) == FigurePreset::page);
}

TEST_CASE("attention captions say how many probe sequences were averaged, read from "
          "/probe/tokens") {
  const fs::path dir = test::analysis_scratch("probe_count");
  {
    RunAttributes a = test::sample_attributes();
    a.config_yaml += "figures:\n  size: page\n";
    auto w = RunFileWriter::create((dir / "run.h5").string(), a);
    test::write_sample_run(*w);
    w->close();
  }
  RunFileSource src(dir.string());
  CHECK(src.info().figure_size == "page");
  // /probe/tokens of the sample run is (2, 5): two probe sequences.
  REQUIRE(test::sample_tokens().size(0) == 2);
  const SnapshotData snap = src.snapshot(10);
  CHECK(snap.probe_count == 2);
  if (!find_gnuplot().empty()) {
    const auto figs = attention_figures(snap, (dir / "figures").string(), "x");
    REQUIRE(!figs.empty());
    for (const auto& f : figs) CHECK(test::contains(f.caption, "over the 2 probe sequences"));
  }
  fs::remove_all(dir);
}

TEST_CASE("a run's correlation over fewer than 5 snapshots is not printed as a number") {
  const fs::path dir = test::analysis_scratch("few_points");
  {
    RunAttributes a = test::sample_attributes();
    auto w = RunFileWriter::create((dir / "run.h5").string(), a);
    test::write_sample_run(*w);  // snapshots at 0 and 10, accuracy logged at 10 and 20
    w->append_metric("valid_accuracy", 0, 0.1);
    w->append_metric("valid_accuracy", 10, 0.2);
    w->close();
  }
  RunFileSource src(dir.string());
  AnalyzeOptions o;
  o.figures = false;
  analyze_run(src, dir.string(), o);
  const auto rows = test::read_lines(dir / "tables" / "invariance_correlation.csv");
  REQUIRE(rows.size() >= 2);
  for (size_t k = 1; k < rows.size(); ++k) {
    CAPTURE(rows[k]);
    CHECK(test::contains(rows[k], ",n<5,n<5"));
  }
  CHECK(test::contains(test::read_text(dir / "tables" / "invariance_correlation.md"),
                       "n<5: fewer than 5 pairs"));
  fs::remove_all(dir);
}
