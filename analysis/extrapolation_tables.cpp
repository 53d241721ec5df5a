#include "analysis/extrapolation_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <set>

#include "analysis/figures.h"
#include "analysis/inference.h"
#include "analysis/distributions.h"
#include "analysis/stats.h"
#include "analysis/tables.h"
#include "analysis/units.h"

namespace relpos::analysis {
namespace fs = std::filesystem;
namespace {

// One evaluation table of one run, under the row label it is pooled in.
struct Evaluated {
  std::string group;
  const EvalTable* table;
  const RunInfo* info;
};

const std::vector<double>* column(const EvalTable& t, const std::string& name) {
  for (const auto* cols : {&t.columns, &t.counts})
    for (const auto& [n, v] : *cols)
      if (n == name) return &v;
  return nullptr;
}

double at_length(const EvalTable& t, const std::string& name, double length) {
  const auto* v = column(t, name);
  if (!v) return kNaN;
  for (size_t k = 0; k < t.length.size() && k < v->size(); ++k)
    if (t.length[k] == length) return (*v)[k];
  return kNaN;
}

// An LM loss again in bits: loss -> bits_per_byte, loss_sliding -> bits_per_byte_sliding.
EvalTable with_bits(const EvalTable& t, const RunInfo& info) {
  EvalTable out = t;
  if (!is_lm_task(info.task)) return out;
  for (const auto& [name, v] : t.columns) {
    if (name != "loss" && name != "loss_sliding") continue;
    std::vector<double> bits;
    for (double x : v) bits.push_back(nats_to_bits(x));
    out.columns.push_back({bits_name(info.tokenizer) + (name == "loss" ? "" : "_sliding"), bits});
  }
  return out;
}

// The count column that goes with a metric: scored targets of its protocol, or examples.
std::string count_for(const std::string& metric, const EvalTable& t) {
  const bool sliding = metric.find("sliding") != std::string::npos;
  for (const std::string& c : {std::string(sliding ? "tokens_sliding" : "tokens"), std::string("examples")})
    if (column(t, c)) return c;
  return "";
}

// "64: 2458; 128: 2401–2470" over the runs of every row.
std::string counts_text(const std::vector<Evaluated>& evals, const std::string& count,
                        const std::vector<double>& lengths) {
  std::string out;
  for (double l : lengths) {
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& e : evals) {
      const double n = at_length(*e.table, count, l);
      if (std::isfinite(n)) lo = std::min(lo, n), hi = std::max(hi, n);
    }
    if (!std::isfinite(lo)) continue;
    out += fmt::format("{}{:g}: {}", out.empty() ? "" : "; ", l,
                       lo == hi ? fmt::format("{:.0f}", lo) : fmt::format("{:.0f}–{:.0f}", lo, hi));
  }
  return out;
}

}  // namespace

std::string sampling_error_note(const std::string& metric, const std::string& task,
                                const std::string& tokenizer, double value, double count,
                                double sd, double length, const std::string& what) {
  if (!std::isfinite(value) || !(count > 0)) return "";
  const std::string base = metric.substr(0, metric.find("_sliding"));
  const double z = normal_quantile(0.975);
  const std::string unit = metric_unit(metric, task, tokenizer);
  std::string interval, method;
  if (base == "accuracy" || base == "seq_accuracy" || (base == "em" && metric_in_percent(base, task))) {
    const double scale = base == "em" ? 100.0 : 1.0;  // span-QA EM is in %
    const ProportionCI ci = wilson_ci(std::round(value / scale * count), count);
    interval = fmt::format("±{:.3g}", 0.5 * (ci.hi - ci.lo) * scale);
    method = "Wilson interval of a proportion";
  } else if (std::isfinite(sd) && (base == "loss" || base == "ppl" || base.rfind("bits_per", 0) == 0)) {
    const double half = z * sd / std::sqrt(count);  // nats
    interval = base == "ppl"    ? fmt::format("×/÷ {:.4g} (±{:.2g}%)", std::exp(half),
                                              100.0 * (std::exp(half) - 1.0))
               : base == "loss" ? fmt::format("±{:.3g}", half)
                                : fmt::format("±{:.3g}", nats_to_bits(half));
    method = "normal interval of a mean over the per-token losses";
  } else {
    return "";
  }
  return fmt::format(
      "Sampling error of the evaluation set: one run's {} at length {:g} ({:.4g}{}, {:.0f} scored "
      "{}) has a 95% {} of {} — a {} for independent items; neighbouring tokens are not "
      "independent, so the true interval is wider. Differences between rows smaller than this "
      "are within the evaluation's noise.",
      metric, length, value,
      // a fraction needs no unit in words; a loss, a perplexity or a percentage does
      unit.empty() || unit == "0–1" ? "" : unit == "%" ? "%" : " " + unit, count, what,
      "interval", interval, method);
}

