// extrapolation: a causal LM trained at length T and evaluated at T, 2T, 4T and 8T for every
// variant, with nonoverlapping and sliding-window perplexity (Press et al. 2022's protocol).
// An encoding whose table bounds the length is evaluated a second time with the setting the
// registry names for running past it (VariantInfo::eval_keys: `learned` with
// position.learned.beyond=clamp, positions past the table reuse its last row), a row of its own
// named by VariantInfo::past_label: "learned (clamped)".
// Claims (configs/experiments/extrapolation/mini.yaml): sinusoidal, rotary and T5 degrade past
// T while ALiBi's loss stays flat, and ALiBi degrades less than they do (Press et al. 2022).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/position/position_registry.h"
#include "core/train/past_bound.h"
#include "core/train/trainer.h"
#include "experiments/experiment_context.h"
#include "experiments/stage_records.h"

namespace relpos {

ExperimentInfo extrapolation_experiment() {
  return {"extrapolation", "causal LM trained at T, perplexity at T..8T for every variant",
          [](ExperimentContext& ctx) {
            auto runs = ctx.sweep("", {ctx.config_file()}, ctx.config().sweep.grid);
            ctx.evaluate_lengths(run_dirs(runs));
            for (const auto& [setting, label_runs] : past_bound_evaluations(run_dirs(runs)))
              ctx.evaluate_lengths(label_runs.second, {setting}, label_runs.first);
            const auto result = ctx.analyze(ctx.dir());
            ctx.judge_claims(stage_records(result, ""));
            return ctx.report(ctx.dir(), result);
          }};
}

}  // namespace relpos
