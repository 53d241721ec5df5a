// A whole run and an experiment analysed from in-memory sources, checked against direct
// computations written here.
#include <H5Cpp.h>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/experiment.h"
#include "analysis/gnuplot.h"
#include "analysis/inference.h"
#include "analysis/report.h"
#include "analysis/run_analysis.h"
#include "analysis/run_checks.h"
#include "analysis/run_source.h"
#include "analysis/units.h"
#include "tests/analysis_sample.h"
#include "tests/text_file.h"

using namespace relpos;
using namespace relpos::analysis;
namespace fs = std::filesystem;

namespace {

class MemorySource : public RunSource {
 public:
  RunInfo run;
  std::map<int64_t, SnapshotData> snaps;
  const RunInfo& info() const override { return run; }
  SnapshotData snapshot(int64_t step) const override { return snaps.at(step); }
};

// Attention drifts from a random row-stochastic map (step 0) to the sample's banded map (100).
MemorySource sample_run(const fs::path& dir, double loss_offset = 0.0) {
  MemorySource src;
  src.run.dir = dir.string();
  src.run.name = dir.filename().string();
  src.run.position_types = "learned+alibi";
  src.run.group = "learned+alibi";
  src.run.seed = 1;
  src.run.metrics["loss"] = {{0, 50, 100}, {6, 4, 3}};
  src.run.metrics["valid_loss"] = {{0, 25, 50, 75, 100},
                                   {5 + loss_offset, 4, 3.5, 3.2, 3.1 + loss_offset}};
  torch::manual_seed(11);
  const auto noise = torch::softmax(2 * torch::randn({2, 4, 24, 24}), -1);  // (L,H,T,T)
  for (int64_t step : {0, 50, 100}) {
    SnapshotData s = test::sample_snapshot(step);
    const double w = step / 100.0;
    s.attention = w * s.attention + (1 - w) * noise;
    src.snaps[step] = s;
    src.run.snapshot_steps.push_back(step);
  }
  return src;
}

// Two runs of one variant and task, seeds 1 and 2, in folders VARIANT-seed1/2 under `dir`
// (valid_loss 3.1 and 3.2 at the end).
std::vector<MemorySource> two_seeds(const fs::path& dir, const std::string& variant,
                                    const std::string& task) {
  std::vector<MemorySource> out;
  for (int k = 0; k < 2; ++k) {
    MemorySource s = sample_run(dir / fmt::format("{}-seed{}", variant, k + 1), 0.1 * k);
    s.run.seed = k + 1;
    s.run.group = s.run.position_types = variant;
    s.run.task = task;
    out.push_back(std::move(s));
  }
  return out;
}

// analyze_experiment over `runs`, without figures.
void analyze_without_figures(const std::vector<MemorySource>& runs, const fs::path& dir) {
  std::vector<const RunSource*> ptrs;
  for (const auto& s : runs) ptrs.push_back(&s);
  AnalyzeOptions o;
  o.figures = false;
  analyze_experiment(ptrs, dir.string(), o);
}

std::vector<double> read_doubles(H5::H5File& f, const std::string& path) {
  H5::DataSet ds = f.openDataSet(path);
  std::vector<double> v(ds.getSpace().getSimpleExtentNpoints());
  ds.read(v.data(), H5::PredType::NATIVE_DOUBLE);
  return v;
}

}  // namespace

