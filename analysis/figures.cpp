#include "analysis/figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "analysis/gnuplot.h"
#include "analysis/units.h"
#include "core/task/task_registry.h"
#include "core/util/errors.h"

namespace relpos::analysis {
namespace {

std::vector<double> to_vector(const torch::Tensor& t) {
  const auto c = t.to(torch::kCPU, torch::kFloat64).contiguous().reshape({-1});  // (n)
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

std::vector<double> arange(int64_t n) {
  std::vector<double> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = static_cast<double>(k);
  return v;
}

bool dims_are(const NamedTensor& t, std::initializer_list<const char*> names) {
  if (t.dims.size() != names.size() || t.value.dim() != static_cast<int64_t>(names.size()))
    return false;
  size_t k = 0;
  for (const char* n : names)
    if (t.dims[k++] != n) return false;
  return true;
}

// The r of each entry on the distance axis of `name`: <name>_distances, else distances.
std::vector<double> distances_for(const std::map<std::string, NamedTensor>& tensors,
                                  const std::string& name, int64_t n) {
  for (const std::string& key : {name + "_distances", std::string("distances")}) {
    auto it = tensors.find(key);
    if (it != tensors.end() && it->second.value.numel() == n) return to_vector(it->second.value);
  }
  return {};
}

// Indices of the distances within [−radius, radius].
std::vector<int64_t> within(const std::vector<double>& r, int64_t radius) {
  std::vector<int64_t> idx;
  for (size_t k = 0; k < r.size(); ++k)
    if (std::abs(r[k]) <= static_cast<double>(radius)) idx.push_back(static_cast<int64_t>(k));
  return idx;
}

std::string stem_of(const std::string& s) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return out;
}

FigureInfo info(const FigureFiles& f, std::string caption) { return {f.png, std::move(caption)}; }

// Grid shape for n panels: about square.
int grid_columns(int64_t n) {
  return static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
}

FigureSize grid_size(int64_t n, int panel_w, int panel_h, FigurePreset preset) {
  const int cols = grid_columns(n);
  const int rows = static_cast<int>((n + cols - 1) / cols);
  return {std::max(600, cols * panel_w), std::max(450, rows * panel_h + 40), preset};
}

// " over the P probe sequences" (P known), else " over the probe set".
std::string probe_words(const SnapshotData& s) {
  return s.probe_count > 0 ? fmt::format(" over the {} probe sequence{}", s.probe_count,
                                         s.probe_count == 1 ? "" : "s")
                           : std::string(" over the probe set");
}

// The trained distances on a relative-weight axis: |r| < T, so r in [−(T−1), T−1]; r >= 0 on
// an axis of |r|, r <= 0 for a causal model's signed r.
std::pair<double, double> trained_range(int64_t T, bool absolute, bool causal_signed) {
  const double reach = static_cast<double>(T - 1);
  if (absolute) return {0.0, reach};
  return {-reach, causal_signed ? 0.0 : reach};
}

// One curve per row of a (rows, distance) matrix.
std::vector<Curve> profile_curves(const torch::Tensor& m, const std::vector<double>& r,
                                  const std::vector<int64_t>& idx, const std::string& row_name) {
  std::vector<Curve> curves;
  const auto v = m.to(torch::kFloat64);  // (rows,R)
  for (int64_t h = 0; h < v.size(0); ++h) {
    Curve c;
    c.label = fmt::format("{} {}", row_name, h);
    const auto row = to_vector(v[h]);
    for (int64_t k : idx) {
      c.x.push_back(r[k]);
      c.y.push_back(row[k]);
    }
    curves.push_back(std::move(c));
  }
  return curves;
}

// What a relative-weight figure's caption adds (the masked half of a causal model, a clip
// below the radius, the trained distances |r| < T), and the title's clip note: said in the
// figure too, not only in the caption of index.tsv.
std::pair<std::string, std::string> relative_notes(const std::vector<double>& r, int64_t radius,
                                                   bool causal_signed, int64_t T) {
  double reach_all = 0;
  for (double x : r) reach_all = std::max(reach_all, std::abs(x));
  std::string notes, clip_title;
  if (causal_signed)
    notes += " Causal model: keys after the query (r > 0) are masked, so only r ≤ 0 is shown.";
  if (reach_all < static_cast<double>(radius)) {
    notes += fmt::format(" The table ends at |r| = {0:g}: every longer distance uses the "
                         "values at ±{0:g} (clipped).",
                         reach_all);
    clip_title = causal_signed
                     ? fmt::format(" — clipped at r = −{0:g}: longer distances use r = −{0:g}",
                                   reach_all)
                     : fmt::format(" — clipped at |r| = {0:g}: longer distances use r = ±{0:g}",
                                   reach_all);
  }
  if (T > 0)
    notes += fmt::format(" Marked \"trained\": the distances |r| < {} (the training length) "
                         "that training saw; beyond them the weights were never used in "
                         "training.",
                         T);
  return {notes, clip_title};
}

}  // namespace

namespace {

// One exported per-distance tensor of a snapshot and what its figures need: the distances r of
// its distance axis, the indices within the radius (causal: r <= 0 only), captions.
struct RelativeTensor {
  std::string variant, name, what, base, notes, clip_title, trained_label;
  const std::map<std::string, NamedTensor>* tensors = nullptr;
  torch::Tensor value;
  std::vector<double> r;
  std::vector<int64_t> idx;
  bool signed_r = false, causal_half = false;
  int64_t T = 0;  // the training length (0: unknown)
};

// A channel x r heatmap of one (R,d) table, with the trained distances marked.
HeatmapPanel table_heatmap_panel(const RelativeTensor& e, const torch::Tensor& rd,
                                 const std::string& title) {
  const auto v = rd.to(torch::kFloat64);  // (R,d)
  HeatmapPanel p;
  p.title = title;
  p.xlabel = "relative position r = j − i";
  p.ylabel = "channel";
  p.cblabel = "weight";
  for (int64_t k : e.idx) p.x.push_back(e.r[k]);
  p.y = arange(v.size(1));
  p.values = Matrix(v.size(1), static_cast<int64_t>(e.idx.size()));
  const Matrix m = to_matrix(v);
  for (int64_t c = 0; c < v.size(1); ++c)
    for (size_t k = 0; k < e.idx.size(); ++k) p.values(c, k) = m(e.idx[k], c);
  p.palette = palette_for(p.values);
  if (e.T > 0) {
    const auto [lo, hi] = trained_range(e.T, !e.signed_r, e.causal_half);
    if (lo >= p.x.front()) p.vlines.push_back({lo, lo < 0 ? e.trained_label : ""});
    if (hi > 0 && hi <= p.x.back()) p.vlines.push_back({hi, lo < 0 ? "" : e.trained_label});
  }
  return p;
}

// (L,R,d) tables: one heatmap per layer; (L,H,R,d) per-head tables: one figure per layer, a panel
// per head (Huang et al. 2020's Figure 4 shows "the first layer and first head": panel "head 0" of
// relpos_<variant>_<name>_layer0.png).
void table_figures(const RelativeTensor& e, bool per_head, const std::string& dir,
                   const std::string& heading, const FigureOptions& fo,
                   std::vector<FigureInfo>& out) {
  for (int64_t l = 0; l < e.value.size(0); ++l) {
    const std::string title = fmt::format("{} layer {} — {}", e.what, l, heading);
    const std::string stem = fmt::format("{}_layer{}", e.base, l);
    if (!per_head) {
      const HeatmapPanel p = table_heatmap_panel(e, e.value[l], title);
      const auto f = plot_heatmaps(dir, stem, p.title, {p}, 1, {900, 560, fo.size});
      out.push_back(info(f, fmt::format("Relative-position vectors {} of layer {}: each column is "
                                        "the vector for one distance r.{}",
                                        e.what, l, e.notes)));
      continue;
    }
    std::vector<HeatmapPanel> panels;
    for (int64_t h = 0; h < e.value.size(1); ++h)
      panels.push_back(table_heatmap_panel(e, e.value[l][h], fmt::format("head {}", h)));
    const int64_t np = static_cast<int64_t>(panels.size());
    const auto f = plot_heatmaps(dir, stem, title, panels, grid_columns(np),
                                 grid_size(np, 620, 400, fo.size));
    out.push_back(info(f, fmt::format("Relative-position vectors {} of layer {}, one panel per "
                                      "head (position.{}.per_head: one table per head), each with "
                                      "its own colour scale: each column is the vector for one "
                                      "distance r.{}",
                                      e.what, l, e.variant, e.notes)));
  }
}

// A panel of curves against r, one per row of `m` (head, layer or channel pair).
CurvesPanel curve_panel(const RelativeTensor& e, const torch::Tensor& m, const std::string& title,
                        const std::string& row_name, bool by_pair) {
  CurvesPanel p;
  p.title = title;
  const bool absolute = std::all_of(e.r.begin(), e.r.end(), [](double x) { return x >= 0; });
  p.xlabel = absolute ? "distance |r| = |j − i|" : "relative position r = j − i";
  p.ylabel = e.name == "scale" ? "scale s on q·k" : by_pair ? "factor on q·k" : "score term";
  p.curves = profile_curves(m, e.r, e.idx, row_name);
  // A bias looked up per bucket of distances (T5) is constant within each bucket: steps, not a
  // polyline that would invent slopes between the buckets.
  if (e.tensors->count("buckets"))
    for (auto& c : p.curves) c.style = CurveStyle::steps;
  p.zero_line = e.name != "scale" && !by_pair;  // a factor's neutral value is 1, not 0
  double reach = 0;
  for (int64_t k : e.idx) reach = std::max(reach, std::abs(e.r[k]));
  p.xrange = absolute        ? std::make_pair(0.0, reach)
             : e.causal_half ? std::make_pair(-reach, 0.0)
                             : std::make_pair(-reach, reach);
  if (e.T > 0) {
    p.band = trained_range(e.T, absolute, e.causal_half);
    p.band_label = e.trained_label;
  }
  return p;
}

}  // namespace

std::vector<FigureInfo> relative_weight_figures(const SnapshotData& s, const std::string& dir,
                                                const std::string& label, int64_t radius,
                                                bool causal, const FigureOptions& fo) {
  std::vector<FigureInfo> out;
  for (const auto& [variant, tensors] : s.position) {
    for (const auto& [name, t] : tensors) {
      const bool table = dims_are(t, {"layer", "distance", "channel"});
      // per_head: true (shaw, huang_m4): one table per layer and head.
      const bool head_table = dims_are(t, {"layer", "head", "distance", "channel"});
      const bool by_head = dims_are(t, {"head", "distance"});
      const bool by_layer = dims_are(t, {"layer", "distance"});
      const bool layer_head = dims_are(t, {"layer", "head", "distance"});
      const bool by_pair = dims_are(t, {"pair", "distance"});  // xpos decay per channel pair
      if (!table && !head_table && !by_head && !by_layer && !layer_head && !by_pair) continue;
      RelativeTensor e;
      e.variant = variant;
      e.name = name;
      e.tensors = &tensors;
      e.value = t.value;
      e.T = fo.train_length;
      e.trained_label = fmt::format("trained |r| < {}", e.T);
      const int64_t n = t.value.size(table ? 1 : head_table ? 2 : t.value.dim() - 1);
      e.r = distances_for(tensors, name, n);
      e.signed_r = std::any_of(e.r.begin(), e.r.end(), [](double x) { return x < 0; });
      e.causal_half = causal && e.signed_r;
      e.idx = within(e.r, radius);
      if (e.causal_half)
        e.idx.erase(
            std::remove_if(e.idx.begin(), e.idx.end(), [&](int64_t k) { return e.r[k] > 0; }),
            e.idx.end());
      if (e.idx.empty()) continue;
      std::tie(e.notes, e.clip_title) = relative_notes(e.r, radius, e.causal_half, e.T);
      e.base = fmt::format("relpos_{}_{}", stem_of(variant), stem_of(name));
      e.what = fmt::format("{}/{}", variant, name);
      const std::string heading = fmt::format("{} (step {}){}", label, s.step, e.clip_title);
      if (table || head_table) {
        table_figures(e, head_table, dir, heading, fo, out);
        continue;
      }
      std::vector<CurvesPanel> panels;
      const std::string title = fmt::format("{} — {}", e.what, heading);
      if (layer_head) {
        for (int64_t l = 0; l < t.value.size(0); ++l)
          panels.push_back(curve_panel(e, t.value[l], fmt::format("layer {}", l), "head", by_pair));
      } else {
        panels.push_back(
            curve_panel(e, t.value, title, by_head ? "head" : by_pair ? "pair" : "layer", by_pair));
      }
      const int64_t np = static_cast<int64_t>(panels.size());
      const FigureSize size =
          np == 1 ? FigureSize{900, 560, fo.size} : grid_size(np, 620, 400, fo.size);
      const auto f = plot_curves(dir, e.base, title, panels, grid_columns(np), size);
      out.push_back(info(f, fmt::format("{} against the relative position r, one curve per {}.{}",
                                        e.what, by_layer ? "layer" : by_pair ? "channel pair" : "head",
                                        e.notes)));
    }
  }
  return out;
}

std::vector<FigureInfo> attention_figures(const SnapshotData& s, const std::string& dir,
                                          const std::string& label, bool causal,
                                          const ColourScale& scale, const FigureOptions& fo) {
  std::vector<FigureInfo> out;
  if (!s.attention.defined() || s.attention.dim() != 4) return out;
  const auto a = s.attention.to(torch::kFloat64);  // (L,H,T,T)
  const int64_t L = a.size(0), H = a.size(1), T = a.size(2);
  const auto panel = [&](const torch::Tensor& m, const std::string& title) {
    HeatmapPanel p;
    p.title = title;
    p.xlabel = "key position j";
    p.ylabel = "query position i";
    p.cblabel = "attention probability";
    p.x = arange(T);
    p.y = arange(T);
    p.values = to_matrix(m);
    p.top_down = true;
    p.square = true;
    // A few large probabilities (the first rows of a causal map, a sharp diagonal) would
    // squeeze every other entry into the darkest colour: the scale stops at a quantile of the
    // visible entries (the 99th by default; scale.cap = 1: the largest), and the label says so.
    std::vector<double> visible;
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        if (!causal || j <= i)
          visible.push_back(p.values(i, j));
        else
          p.values(i, j) = std::nan("");  // masked: left blank, not drawn as 0
      }
    std::sort(visible.begin(), visible.end());
    const double q = std::clamp(scale.cap, 0.0, 1.0);
    const double cap = visible[static_cast<size_t>(q * static_cast<double>(visible.size() - 1))];
    if (cap > 0 && cap < visible.back()) {
      p.cbrange = std::make_pair(0.0, cap);
      p.cblabel = fmt::format("attention probability (top colour: ≥ {:.3g})", cap);
    }
    return p;
  };
  for (int64_t l = 0; l < L; ++l) {
    const std::string probes =
        s.probe_count > 0 ? fmt::format(" and {} probes", s.probe_count) : std::string();
    const std::string title = fmt::format("attention layer {}, mean over {} heads{} — {} (step {})",
                                          l, H, probes, label, s.step);
    const auto f = plot_heatmaps(dir, fmt::format("attention_layer{}_mean", l), title,
                                 {panel(a[l].mean(0), title)}, 1, {760, 680, fo.size});
    out.push_back(info(f, fmt::format("Attention of layer {} averaged over the heads and{} "
                                      "(query × key).",
                                      l, probe_words(s))));
    // One colour scale for every head, so that panels that look alike are alike: from 0 to
    // the largest of the heads' 99th-percentile caps (or maxima, where a head has no cap).
    std::vector<HeatmapPanel> heads;
    double top = 0, largest = 0;
    for (int64_t h = 0; h < H; ++h) {
      heads.push_back(panel(a[l][h], fmt::format("head {}", h)));
      double head_max = 0;
      for (double v : heads.back().values.data)
        if (std::isfinite(v)) head_max = std::max(head_max, v);
      largest = std::max(largest, head_max);
      top = std::max(top, heads.back().cbrange ? heads.back().cbrange->second : head_max);
    }
    if (top > 0 && !scale.per_head)
      for (auto& p : heads) p.cbrange = std::make_pair(0.0, top);
    // The one colour bar says where the scale stops (per head: each bar its own, set by panel()).
    if (!scale.per_head)
      for (auto& p : heads)
        p.cblabel = top > 0 && top < largest
                        ? fmt::format("attention probability (top colour: ≥ {:.3g})", top)
                        : std::string("attention probability");
    // Panels of about 300 px (a 128-cell map stays legible), the bar right of the grid.
    const int cols = grid_columns(H), rows = static_cast<int>((H + cols - 1) / cols);
    const FigureSize size{75 + 135 + cols * 300 + (cols - 1) * 50,
                          65 + 82 + rows * 300 + (rows - 1) * 60, fo.size};
    // The scale is in the title: with one scale for all heads, a head whose probabilities
    // stay far below `top` is drawn dark although it attends.
    const std::string scale_words =
        scale.per_head ? "each head on its own colour scale"
                       : fmt::format("all heads on one colour scale, 0 to {:.3g}", top);
    const FigureSize head_size =
        scale.per_head ? FigureSize{size.width + cols * 110, size.height, fo.size} : size;
    const auto g = plot_heatmaps(dir, fmt::format("attention_layer{}_heads", l),
                                 fmt::format("attention per head, layer {} — {} (step {}; {})", l,
                                             label, s.step, scale_words),
                                 heads, cols, head_size, !scale.per_head);
    out.push_back(info(g, fmt::format("Attention of each head of layer {}, averaged{}, {}.", l,
                                      probe_words(s), scale_words)));
  }
  return out;
}

