// synthetic: length generalization on copy, reverse, sort, shift, associative recall and
// marker distance: train on lengths <= N, test up to 8N, sequence accuracy per length.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "analysis/figures.h"
#include "analysis/stats.h"
#include "core/task/registry.h"
#include "experiments/regime_claim.h"
#include "experiments/report_util.h"

namespace relpos {
namespace fs = std::filesystem;

namespace {

// The tasks, in table order; each is a stage (a sub-folder of the experiment).
std::vector<std::string> synthetic_tasks() {
  return {"copy", "reverse", "sort", "shift", "recall", "marker_distance"};
}

// The tasks the config's sweep.stages chooses (every task when it is empty), in table order.
std::vector<std::string> chosen_tasks(const Config& cfg) {
  std::vector<std::string> out;
  for (const auto& task : synthetic_tasks())
    if (stage_chosen(cfg, task)) out.push_back(task);
  return out;
}

// Per task: the regime check, and Kazemnejad et al.'s finding that no position encoding at all
// generalizes to longer inputs best, on the mean sequence accuracy past the training lengths.
std::vector<analysis::Claim> synthetic_claims(const Config& cfg) {
  std::vector<analysis::Claim> out;
  for (const auto& task : chosen_tasks(cfg)) {
    out.push_back(regime_claim("synthetic-" + task, task + ":valid_seq_accuracy",
                               task + ": validation sequence accuracy over every test length (0–1)"));
    analysis::Claim nope{
        "synthetic-" + task + "-nope",
        "NoPE outperforms other explicit positional encoding methods",
        "Kazemnejad et al. 2023, abstract (length generalization of decoder-only models)",
        fmt::format("{}: sequence accuracy (0–1) averaged over the test lengths beyond the "
                    "longest training length N = {}",
                    task, cfg.task.max_len),
        {}};
    for (const char* other : {"learned", "sinusoidal", "t5_bias", "alibi", "rope"}) {
      analysis::Comparison c;
      c.a = {"none", task + ":beyond"};
      c.b = {other, task + ":beyond"};
      c.optional = true;
      nope.comparisons.push_back(c);
    }
    out.push_back(nope);
  }
  return out;
}

}  // namespace

ExperimentInfo synthetic_experiment() {
  return {"synthetic", "length generalization on six synthetic tasks", [](ExperimentContext& ctx) {
            const std::vector<std::string> tasks = chosen_tasks(ctx.config());
            std::vector<std::string> left_out;  // tasks that sweep.stages does not choose
            for (const auto& task : synthetic_tasks())
              if (!ctx.runs_stage(task)) left_out.push_back(task);
            const TaskConfig& t = ctx.config().task;
            // Empty eval_lengths means doubling from N, which includes 2N.
            const bool has_2n = 2 * t.max_len < t.test_max_len &&
                                (t.eval_lengths.empty() ||
                                 std::count(t.eval_lengths.begin(), t.eval_lengths.end(),
                                            2 * t.max_len) > 0);
            // "8N" when the longest test length is a multiple of N, else the length itself.
            const std::string longest = t.test_max_len % t.max_len == 0
                                            ? std::to_string(t.test_max_len / t.max_len) + "N"
                                            : std::to_string(t.test_max_len);
            std::map<std::string, analysis::RunRecord> merged;  // by run name
            std::vector<std::string> order;
            std::vector<analysis::ColumnSpec> cols;
            ReportSection per_task{"Per task", "", {}, {}, {}};
            std::string stage_notes;  // tasks trained with their own overlay, and recall's queries
            for (const auto& task : tasks) {
              const std::string stage_config = ctx.part_config_or_main(task);
              std::vector<std::string> sets = ctx.sets_for(task);
              sets.push_back("task.type=" + task);
              const Config sc = load_config({stage_config}, sets).config;
              if (stage_config != ctx.config_file())
                stage_notes += fmt::format(" {} is trained with {} ({} steps at lr {:g}).", task,
                                           fs::path(stage_config).filename().string(),
                                           sc.train.steps, sc.train.lr);
              if (const TaskInfo& info = TaskRegistry::get().at(task); info.scoring_note)
                if (const std::string note = info.scoring_note(sc); !note.empty())
                  stage_notes += " " + note;
              // The task's own evaluation lengths (task.eval_lengths, problem sizes) are scored
              // during training as valid seq_accuracy@L; token-length evaluation does not apply.
              // A task may have its own overlay (<scale>-<task>.yaml, e.g. mini-recall.yaml).
              auto runs = ctx.sweep(task, {stage_config},
                                    ctx.config().sweep.grid, {"task.type=" + task});
              ctx.analyze_and_report((fs::path(ctx.dir()) / task).string());
              per_task.text += fmt::format("- [{0}]({0}/report.md)\n", task);
              for (const auto& s : summaries(runs)) {
                const std::string name = fs::path(s.dir).filename().string();
                auto& rec = merged[name];
                if (rec.group.empty()) {
                  rec.group = s.position_types;
                  rec.seed = s.seed;
                  order.push_back(name);
                }
                std::vector<double> beyond;  // sequence accuracy past the training lengths
                for (const auto& [key, v] : s.valid)
                  if (key.rfind("seq_accuracy@", 0) == 0) {
                    const int64_t len = std::stoll(key.substr(key.find('@') + 1));
                    rec.values[task + "@" + std::to_string(len)] = v;
                    if (len > t.max_len) beyond.push_back(v);
                  }
                if (!beyond.empty())
                  rec.values[task + ":beyond"] = analysis::mean(beyond);
                if (s.valid.count("seq_accuracy"))
                  rec.values[task + ":valid_seq_accuracy"] = s.valid.at("seq_accuracy");
              }
              // Accuracy against length, one line per variant (runs of a variant averaged).
              std::map<std::string, std::map<int64_t, std::vector<double>>> by_variant;
              std::vector<std::string> variants;
              for (const auto& s : summaries(runs)) {
                if (!by_variant.count(s.position_types)) variants.push_back(s.position_types);
                auto& m = by_variant[s.position_types];
                for (const auto& [key, v] : s.valid)
                  if (key.rfind("seq_accuracy@", 0) == 0)
                    m[std::stoll(key.substr(key.find('@') + 1))].push_back(v);
              }
              std::vector<analysis::ExtrapolationLine> lines;
              size_t most_runs = 0;  // for the axis label: means over seeds say so
              for (const auto& v : variants)
                for (const auto& [len, vals] : by_variant[v]) most_runs = std::max(most_runs, vals.size());
              for (const auto& v : variants) {
                analysis::ExtrapolationLine line{v, {}, {}, {}};
                for (const auto& [len, vals] : by_variant[v]) {
                  double sum = 0;
                  for (double x : vals) sum += x;
                  line.length.push_back(static_cast<double>(len));
                  line.value.push_back(sum / static_cast<double>(vals.size()));
                  // Every seed as a dot: outcomes split (solved or not), the mean hides that.
                  for (double x : vals) line.points.push_back({static_cast<double>(len), x});
                }
                lines.push_back(line);
              }
              const fs::path task_figs = fs::path(ctx.dir()) / task / "figures";
              fs::create_directories(task_figs);
              if (!lines.empty() && ctx.options().figures)
                analysis::extrapolation_figure(lines,
                                               most_runs > 1
                                                   ? fmt::format("sequence accuracy (line: mean of up to {} runs; dots: each run)", most_runs)
                                                   : std::string("sequence accuracy"),
                                               static_cast<double>(t.max_len), task_figs.string(),
                                               "length_generalization",
                                               {task + ": length generalization (trained on lengths " +
                                                    std::to_string(t.min_len) + ".." +
                                                    std::to_string(t.max_len) + ")",
                                                "task length n (" + TaskRegistry::get().at(task).length_unit + ")",
                                                "longest training length", "", task, ""});
              // N, 2N (where failures usually start) and the longest test length.
              // Per seed: sequence accuracy splits between seeds that solve a task and seeds that
              // do not, and a mean of 0.96, 0.00, 0.00 describes no run.
              cols.push_back({task + "@" + std::to_string(t.max_len), task + " N (0–1, per seed)",
                              2, true, true});
              if (has_2n)
                cols.push_back({task + "@" + std::to_string(2 * t.max_len),
                                task + " 2N (0–1, per seed)", 2, true, true});
              cols.push_back({task + "@" + std::to_string(t.test_max_len),
                              task + " " + longest + " (0–1, per seed)", 2, true, true});
            }
            std::vector<analysis::RunRecord> recs;
            for (const auto& n : order) recs.push_back(merged[n]);
            ctx.judge_claims(recs);
            ReportSection main{
                fmt::format("Sequence accuracy at the longest training length N{} and at {}",
                            has_2n ? ", at 2N" : "", longest),
                fmt::format("Trained on lengths {}..{} (N = {}), tested up to {}. A sequence counts "
                            "as right when every output token is. '—' marks lengths a variant "
                            "cannot reach; a learned table with beyond: clamp (the mini config) "
                            "reuses its last row past its length.{}",
                            t.min_len, t.max_len, t.max_len, t.test_max_len, stage_notes),
                {analysis::group_table(recs, cols)},
                {"synthetic_accuracy"},
                {}};
            for (const auto& task : tasks)
              main.figures.push_back(
                  {(fs::path(ctx.dir()) / task / "figures" / "length_generalization.png").string(),
                   task + ": sequence accuracy against length"});
            return write_experiment_report(
                ctx, "Synthetic tasks: length generalization",
                "Each task is trained at short lengths and tested at longer ones, for every "
                "variant (data generated by relpos, see docs/data.md)." +
                    (left_out.empty()
                         ? std::string()
                         : fmt::format(" Tasks run: {} (the config's sweep.stages); not run: {} "
                                       "(add them to sweep.stages, e.g. --set "
                                       "'sweep.stages=[{}]').",
                                       fmt::join(tasks, ", "), fmt::join(left_out, ", "),
                                       fmt::join(synthetic_tasks(), ","))),
                {main, per_task});
          },
          synthetic_tasks(), synthetic_claims, /*stages_selectable=*/true};
}

}  // namespace relpos
