// The numbers behind the heatmaps of a trained run: each figure's data file (NAME.dat) read back
// and compared with the tensors of run.h5 (the relative table), or with a computation written
// here from them (P·Pᵀ, the mean of the attention over heads). Skipped without gnuplot.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/gnuplot.h"
#include "analysis/run_source.h"
#include "core/config/config.h"
#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/train/trainer.h"
#include "tests/analysis_sample.h"
#include "tests/helpers.h"

using namespace relpos;
using namespace relpos::analysis;
namespace fs = std::filesystem;

namespace {

// One panel of a heatmap data file (gnuplot's nonuniform matrix): x of each column, y of each
// row, values[row][column].
struct DatPanel {
  std::vector<double> x, y;
  std::vector<std::vector<double>> values;
};

// Every panel of NAME.dat, parsed from the text: "# ..." comments, a header line "<ncols> x...",
// one line "y v..." per row; panels separated by blank lines.
std::vector<DatPanel> read_heatmap_dat(const fs::path& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f, "missing " << path.string());
  std::vector<DatPanel> panels;
  bool in_panel = false;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line[0] == '#') continue;
    if (line.empty()) {
      in_panel = false;
      continue;
    }
    std::istringstream in(line);
    std::vector<double> v;
    for (std::string tok; in >> tok;) v.push_back(tok == "NaN" ? NAN : std::stod(tok));
    if (!in_panel) {
      panels.emplace_back();
      REQUIRE(v.size() == static_cast<size_t>(v.at(0)) + 1);
      panels.back().x.assign(v.begin() + 1, v.end());
      in_panel = true;
    } else {
      REQUIRE(v.size() == panels.back().x.size() + 1);
      panels.back().y.push_back(v[0]);
      panels.back().values.emplace_back(v.begin() + 1, v.end());
    }
  }
  return panels;
}

// |a - b| within the 7 significant digits the data files keep.
void check_close_at(double got, double want, const std::string& where) {
  CAPTURE(where);
  CHECK(std::abs(got - want) <= 2e-6 * std::max(1.0, std::abs(want)));
}

}  // namespace