std::vector<FigureInfo> absolute_table_figures(const SnapshotData& s, const SnapshotOptions& o,
                                               const std::string& dir, const std::string& label,
                                               const FigureOptions& fo) {
  std::vector<FigureInfo> out;
  for (const auto& [variant, table] : absolute_tables(s)) {
    const int64_t n = gram_length(s, o, table.size(0));
    HeatmapPanel p;
    p.title =
        fmt::format("{} table p_i, positions 0..{} — {} (step {})", variant, n - 1, label, s.step);
    p.xlabel = "channel";
    p.ylabel = "position i";
    p.cblabel = "value";
    p.x = arange(table.size(1));
    p.y = arange(n);
    p.values = to_matrix(table.narrow(0, 0, n));
    p.palette = palette_for(p.values);
    p.top_down = true;
    const auto f =
        plot_heatmaps(dir, "abs_" + stem_of(variant) + "_table", p.title, {p}, 1,
                      {900, 640, fo.size});
    out.push_back(
        info(f, fmt::format("The absolute position table of {}: one row per position.", variant)));
    HeatmapPanel g;
    g.title = fmt::format("{} P·Pᵀ — {} (step {})", variant, label, s.step);
    g.xlabel = "position j";
    g.ylabel = "position i";
    g.cblabel = "p_i · p_j";
    g.x = arange(n);
    g.y = arange(n);
    g.values = to_matrix(gram(table, n));
    g.palette = palette_for(g.values);
    g.top_down = true;
    g.square = true;
    const auto h =
        plot_heatmaps(dir, "abs_" + stem_of(variant) + "_gram", g.title, {g}, 1,
                      {760, 680, fo.size});
    out.push_back(info(h, fmt::format("Inner products of the {} position vectors (P·Pᵀ); a "
                                      "translation-invariant table is constant along diagonals.",
                                      variant)));
  }
  return out;
}

