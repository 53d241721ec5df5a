// relpos analyze DIR: translation-invariance metrics, figures and tables of a run folder (holds
// run.h5) or of an experiment folder (holds run folders). docs/analysis.md.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "analysis/claims_folder.h"
#include "analysis/run_source.h"
#include "app/commands.h"
#include "core/position/position_registry.h"

namespace relpos::app {
namespace {

struct AnalyzeArgs {
  std::string dir;
  std::string metric;
  int64_t step = -1;
  int64_t radius = 50;
  bool no_figures = false;
  std::string group_by;
  std::string claims;
  std::string heads_scale = "shared";
  double colour_cap = 0.99;
  std::string figure_size;
};

void print_run(const analysis::RunResult& r) {
  std::cout << fmt::format("{}: {} snapshot(s)", r.info.dir, r.steps.size());
  if (!r.steps.empty()) {
    std::cout << fmt::format("; invariance at step {}:", r.steps.back());
    for (const auto& [q, v] : r.invariance)
      std::cout << fmt::format(" {} {:.3f};", analysis::quantity_label(q), v.back());
  }
  std::cout << "\n";
}

}  // namespace

Command add_analyze(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "analyze", "translation invariance, figures and tables of a run or experiment folder");
  auto a = std::make_shared<AnalyzeArgs>();
  cmd->add_option("DIR", a->dir,
                  "run folder (holds run.h5) or experiment folder (holds run folders)")
      ->required();
  cmd->add_option("--metric", a->metric,
                  "validation metric set against invariance (default: the task's primary metric, "
                  "valid_<metric> — valid_accuracy for mlm/classify, valid_ppl for clm, valid_f1 "
                  "for span_qa, valid_seq_accuracy for synthetic — else the first present of "
                  "valid_accuracy, valid_f1, valid_em, valid_ppl, valid_loss)");
  // -1 (not given): the last snapshot. A negative step given used to mean that too.
  cmd->add_option("--step", a->step,
                  "training step of the snapshot drawn in the weight/attention figures (default: "
                  "the last snapshot)")
      ->check(integer_in(0));
  cmd->add_option("--radius", a->radius, "relative-weight figures span r in [-R, R]")
      ->check(at_least_one());
  cmd->add_flag("--no-figures", a->no_figures, "metrics and tables only (no gnuplot needed)");
  cmd->add_option("--heads-scale", a->heads_scale,
                  "per-head attention figures: 'shared' (one colour scale for the heads of a "
                  "layer, stated in the title) or 'per-head' (each head its own scale and colour "
                  "bar, so weak heads stay visible)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return v == "shared" || v == "per-head"
                       ? std::string()
                       : fmt::format("got '{}'; expected shared or per-head", v);
          },
          "shared|per-head", "heads_scale"));
  cmd->add_option("--colour-cap", a->colour_cap,
                  "attention figures use the top colour from this quantile of the entries on "
                  "(default 0.99; 1: the largest entry, uncapped)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            char* end = nullptr;
            const double q = std::strtod(v.c_str(), &end);
            // Below the median a "cap" would colour most entries with the top colour.
            if (v.empty() || end != v.c_str() + v.size() || !(q >= 0.5 && q <= 1.0))
              return fmt::format("got '{}'; expected a quantile from 0.5 to 1 (1: uncapped)", v);
            return {};
          },
          "0.5..1", "colour_cap"));
  cmd->add_option("--figure-size", a->figure_size,
                  "screen, column (about 3.3 in wide) or page (about 6.9 in): the figures' size "
                  "and fonts (default: the runs' figures.size, else screen)")
      ->check(CLI::IsMember({"screen", "column", "page"}));
  cmd->add_option("--claims", a->claims,
                  "a YAML file whose `claims:` block is judged on the folder's runs (kept as "
                  "DIR/claims.yaml; a sweep whose config has claims keeps them there itself)");
  auto* group_by = cmd->add_option("--group-by", a->group_by,
                  "config keys that label rows of cross-run tables, comma-separated "
                  "(default: the position types)");
  return {cmd, [a, group_by]() {
            // '' and ',' used to fall back to the default grouping without a word.
            const std::vector<std::string> keys =
                group_by->count() == 0
                    ? std::vector<std::string>{}
                    : list_items("--group-by", {a->group_by},
                                 "give config keys, e.g. --group-by position.type,model.layers, "
                                 "or leave it out for the position types");
            analysis::AnalyzeOptions o;
            o.encoder_notes = encoder_notes();
            o.metric = a->metric;
            o.figure_step = a->step;
            o.radius = a->radius;
            o.figures = !a->no_figures;
            o.colour_scale.per_head = a->heads_scale == "per-head";
            o.colour_scale.cap = a->colour_cap;
            o.figure_size = a->figure_size;
            bool experiment = false;
            if (!a->claims.empty()) analysis::adopt_claims_file(a->dir, a->claims);
            const auto ex =
                analysis::analyze_folder(a->dir, o, keys, &experiment);
            for (const auto& r : ex.runs) print_run(r);
            for (const auto& w : ex.warnings) std::cerr << "warning: " << w << "\n";
            std::cout << fmt::format("wrote {}/tables{} and analysis.h5 in {}\n", a->dir,
                                     o.figures ? ", figures" : "",
                                     experiment ? "each run folder" : "the run folder");
            if (std::filesystem::exists(std::filesystem::path(a->dir) / "claims.md"))
              std::cout << fmt::format("claims judged: {}/claims.md\n", a->dir);
            return 0;
          }};
}

}  // namespace relpos::app
