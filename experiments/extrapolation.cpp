// extrapolation: a causal LM trained at length T and evaluated at T, 2T, 4T and 8T for every
// variant, with nonoverlapping and sliding-window perplexity (Press et al. 2022's protocol).
#include "experiments/experiment.h"

namespace relpos {

ExperimentInfo extrapolation_experiment() {
  return {"extrapolation", "causal LM trained at T, perplexity at T..8T for every variant",
          [](ExperimentContext& ctx) {
            auto runs = ctx.sweep("", {ctx.config_file()}, ctx.config().sweep.grid);
            ctx.evaluate_lengths(run_dirs(runs));
            return ctx.analyze_and_report(ctx.dir());
          }};
}

}  // namespace relpos
