// Snapshot metrics against a direct computation written here from the definitions, and every
// figure kind drawn from a synthetic snapshot.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/figures.h"
#include "analysis/gnuplot.h"
#include "analysis/snapshot.h"
#include "core/util/errors.h"
#include "tests/analysis_sample.h"

using namespace relpos;
using namespace relpos::analysis;
namespace fs = std::filesystem;

namespace {

using test::naive_invariance;

const MatrixRow& find(const std::vector<MatrixRow>& rows, const std::string& source,
                      const std::string& variant, int64_t layer, int64_t head) {
  for (const auto& r : rows)
    if (r.source == source && r.variant == variant && r.layer == layer && r.head == head) return r;
  FAIL("row not found: " << source << " " << variant << " " << layer << " " << head);
  throw;
}

}  // namespace

TEST_CASE("snapshot metrics match a direct computation") {
  const SnapshotData s = test::sample_snapshot();
  const auto rows = measure_snapshot(s, {});
  // attention: 2 layers x (4 heads + average); alibi scores: 2 x 4; one Gram matrix.
  CHECK(rows.size() == 2 * 5 + 8 + 1);
  for (int64_t l = 0; l < 2; ++l) {
    // head average computed here with a loop over heads
    auto avg = torch::zeros({24, 24}, torch::kFloat64);
    for (int64_t h = 0; h < 4; ++h) avg += s.attention[l][h].to(torch::kFloat64) / 4.0;
    CHECK(find(rows, "attention", "", l, -1).metrics.invariance ==
          doctest::Approx(naive_invariance(avg, false)).epsilon(1e-9));
    for (int64_t h = 0; h < 4; ++h) {
      CHECK(find(rows, "attention", "", l, h).metrics.invariance ==
            doctest::Approx(naive_invariance(s.attention[l][h], false)).epsilon(1e-9));
      // ALiBi's bias -m|j-i| is Toeplitz, symmetric and falls with |r| on both sides.
      const auto& a = find(rows, "position_scores", "alibi", l, h).metrics;
      CHECK(a.invariance == doctest::Approx(1.0));
      CHECK(a.symmetry == doctest::Approx(1.0));
      CHECK(a.monotonicity_left == doctest::Approx(-1.0));
      CHECK(a.monotonicity_right == doctest::Approx(-1.0));
    }
  }
  // P·Pᵀ of the first T = 24 of the 40 table rows, written out as a double loop.
  const auto p = s.position.at("learned").at("table").value.to(torch::kFloat64);
  auto g = torch::zeros({24, 24}, torch::kFloat64);
  for (int64_t i = 0; i < 24; ++i)
    for (int64_t j = 0; j < 24; ++j) g[i][j] = (p[i] * p[j]).sum();
  const auto& gram_row = find(rows, "gram", "learned", -1, -1);
  CHECK(gram_row.metrics.invariance == doctest::Approx(naive_invariance(g, false)).epsilon(1e-9));
  CHECK(gram_row.metrics.invariance < 1.0);

  const auto summary = summarize(rows);
  CHECK(summary.at("attention") ==
        doctest::Approx((find(rows, "attention", "", 0, -1).metrics.invariance +
                         find(rows, "attention", "", 1, -1).metrics.invariance) /
                        2));
  CHECK(summary.at("scores:alibi") == doctest::Approx(1.0));
  CHECK(summary.at("gram:learned") == doctest::Approx(gram_row.metrics.invariance));
  CHECK(summary.size() == 4);
}

TEST_CASE("causal snapshots are measured on the visible triangle") {
  const SnapshotData s = test::sample_snapshot(7, true);
  const auto rows = measure_snapshot(s, {true, 0});
  const auto& r = find(rows, "attention", "", 1, 2);
  CHECK(r.region == Region::lower);
  CHECK(r.metrics.invariance ==
        doctest::Approx(naive_invariance(s.attention[1][2], true)).epsilon(1e-9));
  CHECK(std::isnan(r.metrics.symmetry));
  CHECK(r.metrics.profile.offsets.back() == 0);
  CHECK(find(rows, "gram", "learned", -1, -1).region == Region::full);
}

