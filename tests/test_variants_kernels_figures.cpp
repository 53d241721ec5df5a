// The run.h5 exports of deberta, kerple_log, kerple_power, fire, xpos and cope: the per-distance
// functions hold what the formulas give (checked here by loops), and the figure code draws the
// natural ones (the KERPLE and FIRE bias curves, the xPos decay curves) from them.
#include <doctest/doctest.h>
#include <torch/types.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "analysis/figures.h"
#include "analysis/gnuplot.h"
#include "core/position/position_encoding.h"
#include "tests/analysis_sample.h"
#include "tests/variant_helpers.h"

using namespace relpos;
using namespace relpos::analysis;
using namespace relpos::test;

namespace fs = std::filesystem;

namespace {

std::map<std::string, NamedTensor> exported(PositionEncodingImpl& enc, int64_t radius) {
  ExportOptions o;
  o.radius = radius;
  std::map<std::string, NamedTensor> out;
  for (const auto& t : enc.export_tensors(o)) out[t.name] = {t.name, t.value, t.dims};
  return out;
}

}  // namespace

TEST_CASE("exports: kerple bias, fire bias and xpos decay against their formulas") {
  const int64_t R = 6, H = 3;
  auto dims = tiny_dims(H, 4, true);
  for (bool power : {false, true}) {
    auto enc = make_variant(power ? "kerple_power" : "kerple_log", dims, "{}");
    randomize(*enc, 1.0);
    auto t = exported(*enc, R);
    auto alpha = enc->named_parameters()["alpha"], beta = enc->named_parameters()["beta"];
    REQUIRE(t.at("bias").dims == std::vector<std::string>{"layer", "head", "distance"});
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t r = -R; r <= R; ++r) {
          const double a = test::softplus(alpha[l][h].item<double>()), x = std::abs(double(r));
          const double b = power ? 2.0 / (1.0 + std::exp(-beta[l][h].item<double>()))
                                 : test::softplus(beta[l][h].item<double>());
          const double expect = power ? -a * (r == 0 ? 0.0 : std::pow(x, b)) : -a * std::log1p(b * x);
          CHECK(t.at("bias").value[l][h][r + R].item<double>() == doctest::Approx(expect).epsilon(1e-6));
          CHECK(t.at("a").value[l][h].item<double>() == doctest::Approx(a).epsilon(1e-6));
        }
  }
  // FIRE: the query at position R of 2R+1 tokens, keys j = R + r; the paper's form for r <= 0.
  auto fire = make_variant("fire", dims, "{mlp_width: 5}");
  randomize(*fire, 1.0);
  auto f = exported(*fire, R);
  auto P = fire->named_parameters();
  for (int64_t l = 0; l < 2; ++l) {
    const double c = test::softplus(P["c_raw"][l].item<double>()),
                 L = std::abs(P["threshold_raw"][l].item<double>());
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = -R; r <= 0; ++r) {
        const double x = std::log(c * -r + 1.0) / std::log(c * std::max({L, double(R), 1.0}) + 1.0);
        double out = 0;
        for (int64_t w = 0; w < 5; ++w)
          out += P["w2"][l][h][w].item<double>() *
                 std::max(0.0, P["w1"][l][w].item<double>() * x + P["b1"][l][w].item<double>());
        CHECK(f.at("bias").value[l][h][r + R].item<double>() == doctest::Approx(out).epsilon(1e-5));
      }
  }
  // xPos: ζ_m^{-r/γ}, ζ_m = (2m/d + 0.4)/1.4.
  auto xpos = make_variant("xpos", dims, "{scale_base: 16}");
  auto x = exported(*xpos, R);
  REQUIRE(x.at("decay").dims == std::vector<std::string>{"pair", "distance"});
  for (int64_t m = 0; m < 2; ++m)
    for (int64_t r = -R; r <= R; ++r) {
      const double zeta = (2.0 * m / 4 + 0.4) / 1.4;
      CHECK(x.at("decay").value[m][r + R].item<double>() ==
            doctest::Approx(std::pow(zeta, -r / 16.0)).epsilon(1e-6));
    }
}

TEST_CASE("figures: the kerple and fire bias curves and the xpos decay curves are drawn") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = analysis_scratch("figures_recent_variants");
  auto dims = tiny_dims(2, 4, true);
  SnapshotData s;
  s.step = 10;
  for (const char* name : {"kerple_log", "kerple_power", "fire", "xpos", "deberta", "cope"})
    s.position[name] = exported(*make_variant(name, dims, "{}"), 20);
  const auto figs = relative_weight_figures(s, dir.string(), "recent", 50, true);
  for (const char* stem : {"relpos_kerple_log_bias", "relpos_kerple_power_bias", "relpos_fire_bias",
                           "relpos_xpos_decay"}) {
    CAPTURE(stem);
    CHECK(fs::exists(dir / (std::string(stem) + ".png")));
  }
  CHECK(figs.size() == 4);  // deberta's row indices and cope's tables have no curve
  std::ifstream gp(dir / "relpos_xpos_decay.gp");
  std::stringstream text;
  text << gp.rdbuf();
  CHECK(text.str().find("factor on q·k") != std::string::npos);
  if (!std::getenv("RELPOS_KEEP_TEST_FIGURES")) fs::remove_all(dir);
}