ReferenceLines gram_baseline_lines(const std::map<std::string, InvarianceBaseline>& baselines) {
  // level (rounded as printed) -> the variants with it
  std::map<std::string, std::vector<std::string>> levels;
  std::map<std::string, double> value;
  for (const auto& [q, b] : baselines) {
    if (q.rfind("gram:", 0) != 0 || !std::isfinite(b.mean)) continue;
    const std::string text = fmt::format("{:.3f}", b.mean);
    levels[text].push_back(q.substr(5));
    value[text] = b.mean;
  }
  ReferenceLines out;
  for (const auto& [text, variants] : levels) {
    std::string who;
    if (levels.size() > 1)
      for (const auto& v : variants) who += (who.empty() ? " (" : ", ") + v;
    out.push_back({value[text], fmt::format("random table I₀ = {}{}", text,
                                            who.empty() ? "" : who + ")")});
  }
  return out;
}

FigureInfo invariance_figure(const std::map<std::string, Series>& invariance,
                             const std::string& metric_name, const Series& metric,
                             const std::string& dir, const std::string& label,
                             const std::string& task, const std::string& tokenizer,
                             const FigureOptions& fo, const ReferenceLines& baselines) {
  const std::string metric_label = metric_axis_label(metric_name, task, tokenizer);
  CurvesPanel p;
  p.title = "translation invariance during training — " + label;
  p.xlabel = "training step";
  p.ylabel = "translation invariance";
  p.y2label = metric_label;
  p.yrange = std::make_pair(0.0, 1.02);
  p.key = "below";  // a legend right of the plot took a third of the width
  for (const auto& [key, series] : invariance)
    p.curves.push_back({quantity_label(key), series.x, series.y, false, CurveStyle::linespoints});
  if (!metric.x.empty())
    p.curves.push_back(
        {metric_label + " (right axis)", metric.x, metric.y, true, CurveStyle::lines});
  bool gram = false;
  for (const auto& [key, series] : invariance) gram = gram || key.rfind("gram:", 0) == 0;
  if (gram) p.hlines = baselines;
  const auto f = plot_curves(dir, "invariance_vs_step", p.title, {p}, 1, {860, 600, fo.size});
  return info(f, fmt::format("Translation invariance of the attention maps, position scores and "
                             "P·Pᵀ at each snapshot, with {} on the right axis.{}",
                             metric_name.empty() ? "no validation metric" : metric_label,
                             gram && !baselines.empty()
                                 ? " Dotted: the P·Pᵀ score of a random table of the same shape "
                                   "(I₀), the level an untrained table already reaches."
                                 : ""));
}

