// tisa2021: an ALBERT-style model (one block shared by every layer; factorized embeddings where
// the config asks for them)
// with and without TISA, pre-trained as a language model (the config's task) and fine-tuned on
// sentence classification (Wennberg & Henter 2021, Table 2 in spirit), and the positional
// parameter count of every variant at the experiment's size and at ALBERT-base size.
#include <fmt/format.h>

#include <filesystem>

#include "core/position/position_encoding.h"
#include "core/task/registry.h"
#include "experiments/regime_claim.h"
#include "experiments/report_util.h"

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

// "Equal" accuracy within one point: the non-inferiority margin of the parameter claim.
constexpr double kAccuracyMargin = 0.01;
// "Orders of magnitude": at least a factor of 100.
constexpr double kOrdersOfMagnitude = 100.0;

std::vector<analysis::Claim> tisa2021_claims(const Config& cfg) {
  const std::string source = "Wennberg & Henter 2021, abstract";
  const std::string accuracy = "classification accuracy (0–1, validation split)";
  analysis::Claim fewer{
      "tisa2021-fewer-parameters", "only adding orders of magnitude less positional parameters",
      source,
      fmt::format("positional parameters (exact count at this model size; claimed: learned / "
                  "tisa >= {:g}) and {} (tisa not worse than learned by more than {:g})",
                  kOrdersOfMagnitude, accuracy, kAccuracyMargin),
      {}};
  analysis::Comparison ratio;
  ratio.test = analysis::ClaimTest::ratio;
  ratio.a = {"tisa", "params"};
  ratio.b = {"learned", "params"};
  ratio.margin = kOrdersOfMagnitude;
  ratio.label = "positional parameters: learned / tisa";
  fewer.comparisons.push_back(ratio);
  analysis::Comparison acc;
  acc.test = analysis::ClaimTest::not_worse;
  acc.a = {"tisa", "valid_accuracy"};
  acc.b = {"learned", "valid_accuracy"};
  acc.margin = kAccuracyMargin;
  acc.label = "accuracy: tisa vs learned";
  fewer.comparisons.push_back(acc);
  analysis::Claim improves{"tisa2021-improves-albert", "improves on regular ALBERT on GLUE tasks",
                           source, accuracy + ", TISA added to the learned "
                           "absolute embeddings against them alone", {}};
  analysis::Comparison better;
  better.a = {"learned+tisa", "valid_accuracy"};
  better.b = {"learned", "valid_accuracy"};
  improves.comparisons.push_back(better);
  return {regime_claim("tisa2021", cfg, "pretrain_"), fewer, improves};
}

// How the model departs from or follows ALBERT, from its config, for the report's intro.
std::string albert_words(const Config& cfg) {
  const auto& m = cfg.model;
  const std::string embed =
      m.embed_dim() < m.width
          ? fmt::format("factorized embeddings (E = {} < D = {})", m.embed_dim(), m.width)
          : fmt::format("unfactorized embeddings (E = D = {}: a departure from ALBERT, see "
                        "docs/experiments.md, \"Regimes\")",
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

}  // namespace

ReportSection tisa2021_parameter_section(const Config& own, const std::string& config_file) {
  ReportSection params{
      "Positional parameters of every variant",
      "TISA's point: a few kernel parameters per head instead of a table per position.",
      {}, {}, {}};
  const Config base =
      load_config({config_file},
                  {"model.layers=12", "model.width=768", "model.heads=12", "model.ff_width=3072",
                   "model.embedding_width=128", "model.share_layers=true", "task.seq_len=512",
                   "position.learned.max_len=512"})
          .config;
  auto mine = parameter_table(own, "This experiment's model");
  auto albert = parameter_table(base, "ALBERT-base size (L=12 shared, D=768, H=12, E=128)");
  if (same_counts(mine, albert)) {
    // The paper scale is ALBERT-base: one table, not the same one twice.
    albert.title = "This experiment's model: ALBERT-base size (L=12 shared, D=768, H=12, E=128)";
    params.tables = {albert};
    params.table_stems = {"parameters_albert_base"};
  } else {
    params.tables = {mine, albert};
    params.table_stems = {"parameters_mini", "parameters_albert_base"};
  }
  return params;
}

ExperimentInfo tisa2021_experiment() {
  return {"tisa2021", "ALBERT-style model with and without TISA on classification",
          [](ExperimentContext& ctx) {
            const auto grid = ctx.config().sweep.grid;
            const std::string cls_stage = classification_stage();
            auto pre = ctx.sweep("pretrain", {ctx.config_file()}, grid);
            const std::string pre_dir = (fs::path(ctx.dir()) / "pretrain").string();
            ctx.analyze_and_report(pre_dir);
            auto cls = ctx.sweep(cls_stage, {ctx.part_config(cls_stage)}, grid, {},
                                 pre_dir + "/{point}");
            ctx.analyze_and_report((fs::path(ctx.dir()) / cls_stage).string());

            std::vector<analysis::RunRecord> recs = records(summaries(cls));
            auto pre_recs = records(summaries(pre));
            for (size_t i = 0; i < recs.size() && i < pre_recs.size(); ++i) {
              recs[i].values["pre_train_s"] = pre_recs[i].values["train_s"];
              for (const auto& [k, v] : pre_recs[i].values)
                if (k.rfind("valid_", 0) == 0) recs[i].values["pretrain_" + k] = v;
            }
            // The pre-training task's primary metric (masked-token accuracy for an MLM,
            // perplexity for a causal LM), the metric of the regime claim.
            const PrimaryMetricKey pre_metric = primary_metric_key(ctx.config(), "pretrain_");
            auto table = analysis::group_table(
                recs, {{"params", "positional params (count)", 0, false},
                       {pre_metric.key, "pre-training: " + pre_metric.words, 3, true},
                       {"valid_accuracy", "classification accuracy (0–1)", 3, true},
                       {"valid_f1", "classification F1 (0–1)", 3, true},
                       {"pre_train_s", "pre-train time (s)", 0, true},
                       {"train_s", "fine-tune time (s)", 0, true}});
            table.note = "Validation split. Times: wall-clock seconds of each stage's training "
                         "(train_seconds of its result.json).";
            ctx.judge_claims(recs);

            ReportSection results{"Classification with and without TISA", "", {table}, {"tisa2021"}, {}};
            ReportSection params = tisa2021_parameter_section(ctx.config(), ctx.config_file());
            return write_experiment_report(
                ctx, "TISA on an ALBERT-style model",
                fmt::format("Pre-training ({4} on {0}) then fine-tuning on {1} (validation: {2}), "
                            "with {5}. "
                            "Stage reports: [pretrain](pretrain/report.md), "
                            "[{3}]({3}/report.md).",
                            training_data(ctx, "pretrain", ctx.config_file()),
                            training_data(ctx, cls_stage, ctx.part_config(cls_stage)),
                            validation_data(ctx, cls_stage, ctx.part_config(cls_stage)),
                            cls_stage, task_words(ctx.config().task.type),
                            albert_words(ctx.config())),
                {results, params});
          },
          {"pretrain", classification_stage()},
          tisa2021_claims};
}

}  // namespace relpos