TEST_CASE("a run: invariance per snapshot, its correlation with the metric, and the files") {
  const fs::path dir = test::analysis_scratch("run");
  const MemorySource src = sample_run(dir);
  AnalyzeOptions o;
  o.figures = !find_gnuplot().empty();
  const RunResult res = analyze_run(src, dir.string(), o);

  CHECK(res.metric == "valid_loss");
  CHECK(res.steps == std::vector<int64_t>{0, 50, 100});
  CHECK(res.metric_at_step == std::vector<double>{5, 3.5, 3.1});
  // direct: mean over the two layers of the head-averaged map's invariance
  std::vector<double> expected;
  for (int64_t step : {0, 50, 100}) {
    const auto& a = src.snaps.at(step).attention;
    double sum = 0;
    for (int64_t l = 0; l < 2; ++l)
      sum += test::naive_invariance(a[l].to(torch::kFloat64).mean(0), false) / 2;
    expected.push_back(sum);
  }
  REQUIRE(res.invariance.at("attention").size() == 3);
  for (int k = 0; k < 3; ++k)
    CHECK(res.invariance.at("attention")[k] == doctest::Approx(expected[k]).epsilon(1e-9));
  CHECK(expected[2] > expected[0]);  // the banded map is the more invariant one
  const double r = test::naive_pearson(expected, {5, 3.5, 3.1});
  bool found = false;
  for (const auto& c : res.correlations)
    if (c.quantity == "attention") {
      found = true;
      CHECK(c.n == 3);
      CHECK(c.pearson == doctest::Approx(r));
      CHECK(c.spearman == doctest::Approx(-1.0));  // invariance rises while the loss falls
    }
  CHECK(found);

  H5::H5File f((dir / "analysis.h5").string(), H5F_ACC_RDONLY);
  const auto h5_attention = read_doubles(f, "/summary/attention");
  REQUIRE(h5_attention.size() == 3);
  CHECK(h5_attention[1] == doctest::Approx(expected[1]).epsilon(1e-9));
  CHECK(read_doubles(f, "/matrices/invariance").size() == 3 * 19);
  H5::DataSet prof = f.openDataSet("/profiles/step_50/values");
  hsize_t dims[2];
  prof.getSpace().getSimpleExtentDims(dims);
  CHECK(dims[0] == 19);
  CHECK(dims[1] == 2 * 24 - 1);
  f.close();

  const auto summary = test::read_lines(dir / "tables" / "invariance_summary.csv");
  REQUIRE(summary.size() == 4);
  // Task unknown: a loss in nats, no "per" (metric_unit); the invariance scale is in the title.
  CHECK(summary[0].rfind("step,valid_loss (nats; interpolated),attention (head average),", 0) == 0);
  CHECK(summary[2].rfind("50,3.5,", 0) == 0);
  CHECK(test::read_lines(dir / "tables" / "invariance.csv").size() == 1 + 3 * 19);
  CHECK(fs::exists(dir / "tables" / "invariance_correlation.md"));
  CHECK(fs::exists(dir / "tables" / "profiles.csv"));
  if (o.figures) {
    const auto figs = read_figure_index((dir / "figures").string());
    CHECK(figs.size() == res.figures.size());
    CHECK(fs::exists(dir / "figures" / "invariance_vs_step.png"));
  }
  fs::remove_all(dir);
}