TEST_CASE("a snapshot with a malformed attention dataset is refused") {
  SnapshotData s;
  s.step = 3;
  s.attention = torch::zeros({2, 4, 5});
  CHECK_THROWS_WITH_AS(measure_snapshot(s, {}), doctest::Contains("attention has shape 2x4x5"),
                       SchemaError);
}

TEST_CASE("every figure kind is drawn from a snapshot") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("figures");
  const SnapshotData s = test::sample_snapshot();
  std::vector<FigureInfo> figs = relative_weight_figures(s, dir.string(), "sample run");
  for (auto& f : attention_figures(s, dir.string(), "sample run")) figs.push_back(f);
  for (auto& f : absolute_table_figures(s, {}, dir.string(), "sample run")) figs.push_back(f);
  figs.push_back(invariance_figure({{"attention", {{0, 50, 100}, {0.2, 0.5, 0.7}}},
                                    {"gram:learned", {{0, 50, 100}, {0.3, 0.35, 0.4}}}},
                                   "valid_loss", {{0, 25, 50, 75, 100}, {5, 4, 3.5, 3.2, 3.1}},
                                   dir.string(), "sample run"));
  figs.push_back(extrapolation_figure({{"alibi", {32, 64, 128, 256}, {3.1, 3.0, 3.05, 3.1}},
                                       {"learned", {32, 64, 128, 256}, {3.0, 2.9, NAN, NAN}}},
                                      "valid_ppl", 64, dir.string(), "extrapolation_valid_ppl"));
  for (const char* stem : {"relpos_tisa_f", "relpos_alibi_profile", "relpos_shaw_keys_layer0",
                           "relpos_shaw_keys_layer1", "relpos_huang_m1_scale",
                           "attention_layer0_mean", "attention_layer1_heads", "abs_learned_table",
                           "abs_learned_gram", "invariance_vs_step", "extrapolation_valid_ppl"}) {
    CAPTURE(stem);
    for (const char* ext : {".png", ".pdf", ".gp", ".dat"}) {
      const fs::path p = dir / (std::string(stem) + ext);
      CHECK(fs::exists(p));
      if (fs::exists(p)) CHECK(fs::file_size(p) > 0);
    }
  }
  CHECK(figs.size() == 13);  // 5 relative weights, 4 attention, 2 absolute, 1 + 1 curves
  // Shaw's table reaches |r| = 12 < the radius 50: the title says where it is clipped, in
  // each layer's figure; TISA's f reaches 30 < 50 too.
  for (const char* stem : {"relpos_shaw_keys_layer0.gp", "relpos_shaw_keys_layer1.gp"}) {
    std::ifstream gp(dir / stem);
    std::stringstream text;
    text << gp.rdbuf();
    CHECK(text.str().find("clipped at |r| = 12: longer distances use r = ±12") != std::string::npos);
  }
  if (!std::getenv("RELPOS_KEEP_TEST_FIGURES")) fs::remove_all(dir);
}

