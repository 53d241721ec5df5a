// relpos analyze DIR: translation-invariance metrics, figures and tables of a run folder (holds
// run.h5) or of an experiment folder (holds run folders). docs/analysis.md.
#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "analysis/run_source.h"
#include "app/commands.h"

namespace relpos::app {
namespace {

struct AnalyzeArgs {
  std::string dir;
  std::string metric;
  int64_t step = -1;
  int64_t radius = 50;
  bool no_figures = false;
  std::string group_by;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string k; std::getline(in, k, ',');)
    if (!k.empty()) out.push_back(k);
  return out;
}

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
  cmd->add_option("--step", a->step,
                  "snapshot drawn in the weight/attention figures (default: last)");
  cmd->add_option("--radius", a->radius, "relative-weight figures span r in [-R, R]")
      ->check(at_least_one());
  cmd->add_flag("--no-figures", a->no_figures, "metrics and tables only (no gnuplot needed)");
  cmd->add_option("--group-by", a->group_by,
                  "config keys that label rows of cross-run tables, comma-separated "
                  "(default: the position types)");
  return {cmd, [a]() {
            analysis::AnalyzeOptions o;
            o.metric = a->metric;
            o.figure_step = a->step;
            o.radius = a->radius;
            o.figures = !a->no_figures;
            bool experiment = false;
            const auto ex =
                analysis::analyze_folder(a->dir, o, split_commas(a->group_by), &experiment);
            for (const auto& r : ex.runs) print_run(r);
            for (const auto& w : ex.warnings) std::cerr << "warning: " << w << "\n";
            std::cout << fmt::format("wrote {}/tables{} and analysis.h5 in {}\n", a->dir,
                                     o.figures ? ", figures" : "",
                                     experiment ? "each run folder" : "the run folder");
            return 0;
          }};
}

}  // namespace relpos::app
