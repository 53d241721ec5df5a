// tisa2021: an ALBERT-style model (one block shared by every layer; factorized embeddings where
// the config asks for them) with and without TISA, pre-trained as a language model (the
// config's task) and fine-tuned on sentence classification (Wennberg & Henter 2021, Table 2 in
// spirit), and the positional parameter count of every variant at the experiment's size and at
// the source's (ALBERT-base, the `paper_size` of the parameter claim in the config).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/position/position_encoding.h"
#include "core/task/task_registry.h"
#include "experiments/report_util.h"
#include "experiments/stage_records.h"

namespace relpos {
namespace fs = std::filesystem;

namespace {

// Positional parameters of every registered variant for a model config.
analysis::Table parameter_table(const Config& cfg, const std::string& title) {
  analysis::Table t;
  t.title = title;
  t.columns = {{"variant", 0, false}, {"positional parameters (count)", 0, false}};
  const ModelDims dims = model_dims(cfg.model);
  for (const auto& name : Registry::get().names()) {
    auto enc = make_position_encoding(name, dims, cfg.position);
    t.rows.push_back({analysis::Cell::label(name),
                      analysis::Cell::value(static_cast<double>(enc->parameter_count()))});
  }
  t.note = fmt::format("L={} (shared: {}), D={}, H={}, E={}; the learned table as configured.",
                       cfg.model.layers, cfg.model.share_layers ? "yes" : "no", cfg.model.width,
                       cfg.model.heads, cfg.model.embed_dim());
  return t;
}

// Whether two parameter tables describe the same model (same sizes, same count per variant).
bool same_counts(const analysis::Table& a, const analysis::Table& b) {
  if (a.note != b.note || a.rows.size() != b.rows.size()) return false;
  for (size_t i = 0; i < a.rows.size(); ++i)
    if (a.rows[i][0].text != b.rows[i][0].text || a.rows[i][1].samples != b.rows[i][1].samples)
      return false;
  return true;
}

// The claim judged at the source's model size, if the config has one.
const ClaimConfig* paper_size_claim(const Config& cfg) {
  for (const auto& c : cfg.claims)
    if (!c.paper_size.empty()) return &c;
  return nullptr;
}

// How the model departs from or follows ALBERT, from its config, for the report's intro.
std::string albert_words(const Config& cfg) {
  const auto& m = cfg.model;
  const std::string embed =
      m.embed_dim() < m.width
          ? fmt::format("factorized embeddings (E = {} < D = {})", m.embed_dim(), m.width)
          : fmt::format("unfactorized embeddings (E = D = {}: a departure from ALBERT, see "
                        "docs/experiments/tisa2021.md)",
                        m.width);
  const std::string blocks =
      m.share_layers ? "one block shared by every layer" : "unshared layers (unlike ALBERT)";
  return embed + " and " + blocks;
}

// "causal language model" for clm: the task's summary up to its colon.
std::string task_words(const std::string& task) {
  const std::string& summary = task_info(task).summary;
  return summary.substr(0, summary.find(':'));
}

// The classification table: fine-tuning metrics beside each run's pre-training metric.
analysis::Table classification_table(std::vector<analysis::RunRecord> cls,
                                     const std::vector<analysis::RunRecord>& pre,
                                     const Config& cfg) {
  const MetricInfo& m = task_info(cfg.task.type).primary();
  const std::string pre_key = "valid_" + m.name;
  merge_by_run(cls, pre, "pretrain_", {pre_key, "train_s"});
  auto table = analysis::group_table(
      cls, {{"params", "positional params (count)", 0, false},
            {"pretrain_" + pre_key, "pre-training: valid " + m.name, 3, true},
            {"valid_accuracy", "classification accuracy (0–1)", 3, true},
            {"valid_f1", "classification F1 (0–1)", 3, true},
            {"pretrain_train_s", "pre-train time (s)", 0, true},
            {"train_s", "fine-tune time (s)", 0, true}});
  table.title = "Classification with and without TISA";
  table.split = "validation splits";
  table.note = "Validation split of each stage. Times: wall-clock seconds of each stage's "
               "training (train_seconds of its result.json).";
  return table;
}

std::string tisa2021_report(ExperimentContext& ctx, const analysis::Table& table) {
  const std::string cls_stage = classification_stage();
  ReportSection results{"Classification with and without TISA", "", {table}, {"tisa2021"}, {}};
  ReportSection params = tisa2021_parameter_section(ctx.config(), ctx.config_file());
  return write_experiment_report(
      ctx, "TISA on an ALBERT-style model",
      fmt::format("Pre-training ({4} on {0}) then fine-tuning on {1} (validation: {2}), with {5}. "
                  "Stage reports: [pretrain](pretrain/report.md), [{3}]({3}/report.md).",
                  training_data(ctx, "pretrain", ctx.config_file()),
                  training_data(ctx, cls_stage, ctx.part_config(cls_stage)),
                  validation_data(ctx, cls_stage, ctx.part_config(cls_stage)), cls_stage,
                  task_words(ctx.config().task.type), albert_words(ctx.config())),
      {results, params});
}

std::string run_tisa2021(ExperimentContext& ctx) {
  const auto grid = ctx.config().sweep.grid;
  const std::string cls_stage = classification_stage();
  const std::string pre_dir = (fs::path(ctx.dir()) / "pretrain").string();
  ctx.sweep("pretrain", {ctx.config_file()}, grid);
  const auto pre = ctx.analyze(pre_dir);
  ctx.report(pre_dir, pre);
  const std::string cls_dir = (fs::path(ctx.dir()) / cls_stage).string();
  ctx.sweep(cls_stage, {ctx.part_config(cls_stage)}, grid, {}, pre_dir + "/{point}");
  const auto cls = ctx.analyze(cls_dir);
  ctx.report(cls_dir, cls);

  auto pre_recs = stage_records(pre, "pretrain"), cls_recs = stage_records(cls, cls_stage);
  mark_untrained_rows(cls_recs, cls, pre);
  add_paper_size_params(pre_recs, ctx.claims(), ctx.config_file(), ctx.sets());
  std::vector<analysis::RunRecord> all = pre_recs;
  all.insert(all.end(), cls_recs.begin(), cls_recs.end());
  ctx.judge_claims(all);
  return tisa2021_report(ctx, classification_table(cls_recs, pre_recs, ctx.config()));
}

}  // namespace

ReportSection tisa2021_parameter_section(const Config& own, const std::string& config_file) {
  ReportSection params{
      "Positional parameters of every variant",
      "TISA's point: a few kernel parameters per head instead of a table per position.",
      {}, {}, {}};
  auto mine = parameter_table(own, "This experiment's model");
  const ClaimConfig* claim = paper_size_claim(own);
  if (!claim) {
    params.tables = {mine};
    params.table_stems = {"parameters"};
    return params;
  }
  const std::string size = claim->paper_size_name.empty() ? "the source's size" : claim->paper_size_name;
  const Config paper = load_config({config_file}, claim->paper_size).config;
  auto theirs = parameter_table(paper, fmt::format("{} size ({})", size, join_names(claim->paper_size, ", ")));
  if (same_counts(mine, theirs)) {
    // The paper scale is the source's size: one table, not the same one twice.
    theirs.title = "This experiment's model: " + theirs.title;
    params.tables = {theirs};
    params.table_stems = {"parameters_paper_size"};
  } else {
    params.tables = {mine, theirs};
    params.table_stems = {"parameters_mini", "parameters_paper_size"};
  }
  return params;
}

ExperimentInfo tisa2021_experiment() {
  return {"tisa2021", "ALBERT-style model with and without TISA on classification", run_tisa2021,
          {"pretrain", classification_stage()}};
}

}  // namespace relpos
