// huang2020: the comparison of Huang, Liang, Xu & Xiang 2020 (Findings of EMNLP), Table 1 in
// spirit: every variant pre-trained with MLM, then fine-tuned on span QA (EM/F1) and sentence
// classification; the method-4 relative-weight and head-averaged attention figures; the
// inductive test (pre-trained at a short length, evaluated at longer ones); and the drop-in
// experiment (a model pre-trained with `learned` continued briefly with and without huang_m4
// added). The claims are in configs/experiments/huang2020/mini.yaml.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "analysis/units.h"
#include "core/train/past_bound.h"
#include "core/util/errors.h"
#include "experiments/report_util.h"
#include "experiments/stage_records.h"

namespace relpos {
namespace fs = std::filesystem;

namespace {

// The first figure of a run whose file name contains every fragment, or "".
std::string find_figure(const std::string& run_dir, const std::vector<std::string>& fragments) {
  const fs::path figs = fs::path(run_dir) / "figures";
  if (!fs::is_directory(figs)) return {};
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(figs)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".png") continue;
    bool all = true;
    for (const auto& f : fragments) all = all && name.find(f) != std::string::npos;
    if (all) found.push_back(e.path().string());
  }
  std::sort(found.begin(), found.end());
  return found.empty() ? std::string() : found.front();
}

// The stages chosen, checked against what each needs: every stage starts from pretrain, and
// the drop-in stage from its `learned` runs.
void check_stages(const ExperimentContext& ctx) {
  const auto& grid = ctx.config().sweep.grid;
  if (!ctx.runs_stage("pretrain"))
    throw ConfigError(
        fmt::format("{}: sweep.stages: huang2020's other stages start from the runs of its "
                    "pretrain stage, which [{}] leaves out",
                    ctx.config_file(), join_names(ctx.config().sweep.stages, ", ")),
        "keep pretrain in sweep.stages, e.g. --set 'sweep.stages=[pretrain, squad]'");
  bool has_learned = false;
  for (const auto& g : grid) {
    const GridAxis a = parse_grid_axis(g);
    if (a.key == "position.type")
      has_learned = std::count(a.values.begin(), a.values.end(), "learned") > 0;
  }
  if (ctx.runs_stage("dropin") && !has_learned)
    throw ConfigError(fmt::format("sweep.grid: huang2020's drop-in stage continues the pre-trained "
                                  "`learned` run of each seed, which the grid [{}] does not make",
                                  join_names(grid, "; ")),
                      "keep position.type=learned in the grid, e.g. --set "
                      "'sweep.grid=[\"position.type=learned,huang_m4\", \"seed=1\"]'");
}

// "seed=1,2,3" of the grid, or "".
std::string seed_axis(const std::vector<std::string>& grid) {
  for (const auto& g : grid)
    if (const GridAxis a = parse_grid_axis(g); a.key == "seed") return "seed=" + join_names(a.values, ",");
  return "";
}

struct StageRuns {
  analysis::ExperimentResult result;
  std::vector<analysis::RunRecord> records;
};

// One fine-tuning stage from the pre-trained runs: sweep, analysis, report, records (with the
// position-table rows the pre-training never trained).
StageRuns finetune(const ExperimentContext& ctx, const std::string& stage,
                   const std::vector<std::string>& grid, const std::string& from,
                   const analysis::ExperimentResult& pre) {
  const std::string dir = (fs::path(ctx.dir()) / stage).string();
  ctx.sweep(stage, {ctx.part_config(stage)}, grid, {}, from);
  StageRuns s{ctx.analyze(dir), {}};
  ctx.report(dir, s.result);
  s.records = stage_records(s.result, stage);
  if (stage != "dropin") mark_untrained_rows(s.records, s.result, pre);
  return s;
}

