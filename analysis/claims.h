// Claims and verdicts (docs/analysis.md, "Claims and verdicts"). Claims are data: the `claims:`
// block of an experiment's or a sweep's YAML (core/config/claims_config.h). This engine measures
// each comparison on per-run records, applies the testability gates, and decides the verdicts of
// a family of claims together:
//
//   measure_claim   the numbers of each comparison (effect, interval with the evaluation set's
//                   noise, p-values, smallest detectable effect) and the gates that need only the
//                   claim's own runs: (b) every run of an arm at the metric's floor or ceiling, or
//                   both arms at chance; (c) runs that read position-table rows the stage never
//                   trained before it started (RunRecord value "untrained_rows")
//   decide          over a family (an experiment, or every experiment of results/CLAIMS.md):
//                   Holm-adjusted p over every comparison that passed (b) and (c); then (a) a
//                   claim whose required regime check is not supported is not testable; then
//                   verdicts from the adjusted p; (d) an inconclusive comparison whose smallest
//                   detectable effect exceeds its target effect is not testable (power)
//
// Four verdicts: supported / not supported (testable here, and the data go the other way) /
// inconclusive / not testable here (with the reason and what testing it would take).
#pragma once

#include <string>
#include <vector>

#include "analysis/tables.h"
#include "core/config/claims_config.h"

namespace relpos::analysis {

enum class Verdict { supported, not_supported, inconclusive, not_testable };
// "supported", "not supported", "inconclusive", "not testable here"
std::string verdict_name(Verdict v);
Verdict verdict_from_name(const std::string& name);  // inverse; inconclusive when unknown

// The family-wise error rate of the verdicts (Holm).
constexpr double kFamilyAlpha = 0.05;

struct ComparisonResult {
  ComparisonConfig spec;
  std::string label;
  size_t n = 0;             // pairs (better, not_worse), runs (correlation, ratio)
  double effect = 0;        // a − b in the metric's unit; correlation: r; ratio: b / a
  double lo = 0, hi = 0;    // its 95% interval (NaN: none)
  double sd = 0;            // paired: sd of the differences over seeds
  double eval_var = 0;      // paired: the evaluation set's variance of the mean difference
  bool eval_noise = false;  // paired: eval_var is known for every run compared
  double t = 0;             // paired: oriented (positive = the claimed way)
  double p_two = 0;         // raw two-sided p (paired t with eval noise; correlation: bootstrap)
  double p_adjusted = 0;    // Holm over the family; NaN: not in it
  double flip_p = 0;        // paired: exact one-sided sign-flip p in the claimed direction
  double cohen_dz = 0;      // paired: mean / sd of the oriented differences
  double mde = 0;           // paired: smallest effect detected with 80% power (one-sided 0.05)
  size_t seeds_needed = 0;  // paired: seeds to detect target_effect (0: none given / unreachable)
  double r_plain = 0;       // correlation: r without partialling out
  std::string measured_gate;  // gates (b) and (c) of measure_claim: not testable, and why
  std::string gate;           // decide(): the final reason it is not testable (b, c, a or d)
  Verdict verdict = Verdict::inconclusive;
  std::string note;  // measure_claim: what the numbers rest on ("25 runs in 5 seed clusters")
  std::string why;   // decide(): why it is inconclusive, and what would detect the target
};

struct ClaimResult {
  std::string experiment;  // the experiment (or sweep folder) whose claim it is
  ClaimConfig claim;
  std::vector<ComparisonResult> parts;
  Verdict verdict = Verdict::inconclusive;
  std::string note;  // comparisons left out (optional arms without runs), pooled correlations
  std::string gate;  // the claim-level reason it is not testable here (regime check, power, ...)
  std::vector<ProvenanceConfig> provenance;  // the experiment's changes that name this claim
};

// Per-run records carry: group, seed, stage, settings (the runs' varied settings other than
// position.type and seed: paired comparisons match runs with the same seed and settings), the
// values, "var:<key>" (the evaluation set's sampling variance of a value, when known) and
// "untrained_rows" (position-table rows read in this stage that no earlier stage trained).
ClaimResult measure_claim(const ClaimConfig& claim, const std::vector<RunRecord>& runs);

// Decides every claim of the family in place (see the file comment).
void decide(std::vector<ClaimResult>& family);

// measure_claim for each claim of `claims`, then decide; `experiment` names them.
std::vector<ClaimResult> judge(const std::vector<ClaimConfig>& claims,
                               const std::vector<RunRecord>& runs, const std::string& experiment,
                               const std::vector<ProvenanceConfig>& provenance = {});

// `text` with every "{name}" of `values` replaced by its value.
std::string expand_text(std::string text, const std::map<std::string, std::string>& values);
// The claim config with the placeholders of `values` ({T}, {longest}, {N}, ...) replaced in its
// metric text and in every comparison's keys and label.
ClaimConfig expand_placeholders(ClaimConfig claim, const std::map<std::string, std::string>& values);

}  // namespace relpos::analysis
