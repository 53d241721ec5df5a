#include "experiments/regime_claim.h"

#include "analysis/figures.h"
#include "analysis/units.h"
#include "core/task/registry.h"

namespace relpos {

PrimaryMetricKey primary_metric_key(const Config& cfg, const std::string& prefix) {
  const MetricInfo& m = task_info(cfg.task.type).primary();
  const std::string name = "valid_" + m.name;
  return {prefix + name,
          analysis::with_unit(analysis::metric_axis_label(name, cfg.task.type),
                              analysis::metric_unit(name, cfg.task.type, cfg.data.tokenizer)),
          m.higher_is_better};
}

analysis::Claim regime_claim(const std::string& id_prefix, const Config& cfg,
                             const std::string& prefix) {
  const PrimaryMetricKey m = primary_metric_key(cfg, prefix);
  // A multi-stage experiment checks the regime of its first (pre-training) stage.
  return regime_claim(id_prefix, m.key, prefix.empty() ? m.words : "pre-training: " + m.words,
                      m.higher_is_better);
}

analysis::Claim regime_claim(const std::string& id_prefix, const std::string& metric_key,
                             const std::string& metric, bool higher_is_better) {
  analysis::Claim c;
  c.id = id_prefix + "-regime";
  c.quote = "learned and sinusoidal beat none";
  c.source = "relpos DESIGN §6, regime check (position must be used before encodings compare)";
  c.metric = metric;
  for (const char* v : {"learned", "sinusoidal"}) {
    analysis::Comparison cmp;
    cmp.test = analysis::ClaimTest::better;
    cmp.a = {v, metric_key};
    cmp.b = {"none", metric_key};
    cmp.higher_is_better = higher_is_better;
    cmp.optional = true;
    c.comparisons.push_back(cmp);
  }
  return c;
}

}  // namespace relpos
