#include "analysis/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "analysis/extrapolation_tables.h"
#include "analysis/inference.h"
#include "analysis/stats.h"
#include "analysis/tables.h"
#include "analysis/units.h"
#include "core/util/sampling_stats.h"

namespace relpos::analysis {
namespace fs = std::filesystem;

std::string encoder_notes(const std::vector<RunResult>& runs,
                          const std::map<std::string, std::string>& notes) {
  std::set<std::string> seen;
  std::string out;
  for (const auto& r : runs) {
    if (r.info.causal) continue;
    std::string types = r.info.position_types;
    for (size_t start = 0; start <= types.size();) {
      const size_t end = std::min(types.find('+', start), types.size());
      const std::string name = types.substr(start, end - start);
      start = end + 1;
      const auto it = notes.find(name);
      if (it == notes.end() || it->second.empty() || !seen.insert(name).second) continue;
      out += " " + it->second + ".";
    }
  }
  return out;
}

namespace {

bool is_scores(const std::string& q) { return q.rfind("scores:", 0) == 0; }

bool always_one(const std::vector<double>& v) {
  return !v.empty() &&
         std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x) && x > 1 - 1e-9; });
}

// Whether scores:* quantity q enters the run's "position scores" mean. In a stack such as
// learned + tisa, an encoding whose scores measure 1 at every snapshot (a score bias that is a
// function of j − i: TISA, T5, ALiBi) would pull the mean halfway to 1 whatever the other
// encoding does, so it is left out when the run has another scores:* quantity.
bool in_scores_mean(const RunResult& r, const std::string& q) {
  if (!is_scores(q)) return false;
  if (!always_one(r.invariance.at(q))) return true;
  for (const auto& [other, v] : r.invariance)
    if (is_scores(other) && !always_one(v)) return false;
  return true;
}

// Final-snapshot invariance of a run: "attention", and the means of its scores:* (see
// in_scores_mean) and gram:* quantities.
std::map<std::string, double> final_invariance(const RunResult& r) {
  std::map<std::string, double> out;
  std::map<std::string, std::vector<double>> parts;
  for (const auto& [q, v] : r.invariance) {
    if (v.empty() || std::isnan(v.back())) continue;
    if (q == "attention")
      parts["inv_attention"].push_back(v.back());
    else if (in_scores_mean(r, q))
      parts["inv_scores"].push_back(v.back());
    else if (q.rfind("gram:", 0) == 0) {
      parts["inv_gram"].push_back(v.back());
      if (const auto b = r.baselines.find(q); b != r.baselines.end())
        parts["invc_gram"].push_back(corrected_invariance(v.back(), b->second.mean));
    }
  }
  for (const auto& [k, v] : parts) out[k] = mean(v);
  return out;
}

const std::vector<ColumnSpec>& invariance_columns() {
  static const std::vector<ColumnSpec> c = {{"inv_attention", "inv. attention (0–1)", 3},
                                            {"inv_scores", "inv. position scores (0–1)", 3},
                                            {"inv_gram", "inv. P·Pᵀ (0–1)", 3},
                                            {"invc_gram", "inv. P·Pᵀ corrected (0 = random table)", 3}};
  return c;
}

std::string most_common_metric(const std::vector<RunResult>& runs) {
  std::map<std::string, int> count;
  for (const auto& r : runs)
    if (!r.metric.empty()) ++count[r.metric];
  std::string best;
  int n = 0;
  for (const auto& [m, c] : count)
    if (c > n) best = m, n = c;
  return best;
}

double final_value(const RunInfo& info, const std::string& metric) {
  auto it = info.metrics.find(metric);
  return it == info.metrics.end() || it->second.y.empty() ? kNaN : it->second.y.back();
}

// Metric names in table order: by name, and "name@<length>" columns by their number (8, 16,
// ..., 128 rather than 128, 16, 32, ...).
struct MetricOrder {
  static std::pair<std::string, int64_t> key(const std::string& m) {
    const size_t at = m.rfind('@');
    if (at == std::string::npos || at + 1 >= m.size() || m.size() - at > 19 ||
        m.find_first_not_of("0123456789", at + 1) != std::string::npos)
      return {m, -1};
    return {m.substr(0, at), std::stoll(m.substr(at + 1))};
  }
  bool operator()(const std::string& a, const std::string& b) const {
    const auto ka = key(a), kb = key(b);
    return ka != kb ? ka < kb : a < b;
  }
};

