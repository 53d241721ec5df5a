// quickstart: a small byte-level MLM under seven position encodings on the built-in corpus,
// evaluated at 1x, 2x and 4x its training length, with every figure and the report.
#include "experiments/experiment.h"

namespace relpos {

ExperimentInfo quickstart_experiment() {
  return {"quickstart",
          "small MLM under seven position encodings, length extrapolation, figures and report",
          [](ExperimentContext& ctx) {
            auto runs = ctx.sweep("", {ctx.config_file()}, ctx.config().sweep.grid);
            ctx.evaluate_lengths(run_dirs(runs));
            return ctx.analyze_and_report(ctx.dir());
          }};
}

}  // namespace relpos
