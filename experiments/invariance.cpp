// invariance: absolute encodings (learned, sinusoidal) and TISA stacked on learned, with dense
// snapshots, to follow translation invariance during training against the validation metric
// (Wennberg & Henter 2021, section 3).
#include "experiments/experiment.h"

namespace relpos {

ExperimentInfo invariance_experiment() {
  return {"invariance", "translation invariance of position embeddings during training",
          [](ExperimentContext& ctx) {
            ctx.sweep("", {ctx.config_file()}, ctx.config().sweep.grid);
            return ctx.analyze_and_report(ctx.dir());
          }};
}

}  // namespace relpos