void results_table(const std::vector<RunResult>& runs, const fs::path& tables,
                   const std::map<std::string, std::string>& notes) {
  std::vector<RunRecord> records;
  std::set<std::string, MetricOrder> metrics;
  bool params = false, time = false;
  std::set<std::string> inv;
  // Units and bits: from the first run (an experiment folder holds one task).
  const std::string task = runs.empty() ? "" : runs.front().info.task;
  const std::string tokenizer = runs.empty() ? "" : runs.front().info.tokenizer;
  const auto is_loss = [&](const std::string& m) {
    return is_lm_task(task) && m.size() > 4 && m.compare(m.size() - 4, 4, "loss") == 0;
  };
  for (const auto& r : runs) {
    RunRecord rec;
    rec.group = r.info.group;
    rec.seed = r.info.seed;
    for (const auto& [m, s] : r.info.metrics)
      if ((m.rfind("valid_", 0) == 0 || m.rfind("test_", 0) == 0) && !s.y.empty() &&
          !is_sampling_statistic(m)) {
        rec.values[m] = s.y.back();
        metrics.insert(m);
        if (is_loss(m)) rec.values[m + ":bits"] = nats_to_bits(s.y.back());
      }
    for (const auto& [k, v] : final_invariance(r)) rec.values[k] = v, inv.insert(k);
    if (r.info.positional_parameters >= 0)
      rec.values["params"] = static_cast<double>(r.info.positional_parameters), params = true;
    if (std::isfinite(r.training_time_s)) rec.values["time"] = r.training_time_s, time = true;
    records.push_back(std::move(rec));
  }
  std::vector<ColumnSpec> cols;
  bool any_per_seed = false;
  for (const auto& m : metrics) {
    // Outcomes that split between seeds (a synthetic task solved or not): every run's value.
    const bool seeds = metric_split_outcomes(m, task);
    std::string unit = metric_unit(m, task, tokenizer);
    if (seeds) unit += unit.empty() ? "per seed" : ", per seed";
    cols.push_back({m, with_unit(m, unit), 4, true, seeds});
    any_per_seed = any_per_seed || seeds;
    // Bits beside every language-model loss (nats / ln 2).
    if (is_loss(m))
      cols.push_back({m + ":bits", with_unit(m, metric_unit(bits_name(tokenizer), task, tokenizer)), 4});
  }
  for (const auto& c : invariance_columns())
    if (inv.count(c.key)) cols.push_back(c);
  if (params) cols.push_back({"params", "pos. params (count)", 0, false});
  if (time) cols.push_back({"time", "train time (s)", 1});
  Table t = group_table(records, cols, "variant");
  t.title = any_per_seed ? "Results (mean over runs; per-seed columns: every run's value)"
                         : "Results (mean over runs)";
  t.split = split_label(std::vector<std::string>(metrics.begin(), metrics.end()));
  t.note =
      "Metrics: last logged value of each run. inv.: translation invariance (0–1) at the last "
      "snapshot (attention: head-averaged maps, mean over layers; position scores: mean "
      "over layers, heads and the run's encodings, leaving out of a stack an encoding whose "
      "scores are invariant at every snapshot, such as TISA's f(j − i); P·Pᵀ: absolute "
      "tables, to be read against a random table of the same shape, which already scores about "
      "E / (E + n): the corrected column is (I − I₀) / (1 − I₀), 0 for a table no more invariant "
      "than random, 1 for a Toeplitz P·Pᵀ (docs/analysis.md §3c)). — : the run has no such matrix (none, rope: no "
      "position-only scores; relative variants: no absolute table). pos. params: positional "
      "parameters.";
  t.note += encoder_notes(runs, notes);
  write_table(t, tables.string(), "results");
}

// The final P·Pᵀ scores of the runs, baseline-corrected, against the final metric: the quantity
// the invariance claims are judged on (docs/analysis.md §3c), one point per run, the random
// table's level (0) marked.
void final_gram_scatter(const std::vector<RunResult>& runs, const std::string& metric,
                        const fs::path& figures, const FigureOptions& fo,
                        std::vector<FigureInfo>& figs) {
  std::map<std::string, Series> scatter;
  for (const auto& r : runs) {
    const double m = final_value(r.info, metric);
    const auto inv = final_invariance(r);
    if (const auto it = inv.find("invc_gram"); it != inv.end() && std::isfinite(it->second) &&
                                               std::isfinite(m)) {
      scatter[r.info.group].x.push_back(it->second);
      scatter[r.info.group].y.push_back(m);
    }
  }
  if (scatter.empty()) return;
  const std::string what =
      metric_axis_label(metric, runs.front().info.task, runs.front().info.tokenizer);
  figs.push_back(scatter_figure(
      scatter, "P·Pᵀ translation invariance, baseline-corrected (I − I₀)/(1 − I₀), final snapshot",
      "final " + what, "final P·Pᵀ invariance (baseline-corrected) against final " + what,
      figures.string(), "final_invariance_vs_metric", fo, {{0.0, "random table (I₀)"}}));
}

