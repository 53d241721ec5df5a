// huang2020: the comparison of Huang, Liang, Xu & Xiang 2020 (Findings of EMNLP), Table 1 in
// spirit: every variant pre-trained with MLM, then fine-tuned on span QA (EM/F1) and sentence
// classification; the method-4 relative-weight and head-averaged attention figures; the
// inductive test (pre-trained at a short length, evaluated at longer ones); and the drop-in
// experiment (a model pre-trained with `learned` continued briefly with and without huang_m4
// added).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "analysis/extrapolation_tables.h"
#include "analysis/units.h"
#include "core/config/fields.h"
#include "core/util/errors.h"
#include "experiments/regime_claim.h"
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

// The longest length of the inductive test.
int64_t longest_length(const Config& cfg) {
  const auto& l = cfg.eval.lengths;
  return l.empty() ? 4 * cfg.task.seq_len : *std::max_element(l.begin(), l.end());
}

// What the inductive test scored at each length, and the sampling error of one run's accuracy
// at the pre-training length: differences below it are noise of the evaluation set.
std::string inductive_noise(const std::vector<RunSummary>& runs, const Config& cfg) {
  for (const auto& r : runs) {
    const auto tok = r.extrapolation.find("tokens"), acc = r.extrapolation.find("accuracy");
    if (tok == r.extrapolation.end() || acc == r.extrapolation.end()) continue;
    std::string counts;
    for (const auto& [len, n] : tok->second)
      counts += fmt::format("{}{}: {:.0f}", counts.empty() ? "" : "; ", len, n);
    const int64_t T = cfg.task.seq_len;
    const auto a = acc->second.find(T), n = tok->second.find(T);
    const std::string err =
        a == acc->second.end() || n == tok->second.end()
            ? std::string()
            : " " + analysis::sampling_error_note("accuracy", cfg.task.type, cfg.data.tokenizer,
                                                  a->second, n->second, NAN,
                                                  static_cast<double>(T), "tokens");
    return fmt::format(" Scored masked tokens per length (run {}): {}.{}",
                       fs::path(r.dir).filename().string(), counts, err);
  }
  return "";
}

std::vector<analysis::Claim> huang2020_claims(const Config& cfg) {
  const std::string source = "Huang et al. 2020";
  analysis::Claim table1{"huang2020-table1-span-qa",
                         "improving results on SQuAD1.1 compared to previous position "
                         "embeddings approaches",
                         source + ", abstract and Table 1 (method 4 > Shaw > absolute)",
                         "span-QA F1 (%, validation split of the fine-tuning stage)",
                         {}};
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"huang_m4", "shaw"}, {"shaw", "learned"}}) {
    analysis::Comparison c;
    c.a = {a, "qa_f1"};
    c.b = {b, "qa_f1"};
    table1.comparisons.push_back(c);
  }
  analysis::Claim inductive{
      "huang2020-longer-sequences", "robust enough to handle long sequences",
      source + ", abstract and the inductive-property experiment",
      fmt::format("change of the test masked-token accuracy (0–1) from the pre-training length "
                  "{} to {} (less negative is more robust)",
                  cfg.task.seq_len, longest_length(cfg)),
      {}};
  analysis::Comparison ind;
  ind.a = {"huang_m4", "accuracy_change"};
  ind.b = {"sinusoidal", "accuracy_change"};
  ind.optional = true;
  ind.label = "huang_m4 vs sinusoidal (the absolute encoding that runs past its length)";
  inductive.comparisons.push_back(ind);
  analysis::Claim dropin{"huang2020-drop-in", "near drop-in replacement for improving the accuracy",
                         source + ", abstract and the drop-in experiment",
                         "validation masked-token accuracy (0–1) after continuing pre-training "
                         "of the learned model, with and without method 4 added",
                         {}};
  analysis::Comparison d;
  d.a = {"dropin: learned+huang_m4", "valid_accuracy"};
  d.b = {"dropin: learned", "valid_accuracy"};
  d.label = "learned+huang_m4 vs learned (drop-in)";
  dropin.comparisons.push_back(d);
  // The claims of the stages that run (sweep.stages may leave the fine-tuning ones out).
  std::vector<analysis::Claim> out{regime_claim("huang2020", cfg, "pretrain_")};
  if (stage_chosen(cfg, "squad")) out.push_back(table1);
  out.push_back(inductive);
  if (stage_chosen(cfg, "dropin")) out.push_back(dropin);
  return out;
}

}  // namespace