TEST_CASE("an experiment: grouped results, extrapolation and final invariance tables") {
  const fs::path dir = test::analysis_scratch("experiment");
  std::vector<MemorySource> srcs;
  for (int k = 0; k < 3; ++k) {
    MemorySource s = sample_run(dir / fmt::format("run{}", k), k == 1 ? 0.2 : 0.0);
    s.run.seed = k + 1;
    s.run.group = s.run.position_types = k < 2 ? "learned+alibi" : "alibi";
    s.run.positional_parameters = k < 2 ? 640 : 0;
    s.run.metrics["elapsed_s"] = {{100}, {60.0 + k}};
    s.run.train_length = 64;
    s.run.extrapolation.length = {64, 128, 256};
    s.run.extrapolation.columns = {{"valid_ppl", {10.0 + k, 12.0, k < 2 ? NAN : 13.0}}};
    s.run.extrapolation.attrs = {{"split", "test"}, {"stride", "0"}, {"task", "mlm"},
                                 {"not_applicable", k < 2 ? "256: beyond the table" : ""}};
    // The stack's learned scores (random, far from Toeplitz) beside ALiBi's, which are
    // invariant by construction.
    if (k < 2)
      for (auto& [step, snap] : s.snaps) snap.position_scores["learned"] = torch::randn({1, 4, 24, 24});
    srcs.push_back(std::move(s));
  }
  std::vector<const RunSource*> ptrs;
  for (const auto& s : srcs) ptrs.push_back(&s);
  AnalyzeOptions o;
  o.figures = false;
  const ExperimentResult ex = analyze_experiment(ptrs, dir.string(), o);
  CHECK(ex.metric == "valid_loss");
  const auto results = test::read_lines(dir / "tables" / "results.md");
  // learned+alibi: final valid_loss 3.1 and 3.3 -> 3.2000 ± 12.7062 · 0.1414 / √2 = 1.2706;
  // time 60, 61 -> 60.5 ± 6.4 (t_{0.975,1} = 12.7062 from a printed table)
  REQUIRE(results.size() >= 5);
  CHECK(results[2] ==
        "| variant | runs | valid_loss (nats) | inv. attention (0–1) | inv. position scores (0–1) "
        "| inv. P·Pᵀ (0–1) | inv. P·Pᵀ corrected (0 = random table) | pos. params (count) "
        "| train time (s) |");
  CHECK(results[4].rfind("| learned+alibi | 2 | 3.2000 ± 1.2706 | ", 0) == 0);
  CHECK(results[4].find("| 640 | 60.5 ± 6.4 |") != std::string::npos);
  CHECK(results[5].rfind("| alibi | 1 | 3.1000 | ", 0) == 0);
  // inv. position scores: for learned+alibi the learned scores' invariance alone (a random
  // 24x24 matrix: about 2/25), not halfway to ALiBi's 1; for alibi alone, 1.
  auto cell = [&](const std::string& row, size_t col) {
    size_t p = 0;
    for (size_t c = 0; c < col; ++c) p = row.find('|', p) + 1;
    return std::stod(row.substr(p, row.find('|', p) - p));
  };
  CHECK(cell(results[4], 5) < 0.3);
  CHECK(cell(results[5], 5) == doctest::Approx(1.0));
  const auto extra = test::read_lines(dir / "tables" / "extrapolation_valid_ppl.md");
  // learned+alibi at 64: (10, 11) -> 10.500 ± 6.353; at 256 both NaN -> —
  CHECK(extra[2] == "| variant | runs | 64 (train) | 128 | 256 |");
  CHECK(extra[4] == "| learned+alibi | 2 | 10.500 ± 6.353 | 12.000 ± 0.000 | — |");
  CHECK(extra[5] == "| alibi | 1 | 12.000 | 12.000 | 13.000 |");
  // The note quotes the evaluation attributes; stride 0 (no sliding window) is left out, and a
  // reason shared by the runs of a group is given once.
  REQUIRE(extra.size() >= 8);
  CHECK(extra[7] ==
        "Columns: evaluation length in tokens. —: not evaluated or not applicable at that length. "
        "Evaluation: split: test; task: mlm. Not applicable for learned+alibi, at 256: beyond the "
        "table. ± : half-width of the 95% confidence interval of the mean over the row's runs "
        "(Student t with n − 1 degrees of freedom, n = the runs with a value). A value without ± "
        "comes from one run (n = 1): no interval.");
  const auto final_rows = test::read_lines(dir / "tables" / "final_invariance.csv");
  CHECK(final_rows.size() == 4);
  CHECK(fs::exists(dir / "tables" / "final_invariance_correlation.tex"));
  // Across the runs: r with its p from the t-test (pearson_test, checked against scipy in
  // test_analysis_inference) of the pairs final_invariance.csv lists; 3 runs give no Fisher
  // interval (it needs 4).
  const auto corr = test::read_lines(dir / "tables" / "final_invariance_correlation.csv");
  REQUIRE(corr.size() == 5);  // attention, position scores, P·Pᵀ raw and corrected
  CHECK(corr[0] == "quantity,runs,Pearson r,r: 95% CI (Fisher z),p (r = 0),Spearman ρ");
  // Cells split at every comma, a trailing empty one kept (no field here holds a comma).
  auto cells_of = [](const std::string& text) {
    std::vector<std::string> cells(1);
    for (char ch : text) {
      if (ch == ',')
        cells.emplace_back();
      else
        cells.back().push_back(ch);
    }
    return cells;
  };
  // The position scores differ between the runs (alibi's are invariant, learned+alibi's not).
  std::vector<double> metric, scores;
  for (size_t k = 1; k < final_rows.size(); ++k) {
    const auto cells = cells_of(final_rows[k]);
    REQUIRE(cells.size() == 8);  // run, variant, seed, metric, 4 invariance columns
    metric.push_back(std::stod(cells[3]));
    scores.push_back(std::stod(cells[5]));
  }
  // Three runs are too few for a correlation to mean anything: no number is printed (n<5),
  // whatever the values (tests/test_figure_palette.cpp checks one over five runs).
  CHECK(cells_of(corr[1]) ==
        std::vector<std::string>{"inv. attention (0–1)", "3", "n<5", "n<5", "n<5", "n<5"});
  CHECK(cells_of(corr[2]) ==
        std::vector<std::string>{"inv. position scores (0–1)", "3", "n<5", "n<5", "n<5", "n<5"});
  CHECK(std::isfinite(pearson_test(scores, metric).r));
  CHECK(fs::exists(dir / "run1" / "analysis.h5"));
  fs::remove_all(dir);
}

