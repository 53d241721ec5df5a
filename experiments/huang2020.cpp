// huang2020: the comparison of Huang, Liang, Xu & Xiang 2020 (Findings of EMNLP), Table 1 in
// spirit: every variant pre-trained with MLM, then fine-tuned on span QA (EM/F1) and sentence
// classification; the method-4 relative-weight and head-averaged attention figures; the
// inductive test (pre-trained at a short length, evaluated at longer ones); and the drop-in
// experiment (a model pre-trained with `learned` continued briefly with and without huang_m4
// added).
#include <fmt/format.h>

#include <filesystem>

#include "core/config/fields.h"
#include "core/util/errors.h"
#include "experiments/report_util.h"

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

}  // namespace

ExperimentInfo huang2020_experiment() {
  return {"huang2020",
          "every variant: MLM pre-training, span QA and classification fine-tuning, drop-in",
          [](ExperimentContext& ctx) {
            const auto grid = ctx.config().sweep.grid;
            const fs::path dir(ctx.dir());
            const std::string cls_stage = classification_stage();
            // The drop-in stage continues pretrain/learned-seed1: a grid without that point
            // would fail only after every other stage has trained.
            std::vector<GridAxis> axes;
            for (const auto& g : grid) axes.push_back(parse_grid_axis(g));
            bool has_learned_seed1 = false;
            for (const auto& p : expand_grid(axes)) has_learned_seed1 |= p.name == "learned-seed1";
            if (!has_learned_seed1)
              throw ConfigError(
                  fmt::format("sweep.grid: huang2020's drop-in stage continues the pre-trained run "
                              "learned-seed1, which the grid [{}] does not make",
                              join_names(grid, "; ")),
                  "keep position.type=learned and seed=1 in the grid, e.g. --set "
                  "'sweep.grid=[\"position.type=learned,huang_m4\", \"seed=1\"]'");
            // 1. Pre-training, and the inductive test on its runs.
            auto pre = ctx.sweep("pretrain", {ctx.config_file()}, grid);
            ctx.evaluate_lengths(run_dirs(pre));
            ctx.analyze_and_report((dir / "pretrain").string());
            const std::string from = (dir / "pretrain").string() + "/{point}";
            // 2. Fine-tuning from each pre-trained run.
            auto qa = ctx.sweep("squad", {ctx.part_config("squad")}, grid, {}, from);
            ctx.analyze_and_report((dir / "squad").string());
            auto cls = ctx.sweep(cls_stage, {ctx.part_config(cls_stage)}, grid, {}, from);
            ctx.analyze_and_report((dir / cls_stage).string());
            // 3. Drop-in: continue the learned model with and without huang_m4.
            const std::string learned_run = (dir / "pretrain" / "learned-seed1").string();
            auto dropin = ctx.sweep("dropin", {ctx.part_config("dropin")},
                                    {"position.type=learned,learned+huang_m4"}, {}, learned_run);
            ctx.analyze_and_report((dir / "dropin").string());

            // Table 1: one row per variant.
            auto pre_s = summaries(pre), qa_s = summaries(qa), cls_s = summaries(cls);
            std::vector<analysis::RunRecord> recs = records(pre_s);
            for (size_t i = 0; i < recs.size(); ++i) {
              auto& v = recs[i].values;
              v["mlm_accuracy"] = v.count("valid_accuracy") ? v["valid_accuracy"] : NAN;
              if (i < qa_s.size()) {
                auto get = [&](const char* k) {
                  auto it = qa_s[i].valid.find(k);
                  return it == qa_s[i].valid.end() ? NAN : it->second;
                };
                v["qa_em"] = get("em");
                v["qa_f1"] = get("f1");
                if (qa_s[i].finished) v["qa_train_s"] = qa_s[i].train_seconds;
              }
              if (i < cls_s.size()) {
                auto it = cls_s[i].valid.find("accuracy");
                v["cls_accuracy"] = it == cls_s[i].valid.end() ? NAN : it->second;
                if (cls_s[i].finished) v["cls_train_s"] = cls_s[i].train_seconds;
              }
              if (!pre_s[i].finished) v.erase("train_s");
            }
            const TaskConfig& t = ctx.config().task;
            auto table1 = analysis::group_table(
                recs, {{"params", "position params", 0, false},
                       {"mlm_accuracy", "MLM acc.", 3, true},
                       {"qa_em", "QA EM", 1, true},
                       {"qa_f1", "QA F1", 1, true},
                       {"cls_accuracy", "classification acc.", 3, true},
                       {"train_s", "pre-train time (s)", 0, true},
                       {"qa_train_s", "QA fine-tune time (s)", 0, true},
                       {"cls_train_s", "classif. fine-tune time (s)", 0, true}});
            table1.note = fmt::format(
                "Validation splits; mean ± sample std over seeds. MLM: {}. QA: {}. "
                "Classification: {}. Times: wall-clock seconds of each stage's training "
                "(train_seconds of its result.json); runs that shared the CPU with others "
                "(--jobs > 1, other work) took longer, so compare them within one invocation.",
                validation_data(ctx, "pretrain", ctx.config_file()),
                validation_data(ctx, "squad", ctx.part_config("squad")),
                validation_data(ctx, cls_stage, ctx.part_config(cls_stage)));
            std::vector<analysis::ColumnSpec> inductive_cols;
            for (auto len : ctx.config().eval.lengths)
              inductive_cols.push_back({"accuracy@" + std::to_string(len),
                                        fmt::format("MLM acc. at T={}", len), 3, true});
            auto inductive = analysis::group_table(recs, inductive_cols);
            inductive.note = fmt::format("Pre-trained at T={}; '—': the variant cannot run at "
                                         "that length (learned table).", t.seq_len);

            auto drop = records(summaries(dropin));
            auto drop_table = analysis::group_table(
                drop, {{"valid_accuracy", "MLM acc. after continuing", 3, true},
                       {"valid_loss", "MLM loss", 3, true}});
            drop_table.note = "Both rows start from pretrain/learned-seed1 and continue for the "
                              "same steps; huang_m4's relative table starts from scratch.";

            ReportSection s1{"Table 1: pre-training and fine-tuning", "", {table1}, {"table1"}, {}};
            ReportSection s2{"Inductive test: longer sequences than in pre-training", "",
                             {inductive}, {"inductive"}, {}};
            ReportSection s3{"Drop-in: adding method 4 to a model pre-trained with learned positions",
                             "", {drop_table}, {"dropin"}, {}};
            const std::string m4 = (dir / "pretrain" / "huang_m4-seed1").string();
            ReportSection s4{"Method 4: relative-position weights and attention", "", {}, {}, {}};
            s4.figures.push_back({find_figure(m4, {"relpos_huang_m4", "layer0"}),
                                  "huang_m4, first layer: relative-position vectors a_r (d × r)"});
            s4.figures.push_back({find_figure(m4, {"attention", "mean", "layer0"}),
                                  "huang_m4, first layer: attention averaged over heads (probe set)"});
            return write_experiment_report(
                ctx, "Huang et al. 2020: relative position embeddings compared",
                fmt::format("Stage reports: [pretrain](pretrain/report.md), [squad](squad/report.md), "
                            "[{0}]({0}/report.md), [dropin](dropin/report.md).",
                            cls_stage),
                {s1, s2, s3, s4});
          },
          {"pretrain", "squad", classification_stage(), "dropin"}};
}

}  // namespace relpos
