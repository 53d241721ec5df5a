#include "analysis/run_analysis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h only before fmt 11)

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "analysis/stats.h"
#include "analysis/tables.h"
#include "analysis/tensorboard_events.h"
#include "analysis/units.h"
#include "core/task/task_registry.h"
#include "core/util/errors.h"

namespace relpos::analysis {
namespace fs = std::filesystem;
namespace {

std::string run_label(const RunInfo& i) {
  return fmt::format("{} seed {}", variant_group(i), i.seed);
}

// Long-format profiles of the figure snapshot: one line per (matrix, r).
void write_profiles_csv(const std::vector<MatrixRow>& rows, const std::string& path) {
  std::ofstream f(path);
  f << "step,source,variant,layer,head,region,r,g,count\n";
  for (const auto& r : rows) {
    const Profile& g = r.metrics.profile;
    for (size_t k = 0; k < g.offsets.size(); ++k)
      f << fmt::format("{},{},{},{},{},{},{},{:.10g},{}\n", r.step, r.source, r.variant, r.layer,
                       r.head, r.region == Region::lower ? "lower" : "full", g.offsets[k],
                       g.values[k], g.counts[k]);
  }
  if (!f) throw Error("cannot write " + path);
}

void write_matrices_csv(const std::vector<MatrixRow>& rows, std::ofstream& f) {
  const auto g = [](double v) { return std::isnan(v) ? std::string() : fmt::format("{:.10g}", v); };
  for (const auto& r : rows)
    f << fmt::format("{},{},{},{},{},{},{},{},{},{}\n", r.step, r.source, r.variant, r.layer,
                     r.head, r.region == Region::lower ? "lower" : "full", g(r.metrics.invariance),
                     g(r.metrics.symmetry), g(r.metrics.monotonicity_left),
                     g(r.metrics.monotonicity_right));
}

// Each quantity's untrained baseline I₀, and its first and last scores raw and corrected.
void write_baseline_table(const RunResult& res, const std::string& tables, const std::string& label) {
  Table t;
  t.title = "Translation invariance against its untrained baseline (0–1) — " + label;
  t.columns = {{"quantity", 0},         {"baseline I₀", 3},         {"I₀ 95% interval", 0},
               {"first (raw)", 3},      {"last (raw)", 3},          {"first (corrected)", 3},
               {"last (corrected)", 3}, {"baseline from", 0}};
  for (const auto& [q, v] : res.invariance) {
    const auto it = res.baselines.find(q);
    if (it == res.baselines.end() || v.empty()) continue;
    const InvarianceBaseline& b = it->second;
    t.rows.push_back({Cell::label(quantity_label(q)), Cell::value(b.mean),
                      Cell::label(b.draws > 0 ? fmt::format("[{:.4f}, {:.4f}]", b.lo, b.hi) : "—"),
                      Cell::value(v.front()), Cell::value(v.back()),
                      Cell::value(corrected_invariance(v.front(), b.mean)),
                      Cell::value(corrected_invariance(v.back(), b.mean)), Cell::label(b.how)});
  }
  t.note = "corrected = (I − I₀) / (1 − I₀): 0 is no more translation invariant than before "
           "training (or than a random table of the same shape), 1 is fully invariant. A random "
           "n × E table's P·Pᵀ already scores about E / (E + n) (docs/analysis.md).";
  if (!t.rows.empty()) write_table(t, tables, "invariance_baseline");
}

}  // namespace

std::string choose_metric(const std::map<std::string, Series>& metrics,
                          const std::string& requested, const std::string& task) {
  if (!requested.empty()) {
    if (metrics.count(requested)) return requested;
    std::vector<std::string> names;
    for (const auto& [k, v] : metrics) names.push_back(k);
    throw ConfigError(
        fmt::format("--metric {}: the run has no such metric (it has: {})", requested,
                    names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
  }
  if (const TaskInfo* t = TaskRegistry::get().find(task))
    if (const std::string m = "valid_" + t->primary().name; metrics.count(m)) return m;
  for (const char* m : {"valid_accuracy", "valid_f1", "valid_em", "valid_ppl", "valid_loss"})
    if (metrics.count(m)) return m;
  for (const auto& [k, v] : metrics)
    if (k.rfind("valid_", 0) == 0) return k;
  return "";
}

FigurePreset figure_preset_of(const AnalyzeOptions& o, const RunInfo& run) {
  if (!o.figure_size.empty()) return figure_preset(o.figure_size, "--figure-size");
  if (!run.figure_size.empty()) return figure_preset(run.figure_size, "figures.size");
  return FigurePreset::screen;
}

double training_time(const std::map<std::string, Series>& metrics) {
  for (const char* m : {"elapsed_s", "train_time_s", "time_s", "wall_time_s"})
    if (auto it = metrics.find(m); it != metrics.end() && !it->second.y.empty())
      return it->second.y.back();
  return kNaN;
}

namespace {

// Tables: invariance per snapshot, and its correlation with the metric over the snapshots.
void write_invariance_tables(const RunResult& res, const std::string& tables) {
  const RunInfo& info = res.info;
  Table summary;
  summary.title =
      "Translation invariance per snapshot (0–1; 1 = translation invariant) — " + run_label(info);
  summary.split = split_label({res.metric});
  summary.columns = {{"step", 0}};
  if (!res.metric.empty()) {
    const std::string unit = metric_unit(res.metric, info.task, info.tokenizer);
    summary.columns.push_back(
        {res.metric + " (" + (unit.empty() ? "" : unit + "; ") + "interpolated)", 4});
  }
  for (const auto& [q, v] : res.invariance) summary.columns.push_back({quantity_label(q), 4});
  for (size_t k = 0; k < res.steps.size(); ++k) {
    std::vector<Cell> row{Cell::value(static_cast<double>(res.steps[k]))};
    if (!res.metric.empty()) row.push_back(Cell::value(res.metric_at_step[k]));
    for (const auto& [q, v] : res.invariance) row.push_back(Cell::value(v[k]));
    summary.rows.push_back(std::move(row));
  }
  write_table(summary, tables, "invariance_summary");

  Table corr;
  corr.title = "Invariance against " +
               (res.metric.empty() ? std::string("(no metric)") : res.metric) +
               " over the snapshots — " + run_label(info);
  corr.split = summary.split;
  corr.columns = {{"quantity", 0}, {"snapshots", 0}, {"Pearson r", 3}, {"Spearman ρ", 3}};
  const auto statistic = [](double v, int64_t n) {
    return n < static_cast<int64_t>(kMinReportedPoints) ? Cell::label(kFewPointsText)
                                                        : Cell::value(v);
  };
  for (const auto& c : res.correlations)
    corr.rows.push_back({Cell::label(quantity_label(c.quantity)),
                         Cell::value(static_cast<double>(c.n)), statistic(c.pearson, c.n),
                         statistic(c.spearman, c.n)});
  corr.note =
      "Pairs: each snapshot's invariance with the metric linearly interpolated at the "
      "snapshot's step; snapshots outside the metric's steps are left out. n<5: fewer than 5 "
      "pairs, too few for a correlation to mean anything (over 3 points a ρ of ±1 comes by "
      "chance one time in three), so none is printed; more snapshots (snapshots.every_percent, "
      "snapshots.steps) give one. — : undefined, for a constant series (e.g. a score bias of "
      "j − i, invariant at every snapshot). Both quantities may simply grow with training: a "
      "correlation here is not a causal link.";
  write_table(corr, tables, "invariance_correlation");

}

// The run's invariance over training, with the random-table level of each P·Pᵀ score.
void add_invariance_figure(RunResult& res, const Series& metric, const std::string& figures,
                           const FigureOptions& fo) {
  const RunInfo& info = res.info;
  if (res.steps.empty()) return;
  std::map<std::string, Series> inv;
  for (const auto& [q, v] : res.invariance) {
    Series s;
    for (size_t k = 0; k < v.size(); ++k) {
      s.x.push_back(static_cast<double>(res.steps[k]));
      s.y.push_back(v[k]);
    }
    inv[q] = s;
  }
  res.figures.push_back(invariance_figure(inv, res.metric, metric, figures,
                                          run_label(info), info.task, info.tokenizer, fo,
                                          gram_baseline_lines(res.baselines)));
}

}  // namespace

RunResult analyze_run(const RunSource& src, const std::string& out_dir, const AnalyzeOptions& o) {
  RunResult res;
  res.info = src.info();
  const RunInfo& info = res.info;
  res.metric = choose_metric(info.metrics, o.metric, info.task);
  res.training_time_s =
      std::isfinite(info.train_seconds) ? info.train_seconds : training_time(info.metrics);
  const Series metric = res.metric.empty() ? Series{} : info.metrics.at(res.metric);
  res.final_metric = metric.y.empty() ? kNaN : metric.y.back();
  res.steps = info.snapshot_steps;

  const fs::path dir(out_dir), tables = dir / "tables", figures = dir / "figures";
  // Both folders belong to the analysis: clear them so no file of an earlier analysis (a
  // layer or metric that is gone) stays behind.
  fs::remove_all(tables);
  fs::remove_all(figures);
  fs::create_directories(tables);
  // P·Pᵀ over the positions the run trained (task.seq_len), whatever the probe length.
  const SnapshotOptions so{info.causal, info.train_length};
  AnalysisFileWriter h5((dir / "analysis.h5").string(),
                        {{"source", (fs::path(info.dir) / "run.h5").string()},
                         {"metric", res.metric},
                         {"position_types", info.position_types},
                         {"region", info.causal ? "lower (causal: j <= i)" : "full"}});
  std::ofstream matrices(tables / "invariance.csv");
  matrices << "step,source,variant,layer,head,region,invariance,symmetry,monotonicity_left,"
              "monotonicity_right\n";

  const int64_t figure_step =
      o.figure_step >= 0 ? o.figure_step : (res.steps.empty() ? -1 : res.steps.back());
  if (o.figure_step >= 0 &&
      std::find(res.steps.begin(), res.steps.end(), o.figure_step) == res.steps.end())
    throw ConfigError(fmt::format("--step {}: {} has no snapshot at that step (snapshots: {})",
                                  o.figure_step, info.dir, fmt::join(res.steps, ", ")));

  FigureOptions fo;
  fo.size = figure_preset_of(o, info);
  fo.train_length = info.train_length;
  std::vector<std::map<std::string, double>> summaries;
  std::map<std::string, std::pair<int64_t, int64_t>> shapes;  // of the P·Pᵀ factors measured
  for (int64_t step : res.steps) {
    const SnapshotData snap = src.snapshot(step);
    const std::vector<MatrixRow> rows = measure_snapshot(snap, so);
    if (shapes.empty()) shapes = gram_shapes(snap, so);
    h5.add_snapshot(step, rows);
    write_matrices_csv(rows, matrices);
    summaries.push_back(summarize(rows));
    res.metric_at_step.push_back(interpolate(metric.x, metric.y, static_cast<double>(step)));
    if (step == figure_step) {
      write_profiles_csv(rows, (tables / "profiles.csv").string());
      if (o.figures) {
        const std::string label = run_label(info);
        for (auto& f :
             relative_weight_figures(snap, figures.string(), label, o.radius, info.causal, fo))
          res.figures.push_back(f);
        for (auto& f : attention_figures(snap, figures.string(), label, info.causal,
                                         o.colour_scale, fo))
          res.figures.push_back(f);
        for (auto& f : absolute_table_figures(snap, so, figures.string(), label, fo))
          res.figures.push_back(f);
      }
    }
  }
  if (!matrices) throw Error("cannot write " + (tables / "invariance.csv").string());
  matrices.close();

  for (size_t k = 0; k < summaries.size(); ++k)
    for (const auto& [q, v] : summaries[k]) {
      auto& series = res.invariance[q];
      series.resize(summaries.size(), kNaN);
      series[k] = v;
    }
  for (const auto& [q, v] : res.invariance) {
    std::vector<double> x = v, y = res.metric_at_step;
    drop_nan_pairs(x, y);
    res.correlations.push_back({q, static_cast<int64_t>(x.size()), pearson_of_series(x, y),
                                 spearman_of_series(x, y)});
  }
  h5.finish(res.steps, res.metric_at_step, res.invariance, res.correlations);
  res.baselines = invariance_baselines(res.invariance, res.steps, shapes);
  write_baseline_table(res, tables.string(), run_label(info));

  write_invariance_tables(res, tables.string());
  if (o.figures) add_invariance_figure(res, metric, figures.string(), fo);
  if (o.figures) write_figure_index(figures.string(), res.figures);
  write_analysis_events(res, out_dir, figure_step);
  return res;
}

}  // namespace relpos::analysis
