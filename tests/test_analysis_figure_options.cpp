// Figure options of issue 24: colour scales of the per-head attention grid that do not hide weak
// heads (per-head scales, or the shared scale stated in the title; a quantile cap or none), T5's
// piecewise-constant bias drawn as steps, and every run as a dot under the mean curves.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/figures.h"
#include "analysis/gnuplot.h"
#include "tests/analysis_sample.h"
#include "tests/text_file.h"

using namespace relpos;
using namespace relpos::analysis;
namespace fs = std::filesystem;

namespace {

// One layer, two heads of a T×T map: head 0 attends sharply to the previous token, head 1
// uniformly (every probability 1/T, far below head 0's).
SnapshotData two_heads(int64_t T) {
  SnapshotData s;
  s.step = 5;
  auto a = torch::zeros({1, 2, T, T});
  for (int64_t i = 0; i < T; ++i) a[0][0][i][std::max<int64_t>(0, i - 1)] = 1.0;
  a[0][1].fill_(1.0 / static_cast<double>(T));
  s.attention = a;
  return s;
}

}  // namespace

TEST_CASE("attention per head: one shared scale named in the title, or one scale per head") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("colour_scales");
  const int64_t T = 16;
  // Shared (the default): one colour bar; the title says the scale, 0 to the largest head cap.
  attention_figures(two_heads(T), dir.string(), "x", false);
  std::string shared = test::read_text(dir / "attention_layer0_heads.gp");
  CHECK(shared.find("all heads on one colour scale, 0 to 1") != std::string::npos);
  CHECK(test::count_occurrences(shared, "set colorbox user origin screen") == 1);
  // Per head: each panel its own colour bar and range; the uniform head spans its own values
  // (1/16 = 0.0625, a flat map drawn on [0.0625 − 0.5, 0.0625 + 0.5]), not 0..1.
  ColourScale per_head;
  per_head.per_head = true;
  attention_figures(two_heads(T), dir.string(), "x", false, per_head);
  const std::string own = test::read_text(dir / "attention_layer0_heads.gp");
  CHECK(own.find("each head on its own colour scale") != std::string::npos);
  CHECK(test::count_occurrences(own, "set colorbox user origin screen") == 0);
  CHECK(test::count_occurrences(own, "set rmargin 12") == 2);
  CHECK(own.find("set cbrange [-0.4375:0.5625]") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("attention: the 99th-percentile cap, or the uncapped scale") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("colour_cap");
  // A map whose largest entry (one of 256) stands far above the rest.
  SnapshotData s;
  s.step = 1;
  auto a = torch::full({1, 1, 16, 16}, 0.01f);
  a[0][0][0][0] = 0.9f;
  s.attention = a;
  attention_figures(s, dir.string(), "x", false);
  const std::string capped = test::read_text(dir / "attention_layer0_mean.gp");
  CHECK(capped.find("top colour: ≥ 0.01") != std::string::npos);
  ColourScale uncapped;
  uncapped.cap = 1.0;
  attention_figures(s, dir.string(), "x", false, uncapped);
  const std::string full = test::read_text(dir / "attention_layer0_mean.gp");
  CHECK(full.find("top colour") == std::string::npos);
  CHECK(full.find("set cbrange [0.01:0.9]") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("relative weights: a bucketed bias (T5) is drawn as steps, a linear one as lines") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("t5_steps");
  SnapshotData s;
  s.step = 1;
  auto r = torch::arange(-8, 9, torch::kFloat32);  // (17)
  auto buckets = torch::clamp(r, -3, 3);           // constant past |r| = 3
  s.position["t5_bias"]["distances"] = {"distances", r, {"distance"}};
  s.position["t5_bias"]["buckets"] = {"buckets", buckets, {"distance"}};
  s.position["t5_bias"]["profile"] = {"profile", 0.1f * buckets.view({1, -1}).repeat({2, 1}),
                                      {"head", "distance"}};
  s.position["alibi"]["distances"] = {"distances", r, {"distance"}};
  s.position["alibi"]["profile"] = {"profile", -0.5f * r.abs().view({1, -1}), {"head", "distance"}};
  relative_weight_figures(s, dir.string(), "x", 8);
  const std::string t5 = test::read_text(dir / "relpos_t5_bias_profile.gp");
  CHECK(test::count_occurrences(t5, "with histeps") == 2);  // one per head
  CHECK(test::read_text(dir / "relpos_alibi_profile.gp").find("with histeps") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("extrapolation figure: every run as a dot of its line's colour, beside the mean") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("run_dots");
  ExtrapolationLine line{"alibi", {64, 128}, {0.5, 0.45}, {{64, 0.4}, {64, 0.6}, {128, 0.45}}};
  const auto f = extrapolation_figure({line}, "accuracy", 64, dir.string(), "ex");
  const std::string script = test::read_text(dir / "ex.gp");
  CHECK(script.find("index 1 using 1:2 with points lt 1 pt 7 ps 0.55 notitle") != std::string::npos);
  const std::string data = test::read_text(dir / "ex.dat");
  CHECK(data.find("# panel 1, curve 1: alibi, every run\n# x y\n64 0.4\n64 0.6\n128 0.45\n") !=
        std::string::npos);
  CHECK(f.caption.find("small dots: every run") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("extrapolation figure: a loss axis starts at 0, or says where it starts") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("extrap_axis");
  // Values spread over more than half of [0, max]: the axis starts at 0.
  extrapolation_figure({{"a", {64, 128}, {1.0, 3.0}, {}}}, "loss", 64, dir.string(), "wide");
  const std::string wide = test::read_text(dir / "wide.gp");
  CHECK(wide.find("set yrange [0:3.15]") != std::string::npos);
  CHECK(wide.find("not 0)") == std::string::npos);
  // All values near 9-10: the data's range, and the label names the start.
  extrapolation_figure({{"a", {64, 128}, {9.1, 9.6}, {}}}, "loss", 64, dir.string(), "narrow");
  const std::string narrow = test::read_text(dir / "narrow.gp");
  CHECK(narrow.find("(axis from 9.075, not 0)") != std::string::npos);
  CHECK(narrow.find("set yrange [9.075:9.625]") != std::string::npos);
  fs::remove_all(dir);
}