FigureInfo invariance_by_variant_figure(
    const std::vector<std::pair<std::string, std::map<std::string, Series>>>& panels,
    const std::string& dir, std::optional<std::pair<double, double>> steps,
    const FigureOptions& fo, const std::map<std::string, ReferenceLines>& references) {
  std::vector<CurvesPanel> ps;
  std::string names;
  // One colour per variant across the panels (some panels lack some variants), and across the
  // report's figures when it gives its palette.
  std::vector<std::string> variants;
  for (const auto& [title, by_variant] : panels)
    for (const auto& [variant, series] : by_variant) variants.push_back(variant);
  const VariantPalette palette = fo.palette.empty() ? VariantPalette(variants) : fo.palette;
  bool referenced = false;
  for (const auto& [title, by_variant] : panels) {
    CurvesPanel p;
    p.title = title;
    p.xlabel = "training step";
    const bool invariance = title.rfind("invariance", 0) == 0;
    p.ylabel = invariance ? "translation invariance" : title;
    p.key = "below";
    if (invariance) p.yrange = std::make_pair(0.0, 1.02);
    if (steps && steps->second > steps->first) p.xrange = steps;
    for (const auto& [variant, series] : by_variant)
      p.curves.push_back({variant, series.x, series.y, false, CurveStyle::linespoints,
                          palette.line(variant), series.points});
    if (const auto it = references.find(title); it != references.end() && !it->second.empty())
      p.hlines = it->second, referenced = true;
    ps.push_back(std::move(p));
    names += (names.empty() ? "" : "; ") + title;
  }
  const int64_t columns = ps.size() > 1 ? 2 : 1;
  const int64_t rows = (static_cast<int64_t>(ps.size()) + columns - 1) / columns;
  const auto f = plot_curves(dir, "invariance_by_variant",
                             "translation invariance during training, by variant", ps, columns,
                             {static_cast<int>(columns * 560), static_cast<int>(rows * 440 + 60),
                              fo.size});
  return info(f, fmt::format("Per variant, the mean over its runs at each snapshot (line) and "
                             "each run (dots): {}.{}",
                             names,
                             referenced ? " Dotted: the P·Pᵀ score of a random table of the same "
                                          "shape (I₀), the level an untrained table already "
                                          "reaches."
                                        : ""));
}