namespace {

// What the evaluated runs share: columns, groups, lengths, the training length most of them have,
// the first run's task, split, tokenizer and evaluation settings, and per group the lengths that
// were not applicable or clamped.
struct EvalSurvey {
  std::vector<std::string> columns, groups;
  std::vector<double> lengths;
  int64_t train_length = 0;
  double error_length = 0;  // where one run's sampling error is stated
  std::string note, task, split, tokenizer;
  std::map<std::string, std::set<std::string>> not_applicable;  // group -> reasons
  std::map<std::string, std::set<std::string>> clamped;         // group -> notes
};

EvalSurvey survey_evaluations(const std::vector<Evaluated>& evals) {
  EvalSurvey sv;
  std::set<double> length_set;
  std::map<int64_t, int> train_lengths;
  for (const auto& ev : evals) {
    const EvalTable& e = *ev.table;
    if (std::find(sv.groups.begin(), sv.groups.end(), ev.group) == sv.groups.end())
      sv.groups.push_back(ev.group);
    for (const auto& [name, v] : e.columns)
      if (std::find(sv.columns.begin(), sv.columns.end(), name) == sv.columns.end())
        sv.columns.push_back(name);
    length_set.insert(e.length.begin(), e.length.end());
    if (sv.task.empty()) {
      const auto t = e.attrs.find("task");
      sv.task = t != e.attrs.end() ? t->second : ev.info->task;
      sv.tokenizer = ev.info->tokenizer;
      if (const auto sp = e.attrs.find("split"); sp != e.attrs.end()) sv.split = sp->second;
    }
    if (ev.info->train_length > 0) ++train_lengths[ev.info->train_length];
    if (sv.note.empty())
      for (const auto& [k, v] : e.attrs)
        // stride 0 means the sliding window was off (always so for MLM): nothing to report.
        if (k != "not_applicable" && k != "clamped" && !(k == "stride" && v == "0"))
          sv.note += fmt::format("{}{}: {}", sv.note.empty() ? "" : "; ", k, v);
    if (auto it = e.attrs.find("not_applicable"); it != e.attrs.end() && !it->second.empty())
      sv.not_applicable[ev.group].insert(it->second);
    if (auto it = e.attrs.find("clamped"); it != e.attrs.end() && !it->second.empty())
      sv.clamped[ev.group].insert(it->second);
  }
  if (sv.columns.empty()) return sv;
  sv.lengths.assign(length_set.begin(), length_set.end());
  int best = 0;
  for (const auto& [l, n] : train_lengths)
    if (n > best) sv.train_length = l, best = n;
  // The length at which the sampling error is stated: the training length when evaluated.
  sv.error_length = length_set.count(static_cast<double>(sv.train_length))
                        ? static_cast<double>(sv.train_length)
                        : sv.lengths.front();
  return sv;
}

// One column's table (mean over runs at each length) and its figure.
void extrapolation_column(const std::string& col, const std::vector<Evaluated>& evals,
                          const EvalSurvey& sv, const fs::path& tables, const fs::path& figures,
                          bool draw, std::vector<FigureInfo>& figs, const FigureOptions& fo) {
  const std::vector<std::string>& groups = sv.groups;
  const std::vector<double>& lengths = sv.lengths;
  const int64_t train_length = sv.train_length;
  const double error_length = sv.error_length;
  const std::string &note = sv.note, &task = sv.task, &split = sv.split, &tokenizer = sv.tokenizer;
  const auto& not_applicable = sv.not_applicable;
  const auto& clamped = sv.clamped;
    const std::string unit = metric_unit(col, task, tokenizer);
    Table t;
    t.title = with_unit("Length extrapolation: " + col, unit) + ", mean over runs";
    t.split = split.empty() ? "" : split + " split";
    t.pooled = true;
    t.columns = {{"variant", 0}, {"runs", 0, false}};
    for (double l : lengths)
      t.columns.push_back({fmt::format("{}{}", l, l == train_length ? " (train)" : ""), 3});
    std::vector<ExtrapolationLine> lines;
    for (const auto& g : groups) {
      std::vector<Cell> row{Cell::label(g)};
      double n_runs = 0;
      for (const auto& ev : evals) n_runs += ev.group == g;
      row.push_back(Cell::value(n_runs));
      ExtrapolationLine line{g, lengths, {}, {}};
      for (double l : lengths) {
        Cell cell;
        for (const auto& ev : evals)
          if (ev.group == g) {
            const double v = at_length(*ev.table, col, l);
            cell.samples.push_back(v);
            if (std::isfinite(v)) line.points.push_back({l, v});
          }
        const std::vector<double>& s = cell.samples;
        line.value.push_back(std::any_of(s.begin(), s.end(), [](double v) { return !std::isnan(v); })
                                 ? mean_ci(s).mean
                                 : kNaN);
        row.push_back(std::move(cell));
      }
      if (std::any_of(line.value.begin(), line.value.end(),
                      [](double v) { return !std::isnan(v); }))
        lines.push_back(std::move(line));
      t.rows.push_back(std::move(row));
    }
    t.note = "Columns: evaluation length in tokens. —: not evaluated or not applicable at that "
             "length." +
             (note.empty() ? std::string() : " Evaluation: " + note + ".");
    for (const auto& [g, reasons] : not_applicable)
      for (const auto& why : reasons) t.note += fmt::format(" Not applicable for {}, at {}.", g, why);
    for (const auto& [g, notes] : clamped)
      for (const auto& how : notes) t.note += fmt::format(" Clamped for {}, at {}.", g, how);
    // What the evaluation scored, and the noise that alone makes in one run's number.
    if (!evals.empty()) {
      const std::string count = count_for(col, *evals.front().table);
      const std::string what = count == "examples" ? "examples" : "tokens";
      if (!count.empty()) {
        t.note += fmt::format(" Scored {} per length: {}.", what, counts_text(evals, count, lengths));
        for (const auto& ev : evals) {
          const double v = at_length(*ev.table, col, error_length);
          if (!std::isfinite(v)) continue;
          const std::string sd_col = (col.find("sliding") != std::string::npos ? "loss_sliding_sd"
                                                                                : "loss_sd");
          const std::string e = sampling_error_note(
              col, task, tokenizer, v, at_length(*ev.table, count, error_length),
              at_length(*ev.table, sd_col, error_length), error_length, what);
          if (!e.empty()) t.note += fmt::format(" {} (Run: {}.)", e, ev.info->name);
          break;
        }
      }
    }
    const std::string stem = "extrapolation_" + col;
    write_table(t, tables.string(), stem);
    if (draw && !lines.empty())
      figs.push_back(extrapolation_figure(lines, col, static_cast<double>(train_length),
                                          figures.string(), stem,
                                          {"", "", "", "", task, split, tokenizer}, fo));
}

}  // namespace

void extrapolation_outputs(const std::vector<RunResult>& runs, const fs::path& tables,
                           const fs::path& figures, bool draw, std::vector<FigureInfo>& figs,
                           const FigureOptions& fo) {
  std::deque<EvalTable> owned;  // tables with their bits columns added
  std::vector<Evaluated> evals;
  for (const auto& r : runs) {
    if (!r.info.extrapolation.empty()) {
      owned.push_back(with_bits(r.info.extrapolation, r.info));
      evals.push_back({r.info.group, &owned.back(), &r.info});
    }
    for (const auto& [suffix, t] : r.info.extra_evaluations) {
      owned.push_back(with_bits(t, r.info));
      evals.push_back({r.info.group + " (" + suffix + ")", &owned.back(), &r.info});
    }
  }
  const EvalSurvey sv = survey_evaluations(evals);
  for (const auto& col : sv.columns)
    extrapolation_column(col, evals, sv, tables, figures, draw, figs, fo);
}

}  // namespace relpos::analysis
