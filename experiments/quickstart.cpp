// quickstart: a small byte-level causal LM under five position encodings, five seeds each, on the
// built-in corpus, evaluated at 1x, 2x and 4x its training length, with every figure and the
// report. Its claim (configs/experiments/quickstart/mini.yaml) is the regime check: the absolute
// encodings must use position at all (beat `none`).
#include "experiments/experiment_context.h"
#include "experiments/stage_records.h"

namespace relpos {

ExperimentInfo quickstart_experiment() {
  return {"quickstart",
          "small causal LM under five position encodings, five seeds each, length extrapolation, "
          "figures and report",
          [](ExperimentContext& ctx) {
            auto runs = ctx.sweep("", {ctx.config_file()}, ctx.config().sweep.grid);
            ctx.evaluate_lengths(run_dirs(runs));
            const auto result = ctx.analyze(ctx.dir());
            ctx.judge_claims(stage_records(result, ""));
            return ctx.report(ctx.dir(), result);
          }};
}

}  // namespace relpos