TEST_CASE("an experiment: a clamped evaluation is a row of its own, LM losses in bits beside "
          "nats, the scored tokens and one run's sampling error under each table") {
  const fs::path dir = test::analysis_scratch("experiment_units");
  std::vector<MemorySource> srcs = two_seeds(dir, "learned", "clm");
  for (int k = 0; k < 2; ++k) {
    MemorySource& s = srcs[k];
    s.run.tokenizer = "bytes";
    s.run.train_length = 64;
    EvalTable e;
    e.length = {64, 128};
    e.columns = {{"loss", {2.0 + 0.1 * k, NAN}}};
    e.counts = {{"tokens", {4096, 4096}}, {"loss_sd", {1.5, NAN}}};
    e.attrs = {{"task", "clm"}, {"split", "test"}, {"not_applicable", "128: beyond the table"}};
    s.run.extrapolation = e;
    EvalTable c = e;
    c.columns = {{"loss", {2.0 + 0.1 * k, 2.5 + 0.1 * k}}};
    c.attrs = {{"task", "clm"}, {"split", "test"},
               {"clamped", "128: positions past 64 reuse learned row 63"}};
    s.run.extra_evaluations["clamped"] = c;
  }
  analyze_without_figures(srcs, dir);
  // The results table: every loss in nats per byte, then in bits per byte (loss / ln 2).
  const auto results = test::read_lines(dir / "tables" / "results.md");
  CHECK(results[2].find("| valid_loss (nats/byte) | valid_loss (bits/byte) |") != std::string::npos);
  // valid_loss 3.1 and 3.2: mean 3.15 nats = 3.15 / 0.693147 = 4.5445 bits
  CHECK(results[4].find("| 3.1500 ± 0.6353 | 4.5445 ± 0.9166 |") != std::string::npos);
  const auto loss = test::read_lines(dir / "tables" / "extrapolation_loss.md");
  // The extrapolation tables come from the test split, the results table from validation: each
  // title says so.
  CHECK(loss[0] == "**Length extrapolation: loss (nats/byte), mean over runs — test split**");
  CHECK(results[0] == "**Results (mean over runs) — validation split**");
  CHECK(loss[4] == "| learned | 2 | 2.050 ± 0.635 | — |");
  CHECK(loss[5] == "| learned (clamped) | 2 | 2.050 ± 0.635 | 2.550 ± 0.635 |");
  // Counts per length, and the normal interval of one run's mean loss at the training length:
  // 1.96 · 1.5 / √4096 = 0.0459 nats.
  CHECK(loss[7].find("Scored tokens per length: 64: 4096; 128: 4096.") != std::string::npos);
  CHECK(loss[7].find("one run's loss at length 64 (2 nats/byte, 4096 scored tokens) has a 95% "
                     "interval of ±0.0459") != std::string::npos);
  CHECK(loss[7].find("Clamped for learned (clamped), at 128: positions past 64 reuse learned "
                     "row 63.") != std::string::npos);
  const auto bits = test::read_lines(dir / "tables" / "extrapolation_bits_per_byte.md");
  CHECK(bits[0] ==
        "**Length extrapolation: bits_per_byte (bits/byte), mean over runs — test split**");
  CHECK(bits[5] == "| learned (clamped) | 2 | 2.958 ± 0.917 | 3.679 ± 0.917 |");
  fs::remove_all(dir);
}

