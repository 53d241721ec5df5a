// extrapolation: a causal LM trained at length T and evaluated at T, 2T, 4T and 8T for every
// variant, with nonoverlapping and sliding-window perplexity (Press et al. 2022's protocol).
// An encoding whose table bounds the length is evaluated a second time with the setting the
// registry names for running past it (VariantInfo::eval_keys: `learned` with
// position.learned.beyond=clamp, positions past the table reuse its last row), a row of its own
// named by VariantInfo::past_label: "learned (clamped)".
// Claims: relative and bias encodings degrade less past T than absolute ones, and ALiBi's loss
// stays flat (Press et al. 2022).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "analysis/run_records.h"
#include "core/position/registry.h"
#include "core/train/past_bound.h"
#include "core/train/trainer.h"
#include "experiments/experiment.h"
#include "experiments/regime_claim.h"

namespace relpos {
namespace {

// The training length and the longest evaluation length of the config.
std::pair<int64_t, int64_t> lengths(const Config& cfg) {
  const int64_t T = cfg.task.seq_len;
  const auto& l = cfg.eval.lengths;
  return {T, l.empty() ? 4 * T : *std::max_element(l.begin(), l.end())};
}

// The flat-loss margin: a change below 0.05 nats per token (5% perplexity) counts as flat.
constexpr double kFlatMargin = 0.05;

std::vector<analysis::Claim> extrapolation_claims(const Config& cfg) {
  const auto [T, longest] = lengths(cfg);
  const std::string unit = cfg.data.tokenizer == "bytes" ? "nats/byte" : "nats/token";
  analysis::Claim degrade{
      "extrapolation-relative-degrades-less",
      "extrapolation can be enabled by simply changing the position representation method",
      "Press et al. 2022, abstract and Figure 1",
      fmt::format("change of the test loss ({}, nonoverlapping chunks) from the training length "
                  "{} to {}; lower is better",
                  unit, T, longest),
      {}};
  for (const char* rel : {"alibi", "t5_bias", "rope"})
    for (const char* abs : {"sinusoidal", "learned (clamped)"}) {
      analysis::Comparison c;
      c.a = {rel, "loss_change"};
      c.b = {abs, "loss_change"};
      c.higher_is_better = false;
      c.optional = true;
      degrade.comparisons.push_back(c);
    }
  analysis::Claim flat{"extrapolation-alibi-flat", "but our method (§3) does not",
                       "Press et al. 2022, Figure 1 (sinusoidal, rotary and T5 \"show degraded "
                       "perplexity\")",
                       fmt::format("ALiBi's test loss ({}, nonoverlapping chunks) at {} against "
                                   "at the training length {}: not worse by more than {:g}",
                                   unit, longest, T, kFlatMargin),
                       {}};
  analysis::Comparison c;
  c.test = analysis::ClaimTest::not_worse;
  c.a = {"alibi", fmt::format("loss@{}", longest)};
  c.b = {"alibi", fmt::format("loss@{}", T)};
  c.higher_is_better = false;
  c.margin = kFlatMargin;
  c.optional = true;
  c.label = fmt::format("alibi: loss at {} vs at {}", longest, T);
  flat.comparisons.push_back(c);
  return {regime_claim("extrapolation", cfg), degrade, flat};
}

}  // namespace

ExperimentInfo extrapolation_experiment() {
  return {"extrapolation", "causal LM trained at T, perplexity at T..8T for every variant",
          [](ExperimentContext& ctx) {
            auto runs = ctx.sweep("", {ctx.config_file()}, ctx.config().sweep.grid);
            ctx.evaluate_lengths(run_dirs(runs));
            for (const auto& [setting, label_runs] : past_bound_evaluations(run_dirs(runs)))
              ctx.evaluate_lengths(label_runs.second, {setting}, label_runs.first);
            const auto result = ctx.analyze(ctx.dir());
            auto records = analysis::run_records(result.runs);
            const auto [T, longest] = lengths(ctx.config());
            analysis::add_difference(records, "loss_change", fmt::format("loss@{}", longest),
                                     fmt::format("loss@{}", T));
            ctx.judge_claims(records);
            return ctx.report(ctx.dir(), result);
          },
          {},
          extrapolation_claims};
}

}  // namespace relpos