// A correlation table's statistic cell: the value, or kFewPointsText below kMinReportedPoints.
Cell statistic(double v, size_t n) {
  return n < kMinReportedPoints ? Cell::label(kFewPointsText) : Cell::value(v);
}

void final_invariance_tables(const std::vector<RunResult>& runs, const std::string& metric,
                             const fs::path& tables) {
  Table t;
  t.title = "Final invariance and final " + metric + ", per run";
  t.split = split_label({metric});
  const std::string unit =
      runs.empty() ? "" : metric_unit(metric, runs.front().info.task, runs.front().info.tokenizer);
  t.columns = {{"run", 0}, {"variant", 0}, {"seed", 0}, {with_unit(metric, unit), 4}};
  for (const auto& c : invariance_columns()) t.columns.push_back({c.header, 3});
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> pairs;
  for (const auto& r : runs) {
    const double m = final_value(r.info, metric);
    const auto inv = final_invariance(r);
    std::vector<Cell> row{Cell::label(r.info.name), Cell::label(r.info.group),
                          Cell::value(static_cast<double>(r.info.seed)), Cell::value(m)};
    for (const auto& c : invariance_columns()) {
      auto it = inv.find(c.key);
      const double v = it == inv.end() ? kNaN : it->second;
      row.push_back(Cell::value(v));
      pairs[c.key].first.push_back(v);
      pairs[c.key].second.push_back(m);
    }
    t.rows.push_back(std::move(row));
  }
  write_table(t, tables.string(), "final_invariance");

  Table c;
  c.title = "Final invariance against final " + metric + " across runs";
  c.split = t.split;
  c.columns = {{"quantity", 0},  {"runs", 0},      {"Pearson r", 3}, {"r: 95% CI (Fisher z)", 0},
               {"p (r = 0)", 4}, {"Spearman ρ", 3}};
  for (const auto& spec : invariance_columns()) {
    auto [x, y] = pairs[spec.key];
    drop_nan_pairs(x, y);
    const CorrelationTest test = pearson_test(x, y);
    const bool interval = std::isfinite(test.lo) && std::isfinite(test.hi);
    const size_t n = x.size();
    c.rows.push_back(
        {Cell::label(spec.header), Cell::value(static_cast<double>(n)),
         statistic(pearson_of_series(x, y), n),
         n < kMinReportedPoints
             ? Cell::label(kFewPointsText)
             : Cell::label(interval ? fmt::format("[{:.3f}, {:.3f}]", test.lo, test.hi) : ""),
         statistic(test.p_two, n), statistic(spearman_of_series(x, y), n)});
  }
  c.note =
      "One pair per run, runs of every variant pooled: a description across variants and "
      "seeds, not evidence that invariance goes with performance (the claims judge that within "
      "a variant across a designed factor, docs/analysis.md §3b). r's interval: Fisher z; p: "
      "two-sided t-test of r = 0 with runs − 2 degrees of freedom. n<5: fewer than 5 runs with "
      "both values, too few for a correlation to mean anything, so none is printed. — : "
      "undefined (a constant column).";
  write_table(c, tables.string(), "final_invariance_correlation");
}

// Invariance of the attention maps, the position scores and P·Pᵀ, and the validation metric,
// against the training step: one line per variant (mean over its runs at each snapshot step).
// Drawn when some run has at least kDenseSnapshots snapshots (an experiment that follows
// training, like `invariance`), since a line through two or three points says little.
constexpr size_t kDenseSnapshots = 5;

