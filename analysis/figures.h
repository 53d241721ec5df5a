// The analysis figures, from plain data (snapshot tensors, metric series). Each function writes
// PNG, PDF, .dat and .gp files into `dir` (see gnuplot.h) and returns what it drew.
//
//   1 relative_weight_figures  curves over r in [−R, R] of every exported profile (TISA f, T5
//                              and ALiBi profiles, Huang scales, KERPLE and FIRE biases, the
//                              xPos decay), one curve per head (or layer, or channel pair);
//                              relative tables (Shaw keys/values, Huang tables) as channel × r
//                              heatmaps, one figure per layer
//   2 attention_figures        head-averaged attention map of each layer, and a per-head grid
//   3 absolute_table_figures   the table p_i (position × channel) and P·Pᵀ
//   4 invariance_figure        invariance quantities and the validation metric against step
//   5 extrapolation_figure     metric against evaluation length, one line per variant
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/gnuplot.h"
#include "analysis/invariance_baseline.h"
#include "analysis/snapshot.h"
#include "analysis/variant_palette.h"

namespace relpos::analysis {

// What the figures of one analysis share.
struct FigureOptions {
  FigurePreset size = FigurePreset::screen;  // figures.size of the runs' config
  // Cross-run figures: the report's variants, so that each keeps one colour in every figure.
  // Empty: curves take their place in their panel.
  VariantPalette palette = {};
  // Relative-weight figures: the training length T (task.seq_len); distances |r| < T, the ones
  // training saw, are shaded and labelled "trained". 0: unknown, nothing marked.
  int64_t train_length = 0;
};

struct FigureInfo {
  std::string png;      // path of the PNG (PDF, .gp and .dat beside it)
  std::string caption;  // one sentence for the report
};

struct Series {
  std::vector<double> x, y;
  // A mean curve's runs, (x, y): drawn as dots of the curve's colour where a figure pools runs.
  std::vector<std::pair<double, double>> points = {};
};

// Figures 1–3 of one snapshot. `label` names the run in titles (e.g. "learned+tisa seed 1").
// causal: signed distances are drawn for r <= 0 only (a causal model never looks at r > 0, where
// a table or bias holds untrained values).
std::vector<FigureInfo> relative_weight_figures(const SnapshotData& s, const std::string& dir,
                                                const std::string& label, int64_t radius = 50,
                                                bool causal = false, const FigureOptions& fo = {});
// How attention heatmaps map probabilities to colours (`relpos analyze --heads-scale`,
// `--colour-cap`).
struct ColourScale {
  // Each head on its own scale with its own colour bar, so that a head with weak, diffuse
  // attention is not drawn in one dark colour next to a sharp one; else one scale for all heads
  // of a layer, stated in the figure's title.
  bool per_head = false;
  // The top colour is used from this quantile of the visible entries on (the colour bar says
  // so); 1: the largest entry (uncapped).
  double cap = 0.99;
};
// causal: the colour scale is set from the visible entries j <= i only. Captions and titles
// say over how many probe sequences the maps are averaged (SnapshotData::probe_count).
std::vector<FigureInfo> attention_figures(const SnapshotData& s, const std::string& dir,
                                          const std::string& label, bool causal = false,
                                          const ColourScale& scale = {},
                                          const FigureOptions& fo = {});
std::vector<FigureInfo> absolute_table_figures(const SnapshotData& s, const SnapshotOptions& o,
                                               const std::string& dir, const std::string& label,
                                               const FigureOptions& fo = {});

// Reference levels drawn as labelled dotted lines: (value, label).
using ReferenceLines = std::vector<std::pair<double, std::string>>;

// The random-table level of each distinct P·Pᵀ baseline among `baselines` (quantity key ->
// I₀; gram:* keys only), as reference lines "random table I₀ = 0.667" (with the variant when
// the levels differ).
ReferenceLines gram_baseline_lines(const std::map<std::string, InvarianceBaseline>& baselines);

// Figure 4: one line per invariance quantity (left axis), the metric on the right axis, labelled
// with metric_axis_label(metric_name, task, tokenizer); the legend under the plot. `baselines`:
// the random-table level of the run's P·Pᵀ scores, drawn as labelled lines.
FigureInfo invariance_figure(const std::map<std::string, Series>& invariance,
                             const std::string& metric_name, const Series& metric,
                             const std::string& dir, const std::string& label,
                             const std::string& task = "", const std::string& tokenizer = "",
                             const FigureOptions& fo = {}, const ReferenceLines& baselines = {});

// Figure 4 across the runs of an experiment: one panel per quantity (panel title -> variant ->
// mean over its runs at each snapshot step, and each run as Series::points), one line per
// variant. steps: the step axis every
// panel shares (the metric's panel starts at its first logged step, the others at 0).
// references: panel title -> levels drawn in that panel (the random-table P·Pᵀ level).
FigureInfo invariance_by_variant_figure(
    const std::vector<std::pair<std::string, std::map<std::string, Series>>>& panels,
    const std::string& dir, std::optional<std::pair<double, double>> steps = std::nullopt,
    const FigureOptions& fo = {}, const std::map<std::string, ReferenceLines>& references = {});

// Figure 5: one line per variant (mean over its runs), every run as a dot of the line's colour,
// training length marked.
struct ExtrapolationLine {
  std::string label;
  std::vector<double> length, value;  // NaN: not applicable at that length
  std::vector<std::pair<double, double>> points = {};  // every run's (length, value): dots
};
// An axis label for an evaluation column or metric name ("ppl_sliding" -> "perplexity (sliding
// window)", "valid_accuracy" of an mlm run -> "validation masked-token accuracy"); task: the
// run's task.type, which says what an accuracy or loss counts (empty: not said). The name
// itself when it is not one of the evaluation's columns. `tokenizer` (data.tokenizer) makes a
// language model's loss per byte or per token, as the tables say ("nats/byte").
std::string metric_axis_label(const std::string& metric, const std::string& task = "",
                              const std::string& tokenizer = "");

// Labels of the figure; empty fields keep the defaults of the token-length evaluation
// ("length extrapolation: LABEL", "evaluation length (tokens)", "training length N", the y axis
// "LABEL on the SPLIT split"), LABEL = metric_axis_label(metric, task).
struct ExtrapolationLabels {
  std::string title, xlabel, train_length, ylabel;
  std::string task;   // the runs' task.type
  std::string split;  // the split evaluated ("test"), said on the y axis
  std::string tokenizer = "";  // the runs' data.tokenizer (a loss per byte or per token)
};
FigureInfo extrapolation_figure(const std::vector<ExtrapolationLine>& lines,
                                const std::string& metric, double train_length,
                                const std::string& dir, const std::string& stem,
                                const ExtrapolationLabels& labels = {},
                                const FigureOptions& fo = {});

// Final invariance against final metric, one point per run, one series per variant; `xlines`:
// labelled reference levels on the x axis (the random table's score).
FigureInfo scatter_figure(const std::map<std::string, Series>& by_variant,
                          const std::string& xlabel, const std::string& ylabel,
                          const std::string& title, const std::string& dir,
                          const std::string& stem, const FigureOptions& fo = {},
                          const ReferenceLines& xlines = {});

// figures/index.tsv: one line per figure, "<file name>\t<caption>", read by `relpos report`.
void write_figure_index(const std::string& dir, const std::vector<FigureInfo>& figures);
std::vector<FigureInfo> read_figure_index(const std::string& dir);  // paths made absolute

}  // namespace relpos::analysis