ExperimentInfo huang2020_experiment() {
  return {"huang2020",
          "every variant: MLM pre-training, span QA and classification fine-tuning, drop-in",
          [](ExperimentContext& ctx) {
            const auto grid = ctx.config().sweep.grid;
            const fs::path dir(ctx.dir());
            const std::string cls_stage = classification_stage();
            // sweep.stages may leave out fine-tuning stages (e.g. the gpu scale: pre-training
            // alone); every other stage starts from the pre-trained runs.
            if (!ctx.runs_stage("pretrain"))
              throw ConfigError(
                  fmt::format("{}: sweep.stages: huang2020's other stages start from the runs of "
                              "its pretrain stage, which [{}] leaves out",
                              ctx.config_file(), join_names(ctx.config().sweep.stages, ", ")),
                  "keep pretrain in sweep.stages, e.g. --set 'sweep.stages=[pretrain, squad]'");
            const bool run_qa = ctx.runs_stage("squad"), run_cls = ctx.runs_stage(cls_stage),
                       run_dropin = ctx.runs_stage("dropin");
            // The drop-in stage continues the pre-trained `learned` run of each seed: a grid
            // without them would fail only after every other stage has trained.
            std::vector<GridAxis> axes;
            for (const auto& g : grid) axes.push_back(parse_grid_axis(g));
            bool has_learned = false;
            std::string seed_axis;  // "seed=1,2,3" of the grid, for the drop-in stage
            for (const auto& a : axes) {
              if (a.key == "position.type")
                has_learned = std::count(a.values.begin(), a.values.end(), "learned") > 0;
              if (a.key == "seed") seed_axis = "seed=" + join_names(a.values, ",");
            }
            if (run_dropin && !has_learned)
              throw ConfigError(
                  fmt::format("sweep.grid: huang2020's drop-in stage continues the pre-trained "
                              "`learned` run of each seed, which the grid [{}] does not make",
                              join_names(grid, "; ")),
                  "keep position.type=learned in the grid, e.g. --set "
                  "'sweep.grid=[\"position.type=learned,huang_m4\", \"seed=1\"]'");
            // 1. Pre-training, and the inductive test on its runs.
            auto pre = ctx.sweep("pretrain", {ctx.config_file()}, grid);
            ctx.evaluate_lengths(run_dirs(pre));
            ctx.analyze_and_report((dir / "pretrain").string());
            const std::string from = (dir / "pretrain").string() + "/{point}";
            // 2. Fine-tuning from each pre-trained run.
            std::vector<SweepRunStatus> qa, cls, dropin;
            if (run_qa) {
              qa = ctx.sweep("squad", {ctx.part_config("squad")}, grid, {}, from);
              ctx.analyze_and_report((dir / "squad").string());
            }
            if (run_cls) {
              cls = ctx.sweep(cls_stage, {ctx.part_config(cls_stage)}, grid, {}, from);
              ctx.analyze_and_report((dir / cls_stage).string());
            }
            // 3. Drop-in: continue each seed's learned model with and without huang_m4, so the
            // two are compared paired by seed.
            std::vector<std::string> dropin_grid{"position.type=learned,learned+huang_m4"};
            if (!seed_axis.empty()) dropin_grid.push_back(seed_axis);
            const std::string learned_run =
                (dir / "pretrain" / (seed_axis.empty() ? "learned" : "learned-seed{seed}")).string();
            if (run_dropin) {
              dropin =
                  ctx.sweep("dropin", {ctx.part_config("dropin")}, dropin_grid, {}, learned_run);
              ctx.analyze_and_report((dir / "dropin").string());
            }

            // Table 1: one row per variant.
            auto pre_s = summaries(pre), qa_s = summaries(qa), cls_s = summaries(cls);
            std::vector<analysis::RunRecord> recs = records(pre_s);
            for (size_t i = 0; i < recs.size(); ++i) {
              auto& v = recs[i].values;
              v["mlm_accuracy"] = v.count("valid_accuracy") ? v["valid_accuracy"] : NAN;
              for (const auto& [k, x] : pre_s[i].valid) v["pretrain_valid_" + k] = x;
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
            // The columns of the stages that ran.
            std::vector<analysis::ColumnSpec> cols{{"params", "position params (count)", 0, false},
                                                   {"mlm_accuracy", "MLM acc. (0–1)", 3, true}};
            if (run_qa)
              cols.insert(cols.end(),
                          {{"qa_em", "QA EM (%)", 1, true}, {"qa_f1", "QA F1 (%)", 1, true}});
            if (run_cls) cols.push_back({"cls_accuracy", "classification acc. (0–1)", 3, true});
            cols.push_back({"train_s", "pre-train time (s)", 0, true});
            if (run_qa) cols.push_back({"qa_train_s", "QA fine-tune time (s)", 0, true});
            if (run_cls) cols.push_back({"cls_train_s", "classif. fine-tune time (s)", 0, true});
            auto table1 = analysis::group_table(recs, cols);
            std::string splits = "MLM: " + validation_data(ctx, "pretrain", ctx.config_file());
            if (run_qa)
              splits += ". QA: " + validation_data(ctx, "squad", ctx.part_config("squad"));
            if (run_cls)
              splits += ". Classification: " +
                        validation_data(ctx, cls_stage, ctx.part_config(cls_stage));
            table1.note = fmt::format(
                "Validation splits. {}. Times: wall-clock seconds of each stage's training "
                "(train_seconds of its result.json); runs that shared the {} with others "
                "(--jobs > 1, other work) took longer, so compare them within one invocation.",
                splits, ctx.config().device == "cpu" ? "CPU" : "device");
            std::vector<analysis::ColumnSpec> inductive_cols;
            for (auto len : ctx.config().eval.lengths)
              inductive_cols.push_back({"accuracy@" + std::to_string(len),
                                        fmt::format("MLM acc. at T={} (0–1)", len), 3, true});
            auto inductive = analysis::group_table(recs, inductive_cols);
            inductive.note = fmt::format("Pre-trained at T={}; '—': the variant cannot run at "
                                         "that length (learned table).{}", t.seq_len,
                                         inductive_noise(pre_s, ctx.config()));

            auto drop = records(summaries(dropin));
            const std::string bits = analysis::bits_name(ctx.config().data.tokenizer);
            for (auto& r : drop)
              if (r.values.count("valid_loss"))
                r.values[bits] = analysis::nats_to_bits(r.values["valid_loss"]);
            const std::string per = ctx.config().data.tokenizer == "bytes" ? "byte" : "token";
            auto drop_table = analysis::group_table(
                drop, {{"valid_accuracy", "MLM acc. after continuing (0–1)", 3, true},
                       {"valid_loss", "MLM loss (nats/" + per + ")", 3, true},
                       {bits, "MLM loss (bits/" + per + ")", 3, true}});
            drop_table.note = "Both rows of a seed start from that seed's pretrain/learned run and "
                              "continue for the same steps; huang_m4's relative table starts "
                              "from scratch.";
            // Claims: Table 1 and the inductive test on the pre-training and fine-tuning
            // records, the drop-in on its own stage's (its groups marked "dropin: ").
            std::vector<analysis::RunRecord> claim_recs = recs;
            for (auto& r : claim_recs) {
              auto& v = r.values;
              const std::string from = fmt::format("accuracy@{}", t.seq_len);
              const std::string to = fmt::format("accuracy@{}", longest_length(ctx.config()));
              if (v.count(from) && v.count(to)) v["accuracy_change"] = v[to] - v[from];
            }
            for (auto r : drop) {
              r.group = "dropin: " + r.group;
              claim_recs.push_back(r);
            }
            ctx.judge_claims(claim_recs);

            ReportSection s1{run_qa || run_cls ? "Table 1: pre-training and fine-tuning"
                                               : "Table 1: pre-training",
                             "",
                             {table1},
                             {"table1"},
                             {}};
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
            std::vector<std::string> ran, not_run;
            for (const auto& st :
                 {std::string("pretrain"), std::string("squad"), cls_stage, std::string("dropin")})
              (ctx.runs_stage(st) ? ran : not_run).push_back(st);
            std::string intro = "Stage reports:";
            for (size_t i = 0; i < ran.size(); ++i)
              intro += fmt::format("{0} [{1}]({1}/report.md)", i == 0 ? "" : ",", ran[i]);
            intro += ".";
            if (!not_run.empty())
              intro += fmt::format(
                  " Not run: {} (the config's sweep.stages; add them with --set "
                  "'sweep.stages=[...]').",
                  join_names(not_run, ", "));
            std::vector<ReportSection> sections{s1, s2};
            if (run_dropin) sections.push_back(s3);
            sections.push_back(s4);
            return write_experiment_report(
                ctx, "Huang et al. 2020: relative position embeddings compared", intro, sections);
          },
          {"pretrain", "squad", classification_stage(), "dropin"},
          huang2020_claims,
          /*stages_selectable=*/true};
}

}  // namespace relpos