// Table 1: a row per variant with the numbers of every stage that ran.
analysis::Table table1(const ExperimentContext& ctx, const std::vector<analysis::RunRecord>& pre,
                       const StageRuns* qa, const StageRuns* cls) {
  auto recs = pre;
  std::vector<analysis::ColumnSpec> cols{{"params", "position params (count)", 0, false},
                                         {"valid_accuracy", "MLM acc. (0–1)", 3, true}};
  if (qa) {
    merge_by_run(recs, qa->records, "qa_", {"valid_em", "valid_f1", "train_s"});
    cols.insert(cols.end(), {{"qa_valid_em", "QA EM (%)", 1, true}, {"qa_valid_f1", "QA F1 (%)", 1, true}});
  }
  if (cls) {
    merge_by_run(recs, cls->records, "cls_", {"valid_accuracy", "train_s"});
    cols.push_back({"cls_valid_accuracy", "classification acc. (0–1)", 3, true});
  }
  cols.push_back({"train_s", "pre-train time (s)", 0, true});
  if (qa) cols.push_back({"qa_train_s", "QA fine-tune time (s)", 0, true});
  if (cls) cols.push_back({"cls_train_s", "classif. fine-tune time (s)", 0, true});
  recs.erase(std::remove_if(recs.begin(), recs.end(),
                            [](const analysis::RunRecord& r) { return r.group.find(" (") != std::string::npos; }),
             recs.end());
  auto table = analysis::group_table(recs, cols);
  table.title = "Pre-training and fine-tuning metrics";
  table.split = "validation splits";
  std::string splits = "MLM: " + validation_data(ctx, "pretrain", ctx.config_file());
  if (qa) splits += ". QA: " + validation_data(ctx, "squad", ctx.part_config("squad"));
  if (cls) splits += ". Classification: " + validation_data(ctx, classification_stage(),
                                                             ctx.part_config(classification_stage()));
  table.note = fmt::format(
      "Validation splits. {}. Times: wall-clock seconds of each stage's training (train_seconds of "
      "its result.json); runs that shared the {} with others (--jobs > 1, other work) took "
      "longer, so compare them within one invocation.",
      splits, ctx.config().device == "cpu" ? "CPU" : "device");
  return table;
}

// The inductive test: test masked-token accuracy per evaluation length.
analysis::Table inductive_table(const ExperimentContext& ctx, const std::vector<analysis::RunRecord>& pre) {
  std::vector<analysis::ColumnSpec> cols;
  for (auto len : ctx.config().eval.lengths)
    cols.push_back({"accuracy@" + std::to_string(len), fmt::format("MLM acc. at T={} (0–1)", len), 3, true});
  auto t = analysis::group_table(pre, cols);
  t.title = "Inductive test: masked-token accuracy at each length";
  t.split = "test split";
  t.note = fmt::format("Test split (the extrapolation evaluation), not the validation split of "
                       "Table 1. Pre-trained at T={}; '—': the variant cannot run at that length "
                       "(learned table); \"(clamped)\" rows reuse the table's last row past it.",
                       ctx.config().task.seq_len);
  return t;
}

analysis::Table dropin_table(const ExperimentContext& ctx, std::vector<analysis::RunRecord> drop) {
  const std::string bits = analysis::bits_name(ctx.config().data.tokenizer);
  for (auto& r : drop)
    if (r.values.count("valid_loss")) r.values[bits] = analysis::nats_to_bits(r.values["valid_loss"]);
  const std::string per = ctx.config().data.tokenizer == "bytes" ? "byte" : "token";
  auto t = analysis::group_table(drop, {{"valid_accuracy", "MLM acc. after continuing (0–1)", 3, true},
                                        {"valid_loss", "MLM loss (nats/" + per + ")", 3, true},
                                        {bits, "MLM loss (bits/" + per + ")", 3, true}});
  t.title = "Drop-in: continued pre-training";
  t.split = "validation split";
  t.note = "Both rows of a seed start from that seed's pretrain/learned run and continue for the "
           "same steps; huang_m4's relative table starts from scratch.";
  return t;
}

