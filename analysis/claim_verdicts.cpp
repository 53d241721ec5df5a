// decide(): the verdicts of a family of measured claims (claims.h), by rules only.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/claims.h"
#include "analysis/inference.h"
#include "analysis/evidence_stats.h"
#include "analysis/stats.h"

namespace relpos::analysis {

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::supported:
      return "supported";
    case Verdict::not_supported:
      return "not supported";
    case Verdict::not_testable:
      return "not testable here";
    default:
      return "inconclusive";
  }
}

Verdict verdict_from_name(const std::string& name) {
  for (Verdict v : {Verdict::supported, Verdict::not_supported, Verdict::not_testable})
    if (verdict_name(v) == name) return v;
  return Verdict::inconclusive;
}

namespace {

bool tested(const ComparisonResult& r) {
  return r.measured_gate.empty() && r.spec.test != "ratio" && std::isfinite(r.p_two) &&
         r.n >= kMinSeedsForVerdict;
}

// The verdict of one comparison from its adjusted p, or the reason it stays inconclusive.
void judge_part(ComparisonResult& r) {
  if (!r.gate.empty()) {
    r.verdict = Verdict::not_testable;
    return;
  }
  if (r.spec.test == "ratio") {  // exact counts: no sampling error
    r.verdict = !std::isfinite(r.effect)       ? Verdict::inconclusive
                : r.effect >= r.spec.margin ? Verdict::supported
                                               : Verdict::not_supported;
    return;
  }
  if (r.n < kMinSeedsForVerdict) {
    r.verdict = Verdict::inconclusive;
    r.why = fmt::format("n = {} < {} seeds", r.n, kMinSeedsForVerdict);
    return;
  }
  const bool claimed_way = r.spec.test == "correlation" ? r.effect > 0 : r.t > 0;
  if (r.p_adjusted < kFamilyAlpha) {
    r.verdict = claimed_way ? Verdict::supported : Verdict::not_supported;
    return;
  }
  r.verdict = Verdict::inconclusive;
  r.why = fmt::format("Holm-adjusted p = {:.3g} >= {:g}", r.p_adjusted, kFamilyAlpha);
  if (r.spec.test == "correlation" || !std::isfinite(r.mde)) return;
  const std::string need =
      r.spec.target_effect <= 0 ? ""
      : r.seeds_needed > 0
          ? fmt::format("; {} seeds would detect {:g}", r.seeds_needed, r.spec.target_effect)
          : fmt::format("; no number of seeds detects {:g}: the evaluation set's own noise is "
                        "larger (score more examples)",
                        r.spec.target_effect);
  r.why += fmt::format("; detects {:.3g} at 80% power{}", r.mde, need);
  // Gate (d): the runs cannot detect the effect the source reports (or a stated meaningful size).
  if (r.spec.target_effect > 0 && r.mde > r.spec.target_effect) {
    r.verdict = Verdict::not_testable;
    r.gate = fmt::format("too little power: the smallest effect these runs detect (80% power, "
                         "one-sided 0.05) is {:.3g}, the target is {:g} ({}){}",
                         r.mde, r.spec.target_effect,
                         r.spec.target_note.empty() ? "stated" : r.spec.target_note,
                         r.seeds_needed > 0
                             ? fmt::format("; about {} seeds would detect it", r.seeds_needed)
                             : "; the evaluation set's own noise exceeds it: more examples needed");
  }
}

Verdict combine(const std::vector<ComparisonResult>& parts) {
  if (parts.empty()) return Verdict::inconclusive;
  bool all_supported = true, any_inconclusive = false;
  for (const auto& p : parts) {
    if (p.verdict == Verdict::not_supported) return Verdict::not_supported;
    all_supported = all_supported && p.verdict == Verdict::supported;
    any_inconclusive = any_inconclusive || p.verdict == Verdict::inconclusive;
  }
  if (all_supported) return Verdict::supported;
  return any_inconclusive ? Verdict::inconclusive : Verdict::not_testable;
}

// The regime checks a claim requires: its `requires`, or the regime checks of its stage in the
// same experiment.
std::vector<const ClaimResult*> required_regimes(const ClaimResult& c,
                                                 const std::vector<ClaimResult>& family) {
  std::vector<const ClaimResult*> out;
  for (const auto& other : family) {
    if (&other == &c || other.experiment != c.experiment || other.claim.role != "regime") continue;
    const auto& ids = c.claim.requires_ids;
    const bool named = std::find(ids.begin(), ids.end(), other.claim.id) != ids.end();
    if (named || (ids.empty() && other.claim.stage == c.claim.stage)) out.push_back(&other);
  }
  return out;
}

void gate_by_regime(ClaimResult& c, const std::vector<ClaimResult>& family) {
  // An architecture claim (judged at the source's size) does not depend on what was trained.
  if (c.claim.role == "regime" || !c.claim.paper_size.empty()) return;
  for (const ClaimResult* regime : required_regimes(c, family)) {
    if (regime->verdict == Verdict::supported) continue;
    c.gate = fmt::format("its stage's regime check ({}) is {}: the runs may not use position at "
                         "all, so encodings cannot be compared here",
                         regime->claim.id, verdict_name(regime->verdict));
    for (auto& p : c.parts)
      if (p.gate.empty()) p.gate = "regime check " + regime->claim.id + " not supported";
    return;
  }
}

}  // namespace

void decide(std::vector<ClaimResult>& family) {
  // Holm over every comparison that passed the floor and untrained gates, once: a claim later
  // gated by its regime check still counts in m (conservative, and one m for every verdict).
  std::vector<ComparisonResult*> members;
  std::vector<double> p;
  for (auto& c : family) {
    c.gate.clear();
    for (auto& part : c.parts) {
      part.gate = part.measured_gate;
      part.why.clear();
      part.p_adjusted = kNaN;
      if (tested(part)) members.push_back(&part), p.push_back(part.p_two);
    }
  }
  const std::vector<double> adjusted = holm_adjust(p);
  for (size_t k = 0; k < members.size(); ++k) members[k]->p_adjusted = adjusted[k];
  // Regime checks first: the other claims are gated by them.
  for (bool regimes : {true, false})
    for (auto& c : family) {
      if ((c.claim.role == "regime") != regimes) continue;
      gate_by_regime(c, family);
      for (auto& part : c.parts) judge_part(part);
      c.verdict = combine(c.parts);
      if (c.verdict == Verdict::not_testable && c.gate.empty())
        for (const auto& part : c.parts)
          if (!part.gate.empty()) {
            c.gate = part.gate;
            break;
          }
    }
}

}  // namespace relpos::analysis