TEST_CASE("an experiment's per-length metric columns are in order of length") {
  const fs::path dir = test::analysis_scratch("length_columns");
  MemorySource s = sample_run(dir / "run0");
  for (const char* m : {"valid_seq_accuracy@128", "valid_seq_accuracy@16", "valid_seq_accuracy@8",
                        "valid_seq_accuracy@32"})
    s.run.metrics[m] = {{100}, {0.5}};
  AnalyzeOptions o;
  o.figures = false;
  analyze_experiment({&s}, dir.string(), o);
  const auto results = test::read_lines(dir / "tables" / "results.md");
  REQUIRE(results.size() >= 3);
  const std::string& header = results[2];
  const size_t p8 = header.find("@8 "), p16 = header.find("@16 "), p32 = header.find("@32 "),
               p128 = header.find("@128 ");
  REQUIRE(p128 != std::string::npos);
  CHECK(p8 < p16);
  CHECK(p16 < p32);
  CHECK(p32 < p128);
  fs::remove_all(dir);
}

TEST_CASE(
    "an experiment's sequence accuracy of a synthetic task lists every seed; its loss "
    "keeps the mean and interval") {
  // Copy solved by one seed and not by the other: 0.95 and 0.00 (a mean of 0.475 would describe
  // neither run); the loss is a quantity that pools.
  const fs::path dir = test::analysis_scratch("split_outcomes");
  std::vector<MemorySource> srcs = two_seeds(dir, "tisa", "copy");
  srcs[0].run.metrics["valid_seq_accuracy@16"] = {{100}, {0.95}};
  srcs[1].run.metrics["valid_seq_accuracy@16"] = {{100}, {0.0}};
  analyze_without_figures(srcs, dir);
  const auto results = test::read_lines(dir / "tables" / "results.md");
  REQUIRE(results.size() >= 7);
  CHECK(results[0] ==
        "**Results (mean over runs; per-seed columns: every run's value) — validation split**");
  CHECK(results[2].rfind("| variant | runs | valid_loss (nats/target) | "
                         "valid_seq_accuracy@16 (0–1, per seed) |",
                         0) == 0);
  // valid_loss 3.1 and 3.2 -> 3.1500 ± 12.7062 · 0.0707 / √2 = 0.6353.
  CHECK(results[4].rfind("| tisa | 2 | 3.1500 ± 0.6353 | 0.9500, 0.0000 |", 0) == 0);
  CHECK(test::contains(results[6], "Per-seed columns list every run's value in run order"));
  // A task without split outcomes (clm) keeps the mean and interval for every metric.
  CHECK_FALSE(metric_split_outcomes("valid_accuracy", "clm"));
  CHECK_FALSE(metric_split_outcomes("valid_accuracy@16", "copy"));
  CHECK(metric_split_outcomes("test_seq_accuracy", "reverse"));
  fs::remove_all(dir);
}

TEST_CASE("base64 follows RFC 4648's test vectors") {
  CHECK(base64("") == "");
  CHECK(base64("f") == "Zg==");
  CHECK(base64("fo") == "Zm8=");
  CHECK(base64("foo") == "Zm9v");
  CHECK(base64("foob") == "Zm9vYg==");
  CHECK(base64("fooba") == "Zm9vYmE=");
  CHECK(base64("foobar") == "Zm9vYmFy");
  CHECK(base64(std::string("\xff\x00\x10", 3)) == "/wAQ");
}