std::string huang2020_report(ExperimentContext& ctx, std::vector<ReportSection> sections) {
  const fs::path dir(ctx.dir());
  const std::string m4 = (dir / "pretrain" / "huang_m4-seed1").string();
  ReportSection s4{"Method 4: relative-position weights and attention", "", {}, {}, {}};
  s4.figures.push_back({find_figure(m4, {"relpos_huang_m4", "layer0"}),
                        "huang_m4, first layer: relative-position vectors a_r (d × r)"});
  s4.figures.push_back({find_figure(m4, {"attention", "mean", "layer0"}),
                        "huang_m4, first layer: attention averaged over heads (probe set)"});
  sections.push_back(s4);
  std::vector<std::string> ran, not_run;
  for (const auto& st : {std::string("pretrain"), std::string("squad"), classification_stage(),
                         std::string("dropin")})
    (ctx.runs_stage(st) ? ran : not_run).push_back(st);
  std::string intro = "Stage reports:";
  for (size_t i = 0; i < ran.size(); ++i)
    intro += fmt::format("{0} [{1}]({1}/report.md)", i == 0 ? "" : ",", ran[i]);
  intro += ".";
  if (!not_run.empty())
    intro += fmt::format(" Not run: {} (the config's sweep.stages; add them with --set "
                         "'sweep.stages=[...]').",
                         join_names(not_run, ", "));
  return write_experiment_report(ctx, "Huang et al. 2020: relative position embeddings compared",
                                 intro, sections);
}

std::string run_huang2020(ExperimentContext& ctx) {
  check_stages(ctx);
  const auto grid = ctx.config().sweep.grid;
  const fs::path dir(ctx.dir());
  // 1. Pre-training, and the inductive test on its runs (a length-bound table also clamped).
  auto pre_runs = run_dirs(ctx.sweep("pretrain", {ctx.config_file()}, grid));
  ctx.evaluate_lengths(pre_runs);
  for (const auto& [setting, label_runs] : past_bound_evaluations(pre_runs))
    ctx.evaluate_lengths(label_runs.second, {setting}, label_runs.first);
  const auto pre = ctx.analyze((dir / "pretrain").string());
  ctx.report((dir / "pretrain").string(), pre);
  auto records = stage_records(pre, "pretrain");
  const auto pre_records = records;
  // 2. Fine-tuning from each pre-trained run; 3. drop-in from each seed's learned run.
  const std::string from = (dir / "pretrain").string() + "/{point}";
  std::optional<StageRuns> qa, cls, drop;
  if (ctx.runs_stage("squad")) qa = finetune(ctx, "squad", grid, from, pre);
  if (ctx.runs_stage(classification_stage()))
    cls = finetune(ctx, classification_stage(), grid, from, pre);
  if (ctx.runs_stage("dropin")) {
    const std::string seeds = seed_axis(grid);
    std::vector<std::string> dropin_grid{"position.type=learned,learned+huang_m4"};
    if (!seeds.empty()) dropin_grid.push_back(seeds);
    const std::string learned =
        (dir / "pretrain" / (seeds.empty() ? "learned" : "learned-seed{seed}")).string();
    drop = finetune(ctx, "dropin", dropin_grid, learned, pre);
  }
  for (const auto* s : {&qa, &cls, &drop})
    if (*s) records.insert(records.end(), (*s)->records.begin(), (*s)->records.end());
  ctx.judge_claims(records);

  std::vector<ReportSection> sections{
      {qa || cls ? "Table 1: pre-training and fine-tuning" : "Table 1: pre-training", "",
       {table1(ctx, pre_records, qa ? &*qa : nullptr, cls ? &*cls : nullptr)}, {"table1"}, {}},
      {"Inductive test: longer sequences than in pre-training", "", {inductive_table(ctx, pre_records)},
       {"inductive"}, {}}};
  if (drop)
    sections.push_back({"Drop-in: adding method 4 to a model pre-trained with learned positions", "",
                        {dropin_table(ctx, drop->records)}, {"dropin"}, {}});
  return huang2020_report(ctx, sections);
}

}  // namespace

ExperimentInfo huang2020_experiment() {
  return {"huang2020",
          "every variant: MLM pre-training, span QA and classification fine-tuning, drop-in",
          run_huang2020,
          {"pretrain", "squad", classification_stage(), "dropin"},
          /*stages_selectable=*/true};
}

}  // namespace relpos