TEST_CASE("figures: a causal model's weight curves stop at r = 0, and clipped tables say so") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("figures_causal");
  const SnapshotData s = test::sample_snapshot(100, true);
  const std::vector<FigureInfo> figs = relative_weight_figures(s, dir.string(), "causal", 50, true);
  // The data file of ALiBi's curves: no point at r > 0 (sample profiles span r = -30..30).
  std::ifstream dat(dir / "relpos_alibi_profile.dat");
  REQUIRE(dat);
  int points = 0;
  for (std::string line; std::getline(dat, line);) {
    if (line.empty() || line[0] == '#') continue;
    CHECK(std::stod(line) <= 0.0);
    ++points;
  }
  CHECK(points == 4 * 31);  // 4 heads, r = -30..0
  int causal_notes = 0, clip_notes = 0;
  for (const auto& f : figs) {
    causal_notes += f.caption.find("only r ≤ 0 is shown") != std::string::npos;
    // Shaw's sample table reaches |r| = 12 only, below the radius 50.
    if (f.png.find("shaw_keys") != std::string::npos)
      clip_notes += f.caption.find("ends at |r| = 12") != std::string::npos;
  }
  CHECK(causal_notes >= 3);  // tisa f, alibi profile, shaw keys (huang_m1's |r| is unsigned)
  CHECK(clip_notes == 2);    // one figure per layer
  // ... and the figure itself says so, in its title: only r <= 0 in a causal model.
  for (const char* stem : {"relpos_shaw_keys_layer0.gp", "relpos_shaw_keys_layer1.gp"}) {
    std::ifstream gp(dir / stem);
    std::stringstream text;
    text << gp.rdbuf();
    CHECK(text.str().find("clipped at r = −12: longer distances use r = −12") != std::string::npos);
  }
  CHECK(metric_axis_label("ppl_sliding") == "perplexity (sliding window)");
  CHECK(metric_axis_label("valid_accuracy") == "validation accuracy");
  CHECK(metric_axis_label("tokens") == "tokens");
  if (!std::getenv("RELPOS_KEEP_TEST_FIGURES")) fs::remove_all(dir);
}

TEST_CASE(
    "figures: a table per head (per_head: true) gets one figure per layer, a panel per head") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("per_head_table");
  // huang_m4 with 2 layers, 3 heads, clip 4 (r = -4..4), 2 channels: the value names its place,
  // 100 l + 10 h + r + 0.5 c, so the data file shows which table each panel drew.
  const int64_t L = 2, H = 3, K = 4, d = 2;
  auto table = torch::zeros({L, H, 2 * K + 1, d}, torch::kFloat64);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t k = 0; k <= 2 * K; ++k)
        for (int64_t c = 0; c < d; ++c)
          table[l][h][k][c] = 100.0 * l + 10.0 * h + (k - K) + 0.5 * c;
  SnapshotData s;
  s.step = 5;
  s.position["huang_m4"]["distances"] = {
      "distances", torch::arange(-K, K + 1, torch::kFloat64), {"distance"}};
  s.position["huang_m4"]["table"] = {"table", table, {"layer", "head", "distance", "channel"}};
  const auto figs = relative_weight_figures(s, dir.string(), "per-head run");
  REQUIRE(figs.size() == 2);  // one per layer
  for (int64_t l = 0; l < L; ++l) {
    CAPTURE(l);
    const fs::path dat = dir / fmt::format("relpos_huang_m4_table_layer{}.dat", l);
    REQUIRE(fs::exists(dat));
    REQUIRE(fs::exists(dir / fmt::format("relpos_huang_m4_table_layer{}.png", l)));
    // Blocks of gnuplot's nonuniform matrix: "# panel k: head k-1", the r of each column, then
    // one line per channel: its index and the values at r = -4..4.
    std::ifstream in(dat);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) lines.push_back(line);
    REQUIRE(lines.size() == static_cast<size_t>(H * (2 + d)));
    for (int64_t h = 0; h < H; ++h) {
      CAPTURE(h);
      const size_t at = static_cast<size_t>(h * (2 + d));
      CHECK(lines[at].rfind(fmt::format("# panel {}: head {}", h + 1, h), 0) == 0);
      CHECK(lines[at + 1] == "9 -4 -3 -2 -1 0 1 2 3 4");
      for (int64_t c = 0; c < d; ++c) {
        std::string expected = std::to_string(c);
        for (int64_t r = -K; r <= K; ++r)
          expected += fmt::format(" {:g}", 100.0 * l + 10.0 * h + r + 0.5 * c);
        CHECK(lines[at + 2 + c] == expected);
      }
    }
  }
  CHECK(figs[0].caption.find("one panel per head") != std::string::npos);
  if (!std::getenv("RELPOS_KEEP_TEST_FIGURES")) fs::remove_all(dir);
}