std::string metric_axis_label(const std::string& metric, const std::string& task,
                              const std::string& tokenizer) {
  std::string base = metric, prefix;
  for (const char* p : {"valid_", "test_"})
    if (base.rfind(p, 0) == 0) prefix = p, base = base.substr(std::string(p).size());
  // The task's own words for what is counted (the task registry); else the evaluation's column
  // names (docs/experiments/extrapolation.md) with the protocol spelled out.
  const TaskInfo* t = task.empty() ? nullptr : TaskRegistry::get().find(task);
  const MetricInfo* m = t ? t->metric(base) : nullptr;
  if (!m) m = common_metric(base);
  if (!m) return metric;
  const std::string split = prefix == "valid_" ? "validation " : prefix == "test_" ? "test " : "";
  // A language model's loss counts per byte or per token: the tables' unit (units.h).
  if ((base == "loss" || base == "loss_sliding") && !tokenizer.empty() && is_lm_task(task))
    return split + with_unit(m->quantity, metric_unit(base, task, tokenizer));
  return split + m->axis_label();
}

FigureInfo extrapolation_figure(const std::vector<ExtrapolationLine>& lines,
                                const std::string& metric, double train_length,
                                const std::string& dir, const std::string& stem,
                                const ExtrapolationLabels& labels, const FigureOptions& fo) {
  CurvesPanel p;
  const std::string what = metric_axis_label(metric, labels.task, labels.tokenizer);
  p.title = labels.title.empty() ? "length extrapolation: " + what : labels.title;
  p.xlabel = labels.xlabel.empty() ? "evaluation length (tokens)" : labels.xlabel;
  p.ylabel = labels.ylabel.empty()
                 ? what + (labels.split.empty() ? "" : " on the " + labels.split + " split")
                 : labels.ylabel;
  double lo = INFINITY, hi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const auto& l : lines) {
    // A variant evaluated at one length only (learned, not applicable past its table) is a
    // lone point: the legend says where, and plot_curves draws it large, on top.
    std::vector<double> at;
    for (size_t k = 0; k < l.value.size() && k < l.length.size(); ++k)
      if (std::isfinite(l.value[k])) at.push_back(l.length[k]);
    std::string name = l.label;
    if (at.size() == 1 && l.value.size() > 1) name += fmt::format(" (only at {:g})", at.front());
    p.curves.push_back({name, l.length, l.value, false, CurveStyle::linespoints,
                        fo.palette.empty() ? -1 : fo.palette.line(l.label), l.points});
    for (double x : l.length) lo = std::min(lo, x), hi = std::max(hi, x);
    for (double y : l.value)
      if (std::isfinite(y)) ylo = std::min(ylo, y), yhi = std::max(yhi, y);
  }
  // Accuracies live in [0, 1] (autoscaling with offsets drew axes from -0.2 to 1.2): the data's
  // range with a margin, kept inside [0, 1]; the whole [0, 1] only when the data fill most of
  // it, since values within 0.2..0.5 would otherwise be squeezed into a third of the plot.
  if (metric.find("accuracy") != std::string::npos && std::isfinite(ylo)) {
    const double pad = std::max(0.02, 0.08 * (yhi - ylo));
    p.yrange = yhi - ylo >= 0.6 ? std::make_pair(0.0, 1.02)
                                : std::make_pair(std::max(0.0, ylo - pad), std::min(1.02, yhi + pad));
  } else if (std::isfinite(ylo) && ylo >= 0 && yhi > 0) {
    // Losses, perplexities, F1: from 0, so that a gap looks as large as it is; when the values
    // all lie in the top half of that range, the data's own range, and the axis label says
    // that it does not start at 0 (an axis from 9.1 made small gaps look large).
    if (ylo <= 0.5 * yhi) {
      p.yrange = std::make_pair(0.0, 1.05 * yhi);
    } else {
      const double pad = std::max(0.05 * (yhi - ylo), 1e-3 * yhi);
      p.yrange = std::make_pair(ylo - pad, yhi + pad);
      p.ylabel += fmt::format(" (axis from {:.4g}, not 0)", p.yrange->first);
    }
  }
  p.logx = std::isfinite(lo) && lo > 0 && hi / lo >= 4;
  if (train_length > 0)
    p.vlines.push_back({train_length, fmt::format("{} {}",
                                                  labels.train_length.empty()
                                                      ? "training length"
                                                      : labels.train_length,
                                                  train_length)});
  if (std::isfinite(lo)) {
    const double pad = p.logx ? 1.15 : 0.0;
    p.xrange = p.logx ? std::make_pair(lo / pad, hi * pad)
                      : std::make_pair(lo - 0.05 * (hi - lo + 1), hi + 0.05 * (hi - lo + 1));
  }
  const auto f = plot_curves(dir, stem, p.title, {p}, 1, {900, 600, fo.size});
  bool dots = false;
  for (const auto& l : lines) dots = dots || l.points.size() > l.length.size();
  return info(f, fmt::format("{} at each evaluation length, one line per variant (mean over "
                             "seeds{}); the dashed line marks the {}. Gaps: not "
                             "applicable at that length.",
                             what, dots ? "; small dots: every run" : "",
                             labels.train_length.empty() ? "training length"
                                                         : labels.train_length));
}

