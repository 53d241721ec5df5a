// invariance: absolute encodings (learned, sinusoidal) and TISA stacked on learned, with dense
// snapshots, to follow translation invariance during training against the validation metric
// (Wennberg & Henter 2021, section 3). Claims: the learned table's P·Pᵀ grows more translation
// invariant during training, and its invariance goes with the validation metric across runs.
#include "analysis/run_records.h"
#include "experiments/experiment.h"
#include "experiments/regime_claim.h"

namespace relpos {

namespace {

std::vector<analysis::Claim> invariance_claims(const Config& cfg) {
  const PrimaryMetricKey m = primary_metric_key(cfg);
  const std::string source = "Wennberg & Henter 2021, abstract";
  analysis::Claim grows{"invariance-grows-in-training",
                        "The degree of translation invariance increases during training",
                        source,
                        "translation invariance (0–1) of P·Pᵀ of the learned table: last snapshot "
                        "against step 0 of the same run",
                        {}};
  for (const char* v : {"learned", "learned+tisa"}) {
    analysis::Comparison c;
    c.a = {v, "inv_last:gram:learned"};
    c.b = {v, "inv_first:gram:learned"};
    c.optional = true;
    c.label = std::string(v) + ": last vs first snapshot";
    grows.comparisons.push_back(c);
  }
  std::string metric =
      "Pearson r across runs with a learned table: final P·Pᵀ invariance (0–1) "
      "against the final " +
      m.words;
  if (!m.higher_is_better)
    metric +=
        " (negated: lower is better, so r > 0 means higher invariance goes with a better "
        "model)";
  analysis::Claim goes_with{"invariance-goes-with-metric",
                            "correlates positively with model performance",
                            source,
                            metric,
                            {}};
  analysis::Comparison r;
  r.test = analysis::ClaimTest::correlation;
  r.a = {"", "inv_last:gram:learned"};
  r.b = {"", m.key};
  r.higher_is_better = m.higher_is_better;
  r.over = {"learned", "learned+tisa"};
  r.label = "final invariance against final metric (learned, learned+tisa runs)";
  goes_with.comparisons.push_back(r);
  return {regime_claim("invariance", cfg), grows, goes_with};
}

}  // namespace

ExperimentInfo invariance_experiment() {
  return {"invariance", "translation invariance of position embeddings during training",
          [](ExperimentContext& ctx) {
            ctx.sweep("", {ctx.config_file()}, ctx.config().sweep.grid);
            const auto result = ctx.analyze(ctx.dir());
            ctx.judge_claims(analysis::run_records(result.runs));
            return ctx.report(ctx.dir(), result);
          },
          {},
          invariance_claims};
}

}  // namespace relpos