TEST_CASE("the report puts commands, provenance, tables and figures together") {
  const fs::path dir = test::analysis_scratch("report");
  std::vector<MemorySource> srcs;
  for (int k = 0; k < 2; ++k) {
    MemorySource s = sample_run(dir / fmt::format("run{}", k));
    s.run.seed = k + 1;
    s.run.git_commit = "0123456789abcdef0123";
    s.run.created = "2024-05-01T12:00:00Z";
    s.run.torch_version = "1.13.0";
    srcs.push_back(std::move(s));
  }
  std::vector<const RunSource*> ptrs{&srcs[0], &srcs[1]};
  AnalyzeOptions o;
  o.figures = !find_gnuplot().empty();
  analyze_experiment(ptrs, dir.string(), o);
  std::ofstream(dir / "commands.txt")
      << "relpos sweep --grid seed=1,2 --out " << dir.string() << "\n";
  const std::string md = write_report({dir.string(), {srcs[0].run, srcs[1].run}, true});
  CHECK(md.find("relpos sweep --grid seed=1,2") != std::string::npos);
  CHECK(md.find("relpos commit `0123456789abcdef0123`") != std::string::npos);
  CHECK(md.find("| run1 | learned+alibi | 2 | 0123456789ab | 2024-05-01T12:00:00Z | 1.13.0 |") !=
        std::string::npos);
  CHECK(md.find("**Results (mean over runs) — validation split**") != std::string::npos);
  // Every table of the report says which split its numbers come from.
  {
    std::istringstream lines(md);
    int titles = 0;
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("**", 0) == 0 && line.size() > 4 && line.compare(line.size() - 2, 2, "**") == 0) {
        ++titles;
        CHECK_MESSAGE(line.find(" split") != std::string::npos, line);
      }
    CHECK(titles >= 2);
  }
  CHECK(md.find("### run1 — learned+alibi, seed 2") != std::string::npos);
  CHECK(md.find("did not finish") == std::string::npos);
  // A run without result.json is named in a warning and marked in the table.
  RunInfo stopped = srcs[1].run;
  stopped.finished = false;
  const std::string md2 = write_report({dir.string(), {srcs[0].run, stopped}, true});
  CHECK(md2.find("**Warning: 1 of 2 runs did not finish** (no `result.json`: stopped, "
                 "interrupted or still running): `run1`.") != std::string::npos);
  CHECK(md2.find("| run1 (unfinished) | learned+alibi | 2 |") != std::string::npos);
  CHECK(md2.find("| run0 | learned+alibi | 1 |") != std::string::npos);
  write_report({dir.string(), {srcs[0].run, srcs[1].run}, true});
  std::ifstream h(dir / "report.html");
  std::stringstream html;
  html << h.rdbuf();
  CHECK(html.str().find("<th>variant</th>") != std::string::npos);
  CHECK(html.str().find("<pre><code>relpos sweep") != std::string::npos);
  if (o.figures) {
    CHECK(md.find("](run0/figures/invariance_vs_step.png)") != std::string::npos);
    CHECK(md.find("](figures/final_invariance_vs_metric.png)") != std::string::npos);
    CHECK(html.str().find("src=\"data:image/png;base64,iVBORw0KGgo") != std::string::npos);
  }
  if (!std::getenv("RELPOS_KEEP_TEST_FIGURES")) fs::remove_all(dir);
}

TEST_CASE("a run: P·Pᵀ spans the trained length, not the probe length") {
  // The probe is 24 tokens, the learned table 40 rows; the run trained at 32.
  const fs::path dir = test::analysis_scratch("gram-length");
  MemorySource src = sample_run(dir);
  src.run.train_length = 32;
  AnalyzeOptions o;
  o.figures = false;
  const RunResult res = analyze_run(src, dir.string(), o);
  const auto& got = res.invariance.at("gram:learned");
  REQUIRE(got.size() == 3);
  const auto p = src.snaps.at(100).position.at("learned").at("table").value.narrow(0, 0, 32)
                     .to(torch::kFloat64);
  const double want = test::naive_invariance(p.matmul(p.t()), false);
  CHECK(got[2] == doctest::Approx(want).epsilon(1e-9));
  const auto p24 = p.narrow(0, 0, 24);
  CHECK(std::abs(test::naive_invariance(p24.matmul(p24.t()), false) - want) > 1e-6);
  fs::remove_all(dir);
}