FigureInfo scatter_figure(const std::map<std::string, Series>& by_variant,
                          const std::string& xlabel, const std::string& ylabel,
                          const std::string& title, const std::string& dir,
                          const std::string& stem, const FigureOptions& fo,
                          const ReferenceLines& xlines) {
  CurvesPanel p;
  p.title = title;
  p.xlabel = xlabel;
  p.ylabel = ylabel;
  // Each variant its own (colour, marker) pair: the report's, else the place in the legend.
  for (const auto& [variant, s] : by_variant)
    p.curves.push_back({variant, s.x, s.y, false, CurveStyle::points,
                        fo.palette.empty() ? -1 : fo.palette.line(variant)});
  p.vlines = xlines;
  // The x axis reaches the reference levels (the random table's 0), with a margin.
  if (!xlines.empty()) {
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& [variant, s] : by_variant)
      for (double x : s.x)
        if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    for (const auto& [x, label] : xlines) lo = std::min(lo, x), hi = std::max(hi, x);
    const double pad = hi > lo ? 0.08 * (hi - lo) : 0.5;
    if (std::isfinite(lo)) p.xrange = std::make_pair(lo - pad, hi + pad);
  }
  const auto f = plot_curves(dir, stem, title, {p}, 1, {860, 600, fo.size});
  return info(f, title + ": one point per run." +
                     (xlines.empty() ? std::string()
                                     : " Dashed: the score of a random table of the same shape."));
}

void write_figure_index(const std::string& dir, const std::vector<FigureInfo>& figures) {
  std::filesystem::create_directories(dir);
  const auto path = std::filesystem::path(dir) / "index.tsv";
  std::ofstream f(path);
  for (const auto& fig : figures) {
    std::string caption = fig.caption;
    std::replace(caption.begin(), caption.end(), '\t', ' ');
    std::replace(caption.begin(), caption.end(), '\n', ' ');
    f << std::filesystem::path(fig.png).filename().string() << '\t' << caption << '\n';
  }
  if (!f) throw Error("cannot write " + path.string());
}

std::vector<FigureInfo> read_figure_index(const std::string& dir) {
  std::vector<FigureInfo> out;
  std::ifstream f(std::filesystem::path(dir) / "index.tsv");
  std::string line;
  while (std::getline(f, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    out.push_back(
        {(std::filesystem::path(dir) / line.substr(0, tab)).string(), line.substr(tab + 1)});
  }
  return out;
}

}  // namespace relpos::analysis
