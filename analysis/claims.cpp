#include "analysis/claims.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

#include "analysis/stats.h"

namespace relpos::analysis {
namespace {

constexpr double kAlpha = 0.05;

// seed -> value of the arm's runs (finite values only; the first run of a seed counts).
std::map<int64_t, double> arm_values(const Arm& arm, const std::vector<RunRecord>& runs) {
  std::map<int64_t, double> out;
  for (const auto& r : runs) {
    if (r.group != arm.group) continue;
    const auto it = r.values.find(arm.key);
    if (it != r.values.end() && std::isfinite(it->second)) out.emplace(r.seed, it->second);
  }
  return out;
}

bool has_runs(const std::string& group, const std::vector<RunRecord>& runs) {
  for (const auto& r : runs)
    if (r.group == group) return true;
  return false;
}

std::string default_label(const Comparison& c) {
  switch (c.test) {
    case ClaimTest::correlation:
      return fmt::format("{} against {}", c.a.key, c.b.key);
    case ClaimTest::ratio:
      return fmt::format("{} against {}", c.b.group, c.a.group);
    default:
      if (c.a.group == c.b.group) return fmt::format("{}: {} vs {}", c.a.group, c.a.key, c.b.key);
      return fmt::format("{} vs {}", c.a.group, c.b.group);
  }
}

ComparisonResult paired_part(const Comparison& c, const std::vector<RunRecord>& runs) {
  ComparisonResult r;
  const auto a = arm_values(c.a, runs), b = arm_values(c.b, runs);
  std::vector<double> oriented;
  for (const auto& [seed, va] : a)
    if (const auto it = b.find(seed); it != b.end())
      oriented.push_back(c.higher_is_better ? va - it->second : it->second - va);
  // Tests of H0: oriented mean = −margin (non-inferiority), or = 0 (better).
  const double margin = c.test == ClaimTest::not_worse ? c.margin : 0.0;
  r.paired = paired_test(oriented, 0.95, -margin);
  r.n = r.paired.n;
  // Reported as a − b, whichever way is better.
  r.effect = c.higher_is_better ? r.paired.mean : -r.paired.mean;
  r.lo = c.higher_is_better ? r.paired.lo : -r.paired.hi;
  r.hi = c.higher_is_better ? r.paired.hi : -r.paired.lo;
  r.verdict = judge_paired(r.paired, margin, &r.note);
  if (r.n == 0)
    r.note = fmt::format("no seed has runs of both {} ({}) and {} ({})", c.a.group, c.a.key,
                         c.b.group, c.b.key);
  return r;
}

ComparisonResult correlation_part(const Comparison& c, const std::vector<RunRecord>& runs) {
  ComparisonResult r;
  std::vector<double> x, y;
  for (const auto& run : runs) {
    if (!c.over.empty() && std::find(c.over.begin(), c.over.end(), run.group) == c.over.end())
      continue;
    const auto ix = run.values.find(c.a.key), iy = run.values.find(c.b.key);
    if (ix == run.values.end() || iy == run.values.end()) continue;
    x.push_back(ix->second);
    y.push_back(c.higher_is_better ? iy->second : -iy->second);  // a worse metric is lower
  }
  r.correlation = pearson_test(x, y);
  r.n = r.correlation.n;
  r.effect = r.correlation.r;
  r.lo = r.correlation.lo;
  r.hi = r.correlation.hi;
  r.verdict = judge_correlation(r.correlation, &r.note);
  return r;
}

ComparisonResult ratio_part(const Comparison& c, const std::vector<RunRecord>& runs) {
  ComparisonResult r;
  std::vector<double> a, b;
  for (const auto& [seed, v] : arm_values(c.a, runs)) a.push_back(v);
  for (const auto& [seed, v] : arm_values(c.b, runs)) b.push_back(v);
  r.n = std::min(a.size(), b.size());
  r.lo = r.hi = kNaN;
  r.effect = r.n == 0 ? kNaN : mean(b) / mean(a);
  // An exact count: no sampling error, so no interval and no n threshold.
  if (r.n == 0 || !std::isfinite(r.effect)) {
    r.verdict = Verdict::inconclusive;
    r.note = "no count for one of the two";
  } else {
    r.verdict = r.effect >= c.margin ? Verdict::supported : Verdict::not_supported;
  }
  return r;
}

}  // namespace

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::supported:
      return "supported";
    case Verdict::not_supported:
      return "not supported";
    default:
      return "inconclusive";
  }
}

