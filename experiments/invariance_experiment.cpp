// invariance: absolute encodings (learned, sinusoidal) and TISA stacked on learned, with dense
// snapshots, to follow translation invariance during training against the validation metric
// (Wennberg & Henter 2021); and a training_length stage (<scale>-training_length.yaml: the
// variants with a learned table at shorter training lengths) so that invariance and
// performance are correlated across a designed factor within each variant, not across seeds.
// The claims are in configs/experiments/invariance/mini.yaml.
#include <filesystem>

#include "experiments/experiment_context.h"
#include "experiments/stage_records.h"

namespace relpos {
namespace fs = std::filesystem;

namespace {

constexpr const char* kLengthStage = "training_length";

std::string run_invariance(ExperimentContext& ctx) {
  ctx.sweep("", {ctx.config_file()}, ctx.config().sweep.grid);
  const std::string part = ctx.part_config(kLengthStage);
  ctx.sweep(kLengthStage, {part}, load_config({part}, ctx.sets_for(kLengthStage)).config.sweep.grid);
  const std::string length_dir = (fs::path(ctx.dir()) / kLengthStage).string();
  // The stage's report has a row per variant and training length (a mean over seeds only);
  // its claims pair runs by variant, with the length as a setting.
  auto lengths = ctx.analyze(length_dir, {"position.type", "train.steps"});
  ctx.report(length_dir, lengths);
  for (auto& run : lengths.runs) run.info.group = analysis::variant_group(run.info);
  const auto result = ctx.analyze(ctx.dir());
  auto records = stage_records(result, "");
  // The factor's levels: the stage's shorter runs and the main runs of the same variants.
  auto factor = stage_records(lengths, kLengthStage);
  for (auto r : records) {
    r.stage = kLengthStage;
    r.settings["train.steps"] = std::to_string(ctx.config().train.steps);
    factor.push_back(r);
  }
  records.insert(records.end(), factor.begin(), factor.end());
  ctx.judge_claims(records);
  return ctx.report(ctx.dir(), result);
}

}  // namespace

ExperimentInfo invariance_experiment() {
  return {"invariance", "translation invariance of position embeddings during training",
          run_invariance, {kLengthStage}};
}

}  // namespace relpos