TEST_CASE("an experiment folder: pooled runs that differ in more than the seed, and runs its sweep did not train, are named") {
  const fs::path dir = test::analysis_scratch("pooled-runs");
  auto run = [&](const std::string& name, const std::string& group, const std::string& yaml) {
    RunInfo r;
    r.dir = (dir / name).string();
    r.name = name;
    r.group = group;
    r.config_yaml = yaml;
    return r;
  };
  const std::vector<RunInfo> runs = {
      run("a", "learned", "seed: 1\nthreads: 1\ntrain:\n  lr: 0.001\n  steps: 10\n"),
      // Another seed, threads and eval setting: the same experiment.
      run("c", "learned",
          "seed: 2\nthreads: 2\ntrain:\n  lr: 0.001\n  steps: 10\neval:\n  batch_size: 3\n"),
      // Another learning rate: pooling it with a and c mixes settings.
      run("b", "learned", "seed: 3\nthreads: 1\ntrain:\n  lr: 0.002\n  steps: 10\n"),
      // Written before `precision` existed: the key is absent, which is its default, not a
      // difference.
      run("e", "learned", "seed: 4\nthreads: 1\nprecision: fp32\ntrain:\n  lr: 0.001\n  steps: 10\n"),
      run("d", "rope", "seed: 1\nthreads: 1\ntrain:\n  lr: 0.5\n  steps: 99\n")};
  const auto w = experiment_warnings(runs, dir.string());
  REQUIRE(w.size() == 1);
  CHECK(w[0] ==
        "runs 'a' and 'b' are pooled into the row 'learned' (a mean over seeds) but differ in "
        "more than the seed: train.lr: 0.001 -> 0.002; analyse them in separate folders, or give "
        "--group-by the keys that tell them apart");

  // A sweep's commands.txt: a and "my run" trained, c finished earlier; b and d are foreign.
  std::ofstream(dir / "commands.txt")
      << "# 2026-01-01T00:00:00Z  commit abc\n"
      << "relpos sweep --grid seed=1,2\n"
      << "/bin/relpos train --out " << (dir / "a").string() << " --quiet --set seed=1\n"
      << "/bin/relpos train --out '" << (dir / "my run").string() << "' --quiet\n"
      << "# already finished, not run again: " << (dir / "c").string() << "\n";
  std::vector<RunInfo> with_space = runs;
  with_space.push_back(run("my run", "rope", "seed: 2\nthreads: 1\ntrain:\n  lr: 0.5\n  steps: 99\n"));
  const auto w2 = experiment_warnings(with_space, dir.string());
  REQUIRE(w2.size() == 2);
  CHECK(w2[1] == "3 run folder(s) of " + dir.string() +
                     " are not runs of its sweep (no command in commands.txt trains them): 'b', "
                     "'e', 'd'; they are pooled like the others");
  CHECK(sweep_run_names(dir.string()) == std::vector<std::string>{"a", "my run", "c"});
  CHECK_FALSE(sweep_run_names((dir / "nothing").string()).has_value());

  // The report says so at the top.
  const std::string md = write_report({dir.string(), with_space, true});
  CHECK(md.find("**Warning:** runs 'a' and 'b' are pooled") != std::string::npos);
  CHECK(md.find("**Warning:** 3 run folder(s) of") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("report analyses again when a run changed after its tables were written") {
  const fs::path dir = test::analysis_scratch("stale");
  fs::create_directories(dir / "tables");
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  std::ofstream(dir / "a" / "run.h5") << "x";
  std::ofstream(dir / "b" / "result.json") << "{}";
  const auto now = fs::last_write_time(dir / "tables");
  const std::vector<std::string> runs = {(dir / "a").string(), (dir / "b").string()};
  fs::last_write_time(dir / "a" / "run.h5", now - std::chrono::hours(1));
  fs::last_write_time(dir / "b" / "result.json", now - std::chrono::hours(1));
  CHECK(newer_than_tables(runs, (dir / "tables").string()).empty());
  // A run trained again (--overwrite, or a sweep that added seeds) after `relpos analyze`.
  fs::last_write_time(dir / "b" / "result.json", now + std::chrono::seconds(5));
  CHECK(newer_than_tables(runs, (dir / "tables").string()) ==
        (dir / "b" / "result.json").string() + " is newer than the tables");
  CHECK(newer_than_tables(runs, (dir / "nothing").string()) == "no tables yet");
  fs::remove_all(dir);
}