Verdict judge_paired(const PairedTest& t, double margin, std::string* why) {
  std::string reason;
  Verdict v = Verdict::inconclusive;
  const double bound = margin == 0 ? 0.0 : -margin;  // no "-0" in the reason
  // NaN sign-flip p (more pairs than are enumerated) leaves the interval to decide.
  const auto below = [](double p) { return std::isnan(p) || p < kAlpha; };
  if (t.n < kMinSeedsForVerdict) {
    reason = fmt::format("n = {} < {} seeds", t.n, kMinSeedsForVerdict);
  } else if (t.lo > -margin && below(t.flip_greater)) {
    v = Verdict::supported;
  } else if (t.hi < -margin && below(t.flip_less)) {
    v = Verdict::not_supported;
  } else if (t.lo > -margin || t.hi < -margin) {
    reason = fmt::format("the interval excludes {:g} but the sign-flip test does not (p = {:.3g})",
                         bound, t.lo > -margin ? t.flip_greater : t.flip_less);
  } else {
    reason = fmt::format("the 95% interval includes {:g}", bound);
  }
  if (why) *why = reason;
  return v;
}

Verdict judge_correlation(const CorrelationTest& t, std::string* why) {
  std::string reason;
  Verdict v = Verdict::inconclusive;
  if (t.n < kMinSeedsForVerdict) {
    reason = fmt::format("n = {} < {} runs", t.n, kMinSeedsForVerdict);
  } else if (std::isnan(t.r)) {
    reason = "undefined correlation (a constant column)";
  } else if (t.lo > 0) {
    v = Verdict::supported;
  } else if (t.hi < 0) {
    v = Verdict::not_supported;
  } else {
    reason = "the 95% interval includes 0";
  }
  if (why) *why = reason;
  return v;
}

Verdict combine(const std::vector<Verdict>& parts) {
  if (parts.empty()) return Verdict::inconclusive;
  bool all = true;
  for (Verdict v : parts) {
    if (v == Verdict::not_supported) return Verdict::not_supported;
    all = all && v == Verdict::supported;
  }
  return all ? Verdict::supported : Verdict::inconclusive;
}

ClaimResult evaluate_claim(const Claim& c, const std::vector<RunRecord>& runs) {
  ClaimResult out;
  out.claim = c;
  std::vector<Verdict> verdicts;
  for (const auto& cmp : c.comparisons) {
    if (cmp.optional && cmp.test != ClaimTest::correlation) {
      std::string missing;
      for (const Arm* arm : {&cmp.a, &cmp.b})
        if (!has_runs(arm->group, runs) && missing.find(arm->group) == std::string::npos)
          missing += (missing.empty() ? "" : ", ") + arm->group;
      if (!missing.empty()) {
        out.note += fmt::format("{}{} left out: no runs of {} here.", out.note.empty() ? "" : " ",
                                cmp.label.empty() ? default_label(cmp) : cmp.label, missing);
        continue;
      }
    }
    ComparisonResult r = cmp.test == ClaimTest::correlation ? correlation_part(cmp, runs)
                         : cmp.test == ClaimTest::ratio     ? ratio_part(cmp, runs)
                                                            : paired_part(cmp, runs);
    r.comparison = cmp;
    r.label = cmp.label.empty() ? default_label(cmp) : cmp.label;
    verdicts.push_back(r.verdict);
    out.parts.push_back(std::move(r));
  }
  out.verdict = combine(verdicts);
  if (out.parts.empty())
    out.note += std::string(out.note.empty() ? "" : " ") + "Nothing left to compare.";
  return out;
}

}  // namespace relpos::analysis