void invariance_by_variant(const std::vector<RunResult>& runs, const std::string& metric,
                           const fs::path& figures, const FigureOptions& fo,
                           std::vector<FigureInfo>& figs) {
  bool dense = false;
  for (const auto& r : runs) dense = dense || r.steps.size() >= kDenseSnapshots;
  if (!dense) return;
  // panel -> variant -> step -> values over runs
  using Points = std::map<std::string, std::map<int64_t, std::vector<double>>>;
  std::map<std::string, Points> acc;
  auto add = [&](const std::string& panel, const std::string& variant, int64_t step, double v) {
    if (std::isfinite(v)) acc[panel][variant][step].push_back(v);
  };
  const std::string p_att = "invariance of attention (head average)";
  const std::string p_scores = "invariance of position scores (mean over heads)";
  const std::string p_gram = "invariance of P·Pᵀ (absolute tables)";
  std::map<std::string, InvarianceBaseline> gram_baselines;  // gram:<group> -> I₀
  for (const auto& r : runs) {
    if (r.steps.size() < kDenseSnapshots) continue;
    for (const auto& [q, b] : r.baselines)
      if (q.rfind("gram:", 0) == 0) gram_baselines.emplace("gram:" + r.info.group, b);
    for (size_t k = 0; k < r.steps.size(); ++k) {
      std::map<std::string, std::vector<double>> parts;
      for (const auto& [q, v] : r.invariance) {
        if (k >= v.size() || !std::isfinite(v[k])) continue;
        if (q == "attention") parts[p_att].push_back(v[k]);
        else if (in_scores_mean(r, q)) parts[p_scores].push_back(v[k]);
        else if (q.rfind("gram:", 0) == 0) parts[p_gram].push_back(v[k]);
      }
      for (const auto& [panel, vals] : parts) add(panel, r.info.group, r.steps[k], mean(vals));
      if (r.metric == metric && k < r.metric_at_step.size())
        add(metric, r.info.group, r.steps[k], r.metric_at_step[k]);
    }
  }
  std::vector<std::pair<std::string, std::map<std::string, Series>>> panels;
  double first = INFINITY, last = -INFINITY;  // one step axis for every panel
  for (const std::string& name : {p_att, p_scores, p_gram, metric}) {
    auto it = acc.find(name);
    if (it == acc.end()) continue;
    // The metric's panel is titled in words ("validation masked-token accuracy").
    const std::string title = name == metric ? metric_axis_label(metric, runs.front().info.task,
                                                                 runs.front().info.tokenizer)
                                             : name;
    std::map<std::string, Series> lines;
    for (const auto& [variant, by_step] : it->second)
      for (const auto& [step, vals] : by_step) {
        lines[variant].x.push_back(static_cast<double>(step));
        lines[variant].y.push_back(mean(vals));
        if (vals.size() > 1)  // the runs behind the mean, as dots
          for (double v : vals) lines[variant].points.push_back({static_cast<double>(step), v});
        first = std::min(first, static_cast<double>(step));
        last = std::max(last, static_cast<double>(step));
      }
    panels.push_back({title, std::move(lines)});
  }
  if (!panels.empty())
    figs.push_back(invariance_by_variant_figure(panels, figures.string(),
                                                std::make_pair(first, last), fo,
                                                {{p_gram, gram_baseline_lines(gram_baselines)}}));
}



}  // namespace

VariantPalette report_palette(const std::vector<RunInfo>& runs) {
  std::vector<std::string> names;
  for (const auto& r : runs) {
    names.push_back(r.group);
    for (const auto& [suffix, t] : r.extra_evaluations) names.push_back(r.group + " (" + suffix + ")");
  }
  return VariantPalette(names);
}

ExperimentResult summarize_experiment(std::vector<RunResult> runs, const std::string& dir,
                                      const AnalyzeOptions& o) {
  ExperimentResult ex;
  ex.runs = std::move(runs);
  ex.metric = most_common_metric(ex.runs);
  const fs::path tables = fs::path(dir) / "tables", figures = fs::path(dir) / "figures";
  fs::remove_all(tables);  // rewritten whole, as in analyze_run
  fs::remove_all(figures);
  fs::create_directories(tables);
  results_table(ex.runs, tables, o.encoder_notes);
  FigureOptions fo;
  fo.size = figure_preset_of(o, ex.runs.empty() ? RunInfo{} : ex.runs.front().info);
  std::vector<RunInfo> infos;
  for (const auto& r : ex.runs) infos.push_back(r.info);
  fo.palette = report_palette(infos);
  if (!ex.metric.empty()) {
    final_invariance_tables(ex.runs, ex.metric, tables);
    if (o.figures && ex.runs.size() >= 2)
      final_gram_scatter(ex.runs, ex.metric, figures, fo, ex.figures);
  }
  extrapolation_outputs(ex.runs, tables, figures, o.figures, ex.figures, fo);
  if (o.figures && !ex.metric.empty())
    invariance_by_variant(ex.runs, ex.metric, figures, fo, ex.figures);
  if (o.figures) write_figure_index(figures.string(), ex.figures);
  return ex;
}

ExperimentResult analyze_experiment(const std::vector<const RunSource*>& runs,
                                    const std::string& dir, const AnalyzeOptions& o) {
  std::vector<RunResult> results;
  for (const RunSource* src : runs) results.push_back(analyze_run(*src, src->info().dir, o));
  return summarize_experiment(std::move(results), dir, o);
}

}  // namespace relpos::analysis