TEST_CASE("figure data files hold the run's relative table, P·Pᵀ and head-averaged attention") {
  if (find_gnuplot().empty()) {
    MESSAGE("gnuplot not installed: figure test skipped");
    return;
  }
  const fs::path dir = test::analysis_scratch("figure_data");
  TrainOptions opts;
  opts.out_dir = (dir / "run").string();
  opts.quiet = true;
  // An encoder with a learned table (P·Pᵀ) and method 4 clipped at K = 3 (a 7-column table).
  const int64_t T = 12, K = 3;
  train(load_config({test::config_path("base.yaml")},
                    {"data.corpus=" + test::fixture_path("trainer/corpus.txt"),
                     "data.cache_dir=" + (dir / "cache").string(), "data.tokenizer=bytes",
                     "data.valid_fraction=0.2", "data.test_fraction=0.2", "task.type=mlm",
                     "task.seq_len=" + std::to_string(T), "model.layers=2", "model.width=16",
                     "model.heads=2", "model.ff_width=32", "position.type=learned+huang_m4",
                     "position.learned.max_len=16", "position.huang_m4.clip=" + std::to_string(K),
                     "train.steps=6", "train.batch_size=4", "train.eval_every=3",
                     "train.eval_batches=1", "train.log_every=3", "train.checkpoint_every=6",
                     "snapshots.every_percent=50", "snapshots.probe_size=3", "threads=1"}),
        opts);
  AnalyzeOptions o;
  o.figures = true;
  const RunResult r = analyze_folder(opts.out_dir, o, {}, nullptr).runs.at(0);
  REQUIRE_FALSE(r.steps.empty());
  const int64_t step = r.steps.back();  // figures show the last snapshot
  const fs::path figs = fs::path(opts.out_dir) / "figures";
  auto reader = RunFileReader::open(run_h5_path(opts.out_dir));

  {  // relative table: channel x r, column r = the table's entry at distance r
    const auto table = reader->dataset(schema::position_path(step, "huang_m4", "table"))
                           .value.to(torch::kFloat64);  // (L,2K+1,d)
    const auto r_axis = reader->dataset(schema::position_path(step, "huang_m4", "distances"))
                            .value.to(torch::kFloat64);  // (2K+1)
    REQUIRE(table.size(1) == 2 * K + 1);
    for (int64_t l = 0; l < table.size(0); ++l) {
      const auto panels = read_heatmap_dat(figs / fmt::format("relpos_huang_m4_table_layer{}.dat", l));
      REQUIRE(panels.size() == 1);
      const DatPanel& p = panels[0];
      REQUIRE(p.x.size() == static_cast<size_t>(2 * K + 1));
      REQUIRE(p.y.size() == static_cast<size_t>(table.size(2)));  // one row per channel
      for (int64_t k = 0; k < 2 * K + 1; ++k) {
        CHECK(p.x[k] == static_cast<double>(k - K));  // r = -K..K, in order
        CHECK(r_axis[k].item<double>() == p.x[k]);
        for (int64_t c = 0; c < table.size(2); ++c)
          check_close_at(p.values[c][k], table[l][k][c].item<double>(),
                         fmt::format("layer {} r {} channel {}", l, k - K, c));
      }
    }
  }

  {  // P·Pᵀ: entry (i, j) = Σ_c p_ic p_jc over the trained positions
    const auto P = reader->dataset(schema::position_path(step, "learned", "table"))
                       .value.to(torch::kFloat64);  // (16,D)
    REQUIRE(P.size(0) == 16);
    const auto panels = read_heatmap_dat(figs / "abs_learned_gram.dat");
    REQUIRE(panels.size() == 1);
    const DatPanel& g = panels[0];
    REQUIRE(g.x.size() == static_cast<size_t>(T));  // the training length, not the table's 16
    REQUIRE(g.y.size() == static_cast<size_t>(T));
    auto acc = P.accessor<double, 2>();
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < P.size(1); ++c) dot += acc[i][c] * acc[j][c];
        check_close_at(g.values[i][j], dot, fmt::format("P·Pᵀ ({}, {})", i, j));
      }
  }

  {  // attention: the mean over heads, and each head's panel, query i x key j
    const auto att = reader->dataset(schema::attention_path(step)).value.to(torch::kFloat64);
    REQUIRE(att.dim() == 4);  // (L,H,T,T)
    const int64_t L = att.size(0), H = att.size(1), Tp = att.size(2);
    auto a = att.accessor<double, 4>();
    for (int64_t l = 0; l < L; ++l) {
      const auto mean = read_heatmap_dat(figs / fmt::format("attention_layer{}_mean.dat", l));
      const auto heads = read_heatmap_dat(figs / fmt::format("attention_layer{}_heads.dat", l));
      REQUIRE(mean.size() == 1);
      REQUIRE(heads.size() == static_cast<size_t>(H));
      REQUIRE(mean[0].y.size() == static_cast<size_t>(Tp));
      REQUIRE(mean[0].x.size() == static_cast<size_t>(Tp));
      for (int64_t i = 0; i < Tp; ++i) {
        CHECK(mean[0].y[i] == static_cast<double>(i));
        double row_sum = 0;
        for (int64_t j = 0; j < Tp; ++j) {
          double sum = 0;
          for (int64_t h = 0; h < H; ++h) {
            sum += a[l][h][i][j];
            check_close_at(heads[h].values[i][j], a[l][h][i][j],
                           fmt::format("layer {} head {} ({}, {})", l, h, i, j));
          }
          check_close_at(mean[0].values[i][j], sum / static_cast<double>(H),
                         fmt::format("layer {} mean ({}, {})", l, i, j));
          row_sum += mean[0].values[i][j];
        }
        CHECK(row_sum == doctest::Approx(1.0).epsilon(1e-5));  // a mean of softmax rows
      }
    }
  }
  fs::remove_all(dir);
}
