// synthetic: length generalization on copy, reverse, sort, shift, associative recall and
// marker distance: train on lengths <= N, test up to 8N, sequence accuracy per length. Each task
// is a stage; the claims (configs/experiments/synthetic/mini.yaml, `stage: "*"`: one per task)
// compare the mean sequence accuracy past N ("beyond").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "analysis/figures.h"
#include "analysis/stats.h"
#include "core/task/task_registry.h"
#include "experiments/report_util.h"
#include "experiments/stage_records.h"

namespace relpos {
namespace fs = std::filesystem;

namespace {

// The tasks, in table order; each is a stage (a sub-folder of the experiment).
std::vector<std::string> synthetic_tasks() {
  return {"copy", "reverse", "sort", "shift", "recall", "marker_distance"};
}

constexpr const char* kSeqAcc = "valid_seq_accuracy@";

// (length, value) of every valid_seq_accuracy@L of a record.
std::vector<std::pair<int64_t, double>> per_length(const analysis::RunRecord& r) {
  std::vector<std::pair<int64_t, double>> out;
  for (const auto& [k, v] : r.values)
    if (k.rfind(kSeqAcc, 0) == 0) out.push_back({std::stoll(k.substr(std::string(kSeqAcc).size())), v});
  std::sort(out.begin(), out.end());
  return out;
}

// "beyond": the mean sequence accuracy over the test lengths past N, with its evaluation
// variance (the lengths' example sets are independent).
void add_beyond(std::vector<analysis::RunRecord>& records, int64_t N) {
  for (auto& r : records) {
    std::vector<double> v;
    double var = 0;
    bool var_known = true;
    for (const auto& [len, acc] : per_length(r)) {
      if (len <= N) continue;
      v.push_back(acc);
      const auto it = r.values.find("var:" + std::string(kSeqAcc) + std::to_string(len));
      var_known = var_known && it != r.values.end();
      if (it != r.values.end()) var += it->second;
    }
    if (v.empty()) continue;
    r.values["beyond"] = analysis::mean(v);
    if (var_known) r.values["var:beyond"] = var / static_cast<double>(v.size() * v.size());
  }
}

// Accuracy against length, one line per variant (the mean over seeds) with every run as a dot.
void length_figure(const ExperimentContext& ctx, const std::string& task,
                   const std::vector<analysis::RunRecord>& records) {
  std::map<std::string, std::map<int64_t, std::vector<double>>> by_variant;
  std::vector<std::string> variants;
  size_t most_runs = 0;
  for (const auto& r : records) {
    if (!by_variant.count(r.group)) variants.push_back(r.group);
    for (const auto& [len, v] : per_length(r)) {
      by_variant[r.group][len].push_back(v);
      most_runs = std::max(most_runs, by_variant[r.group][len].size());
    }
  }
  std::vector<analysis::ExtrapolationLine> lines;
  for (const auto& v : variants) {
    analysis::ExtrapolationLine line{v, {}, {}, {}};
    for (const auto& [len, vals] : by_variant[v]) {
      line.length.push_back(static_cast<double>(len));
      line.value.push_back(analysis::mean(vals));
      for (double x : vals) line.points.push_back({static_cast<double>(len), x});
    }
    lines.push_back(line);
  }
  const TaskConfig& t = ctx.config().task;
  const fs::path figs = fs::path(ctx.dir()) / task / "figures";
  fs::create_directories(figs);
  if (lines.empty() || !ctx.options().figures) return;
  analysis::extrapolation_figure(
      lines,
      most_runs > 1 ? fmt::format("sequence accuracy (line: mean of up to {} runs; dots: each run)", most_runs)
                    : std::string("sequence accuracy"),
      static_cast<double>(t.max_len), figs.string(), "length_generalization",
      {fmt::format("{}: length generalization (trained on lengths {}..{})", task, t.min_len, t.max_len),
       "task length n (" + TaskRegistry::get().at(task).length_unit + ")", "longest training length",
       "", task, ""},
      {analysis::figure_preset(ctx.config().figures.size), analysis::VariantPalette(variants)});
}

// What a task's stage trains with when it has its own overlay, and how it is scored.
std::string stage_note(const ExperimentContext& ctx, const std::string& task,
                       const std::string& stage_config) {
  std::vector<std::string> sets = ctx.sets_for(task);
  sets.push_back("task.type=" + task);
  const Config sc = load_config({stage_config}, sets).config;
  std::string note;
  if (stage_config != ctx.config_file())
    note += fmt::format(" {} is trained with {} ({} steps at lr {:g}).", task,
                        fs::path(stage_config).filename().string(), sc.train.steps, sc.train.lr);
  if (const TaskInfo& info = TaskRegistry::get().at(task); info.scoring_note)
    if (const std::string s = info.scoring_note(sc); !s.empty()) note += " " + s;
  return note;
}

// The table's columns of one task: N, 2N (where failures usually start) and the longest length,
// each seed's value (outcomes split between seeds that solve a task and seeds that do not).
std::vector<analysis::ColumnSpec> task_columns(const std::string& task, const TaskConfig& t) {
  const bool has_2n = 2 * t.max_len < t.test_max_len &&
                      (t.eval_lengths.empty() ||
                       std::count(t.eval_lengths.begin(), t.eval_lengths.end(), 2 * t.max_len) > 0);
  const std::string longest = t.test_max_len % t.max_len == 0
                                  ? std::to_string(t.test_max_len / t.max_len) + "N"
                                  : std::to_string(t.test_max_len);
  const auto col = [&](int64_t len, const std::string& name) {
    return analysis::ColumnSpec{task + ":" + kSeqAcc + std::to_string(len),
                                task + " " + name + " (0–1, per seed)", 2, true, true};
  };
  std::vector<analysis::ColumnSpec> cols{col(t.max_len, "N")};
  if (has_2n) cols.push_back(col(2 * t.max_len, "2N"));
  cols.push_back(col(t.test_max_len, longest));
  return cols;
}

std::string run_synthetic(ExperimentContext& ctx) {
  const TaskConfig& t = ctx.config().task;
  std::vector<std::string> tasks, left_out;
  for (const auto& task : synthetic_tasks()) (ctx.runs_stage(task) ? tasks : left_out).push_back(task);
  std::vector<analysis::RunRecord> all, table_rows;
  std::vector<analysis::ColumnSpec> cols;
  ReportSection per_task{"Per task", "", {}, {}, {}};
  std::string notes;
  for (const auto& task : tasks) {
    const std::string stage_config = ctx.part_config_or_main(task);
    notes += stage_note(ctx, task, stage_config);
    // The task's own evaluation lengths (task.eval_lengths) are scored during training as
    // valid seq_accuracy@L; token-length evaluation does not apply.
    ctx.sweep(task, {stage_config}, ctx.config().sweep.grid, {"task.type=" + task});
    const std::string dir = (fs::path(ctx.dir()) / task).string();
    const auto result = ctx.analyze(dir);
    ctx.report(dir, result);
    per_task.text += fmt::format("- [{0}]({0}/report.md)\n", task);
    auto records = stage_records(result, task);
    add_beyond(records, t.max_len);
    length_figure(ctx, task, records);
    if (table_rows.empty()) table_rows = records;
    std::vector<std::string> keys;
    for (const auto& r : records)
      for (const auto& [len, v] : per_length(r)) keys.push_back(kSeqAcc + std::to_string(len));
    merge_by_run(table_rows, records, task + ":", keys);
    for (const auto& c : task_columns(task, t)) cols.push_back(c);
    all.insert(all.end(), records.begin(), records.end());
  }
  ctx.judge_claims(all);
  analysis::Table accuracy = analysis::group_table(table_rows, cols);
  accuracy.title = "Sequence accuracy per seed";
  accuracy.split = "validation split (the examples of each test length)";
  ReportSection main{
      "Sequence accuracy at the longest training length N and beyond",
      fmt::format("Trained on lengths {}..{} (N = {}), tested up to {} (validation examples of "
                  "each length). A sequence counts as right when every output token is. '—' marks "
                  "lengths a variant cannot reach; a learned table with beyond: clamp (the mini "
                  "config) reuses its last row past its length.{}",
                  t.min_len, t.max_len, t.max_len, t.test_max_len, notes),
      {accuracy},
      {"synthetic_accuracy"},
      {}};
  for (const auto& task : tasks)
    main.figures.push_back({(fs::path(ctx.dir()) / task / "figures" / "length_generalization.png").string(),
                            task + ": sequence accuracy against length"});
  return write_experiment_report(
      ctx, "Synthetic tasks: length generalization",
      "Each task is trained at short lengths and tested at longer ones, for every variant (data "
      "generated by relpos, see docs/data.md)." +
          (left_out.empty() ? std::string()
                            : fmt::format(" Tasks run: {} (the config's sweep.stages); not run: {} "
                                          "(add them to sweep.stages, e.g. --set "
                                          "'sweep.stages=[{}]').",
                                          fmt::join(tasks, ", "), fmt::join(left_out, ", "),
                                          fmt::join(synthetic_tasks(), ","))),
      {main, per_task});
}

}  // namespace

ExperimentInfo synthetic_experiment() {
  return {"synthetic", "length generalization on six synthetic tasks", run_synthetic,
          synthetic_tasks(), /*stages_selectable=*/true};
}

}  // namespace relpos
