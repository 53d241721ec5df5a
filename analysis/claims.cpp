#include "analysis/claims.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analysis/evidence_stats.h"
#include "analysis/inference.h"
#include "analysis/stats.h"

namespace relpos::analysis {
namespace {

std::string join_groups(const std::vector<std::string>& groups) {
  std::string s;
  for (size_t i = 0; i < groups.size(); ++i) s += (i ? ", " : "") + groups[i];
  return s;
}

// One run's contribution to an arm: its value (key, minus `minus`), the evaluation variance of
// that value (NaN when unknown), and the unit it pairs by.
struct ArmPoint {
  double value = kNaN, var = kNaN;
  double raw = kNaN, raw_minus = kNaN;  // the operands, for the floor/ceiling gate
  std::string unit;
  const RunRecord* run = nullptr;
};

double value_of(const RunRecord& r, const std::string& key) {
  const auto it = r.values.find(key);
  return it == r.values.end() ? kNaN : it->second;
}


// A variant's own parameter (position.<variant>.<key>). A run's config.yaml holds its own
// variant's block with every default written out, besides the blocks the experiment set, so the
// runs of two variants of one sweep differ there by construction (t5_bias's buckets are absent
// from none's config): that does not make them unpaired.
bool variant_parameter(const std::string& key) {
  const std::string prefix = "position.";
  return key.rfind(prefix, 0) == 0 && key.find('.', prefix.size()) != std::string::npos;
}

// Whether a run has every `where` setting. A condition on a variant's own parameter
// (position.shaw.clip=16) applies to the runs that have that parameter, so it picks among one
// arm's runs and leaves the other variant's runs in.
bool matches(const RunRecord& r, const std::vector<std::string>& where) {
  for (const auto& w : where) {
    const size_t eq = w.find('=');
    const std::string key = w.substr(0, eq);
    const auto it = r.settings.find(key);
    const bool has = it != r.settings.end() && !it->second.empty();
    if (!has && variant_parameter(key)) continue;
    if (!has || it->second != w.substr(eq + 1)) return false;
  }
  return true;
}

// "seed=3" plus every other varied setting (lr, steps, ...): the runs of two arms that are
// compared with each other.
std::string unit_of(const RunRecord& r) {
  std::string u = fmt::format("seed={}", r.seed);
  for (const auto& [k, v] : r.settings)
    if (!variant_parameter(k)) u += fmt::format(",{}={}", k, v);
  return u;
}

// The first unit that two runs of one arm share ("" if none): a sweep over a variant's own
// parameter (position.shaw.clip=8,16) gives one arm two runs per seed, which cannot be paired
// until the claim's `where` picks one.
std::string shared_unit(const std::vector<ArmPoint>& pts) {
  std::set<std::string> seen;
  for (const auto& p : pts)
    if (!seen.insert(p.unit).second) return p.unit;
  return "";
}

std::vector<ArmPoint> arm(const std::string& group, const std::string& key, const std::string& minus,
                          const std::string& stage, const std::vector<std::string>& where,
                          const std::vector<RunRecord>& runs) {
  std::vector<ArmPoint> out;
  for (const auto& r : runs) {
    if (r.group != group || r.stage != stage || !matches(r, where)) continue;
    ArmPoint p;
    p.raw = value_of(r, key);
    p.raw_minus = minus.empty() ? 0.0 : value_of(r, minus);
    p.value = p.raw - p.raw_minus;
    if (!std::isfinite(p.value)) continue;
    const double v = value_of(r, "var:" + key), vm = minus.empty() ? 0.0 : value_of(r, "var:" + minus);
    p.var = v + vm;  // NaN when either is unknown
    p.unit = unit_of(r);
    p.run = &r;
    out.push_back(p);
  }
  return out;
}

bool has_runs(const std::string& group, const std::string& stage,
              const std::vector<RunRecord>& runs) {
  for (const auto& r : runs)
    if (r.group == group && r.stage == stage) return true;
  return false;
}

std::string default_label(const ComparisonConfig& c) {
  if (c.test == "correlation") return fmt::format("{} against {}", c.key, c.y_key);
  if (c.test == "ratio") return fmt::format("{} / {}", c.b, c.a);
  if (c.a == c.b) return fmt::format("{}: {} vs {}", c.a, c.key, c.b_key.empty() ? c.key : c.b_key);
  return fmt::format("{} vs {}", c.a, c.b);
}

// Gate (b): an arm whose every run sits at the metric's floor or ceiling, or both arms at chance.
std::string bound_gate(const ClaimConfig& claim, const std::string& group,
                       const std::vector<ArmPoint>& pts, bool minus_operand) {
  if (claim.bounds.size() != 2 || pts.empty()) return "";
  const double lo = claim.bounds[0], hi = claim.bounds[1], tol = 1e-9 * (hi - lo);
  for (const double bound : {lo, hi}) {
    const bool all = std::all_of(pts.begin(), pts.end(), [&](const ArmPoint& p) {
      return std::abs((minus_operand ? p.raw_minus : p.raw) - bound) <= tol;
    });
    if (all)
      return fmt::format("every run of {} ({}) is at the metric's {} {:g}", group, pts.size(),
                         bound == lo ? "floor" : "ceiling", bound);
  }
  return "";
}

// Whether an arm's mean (its interval widened by the evaluation noise) includes chance.
bool at_chance(const std::vector<ArmPoint>& pts, double chance) {
  std::vector<double> v, ev;
  for (const auto& p : pts) v.push_back(p.value), ev.push_back(std::isfinite(p.var) ? p.var : 0.0);
  const NoisyPairedTest t = noisy_paired_test(v, ev, chance);
  return t.n >= 2 && t.lo <= chance && chance <= t.hi;
}

std::string untrained_gate(const std::string& group, const std::vector<ArmPoint>& pts) {
  double most = 0;
  for (const auto& p : pts) most = std::max(most, value_of(*p.run, "untrained_rows"));
  if (!(most > 0)) return "";
  return fmt::format("{} reads up to {:g} position-table rows that no earlier stage trained (its "
                     "table is longer than the pre-training length)",
                     group, most);
}

std::string gates_of(const ClaimConfig& claim, const ComparisonConfig& c,
                     const std::vector<ArmPoint>& a, const std::vector<ArmPoint>& b) {
  for (const auto& [group, pts] : {std::pair{c.a, &a}, std::pair{c.b, &b}}) {
    if (auto g = bound_gate(claim, group, *pts, false); !g.empty()) return g;
    if (!c.minus.empty())
      if (auto g = bound_gate(claim, group, *pts, true); !g.empty()) return g;
    if (auto g = untrained_gate(group, *pts); !g.empty()) return g;
  }
  if (claim.chance && c.a != c.b && at_chance(a, *claim.chance) && at_chance(b, *claim.chance))
    return fmt::format("both {} and {} are at chance ({:g}) within their intervals", c.a, c.b,
                       *claim.chance);
  return "";
}

ComparisonResult paired_part(const ClaimConfig& claim, const ComparisonConfig& c,
                             const std::vector<RunRecord>& runs) {
  ComparisonResult r;
  const auto a = arm(c.a, c.key, c.minus, claim.stage, c.where, runs);
  const auto b = arm(c.b, c.b_key.empty() ? c.key : c.b_key, c.minus, claim.stage, c.where, runs);
  for (const auto& [group, pts] : {std::pair{c.a, &a}, std::pair{c.b, &b}})
    if (const std::string u = shared_unit(*pts); !u.empty()) {
      r.note = fmt::format("several runs of {} share {} (they differ in the variant's own "
                           "parameters): add `where: [position.<variant>.<key>=<value>]` to pick one",
                           group, u);
      return r;
    }
  std::map<std::string, const ArmPoint*> by_unit;
  for (const auto& p : b) by_unit.emplace(p.unit, &p);
  std::vector<double> oriented, eval_var;
  r.eval_noise = true;
  for (const auto& pa : a) {
    const auto it = by_unit.find(pa.unit);
    if (it == by_unit.end()) continue;
    const double d = pa.value - it->second->value;
    oriented.push_back(c.higher_is_better ? d : -d);
    const double v = pa.var + it->second->var;
    r.eval_noise = r.eval_noise && std::isfinite(v);
    eval_var.push_back(std::isfinite(v) ? v : 0.0);
  }
  const double margin = c.test == "not_worse" ? c.margin : 0.0;
  const NoisyPairedTest t = noisy_paired_test(oriented, eval_var, -margin);
  const PairedTest plain = paired_test(oriented, 0.95, -margin);
  r.n = t.n;
  r.eval_noise = r.eval_noise && r.n > 0;
  r.effect = c.higher_is_better ? t.mean : -t.mean;  // reported as a − b
  r.lo = c.higher_is_better ? t.lo : -t.hi;
  r.hi = c.higher_is_better ? t.hi : -t.lo;
  r.sd = t.sd;
  r.eval_var = t.eval_var;
  r.t = t.t;
  r.p_two = t.p_two;
  r.flip_p = plain.flip_greater;
  r.cohen_dz = plain.cohen_dz;
  r.mde = t.mde;
  r.seeds_needed = c.target_effect > 0 ? seeds_needed(t.sd, t.eval_var, c.target_effect) : 0;
  r.measured_gate = gates_of(claim, c, a, b);
  if (r.n == 0)
    r.note = fmt::format("no runs of {} and {} with the same seed and settings", c.a, c.b);
  return r;
}

std::vector<ComparisonResult> correlation_parts(const ClaimConfig& claim,
                                                const ComparisonConfig& c,
                                                const std::vector<RunRecord>& runs,
                                                std::string& note) {
  std::vector<ComparisonResult> out;
  std::vector<double> all_x, all_y;
  for (const auto& group : c.over) {
    std::vector<double> x, y, z;
    std::vector<int64_t> seeds;
    for (const auto& run : runs) {
      if (run.group != group || run.stage != claim.stage || !matches(run, c.where)) continue;
      const double vx = value_of(run, c.key), vy = value_of(run, c.y_key);
      const double vz = c.partial.empty() ? 0.0 : value_of(run, c.partial);
      if (!std::isfinite(vx) || !std::isfinite(vy) || !std::isfinite(vz)) continue;
      x.push_back(vx), y.push_back(c.higher_is_better ? vy : -vy), seeds.push_back(run.seed);
      if (!c.partial.empty()) z.push_back(vz);
    }
    all_x.insert(all_x.end(), x.begin(), x.end());
    all_y.insert(all_y.end(), y.begin(), y.end());
    ComparisonResult r;
    r.spec = c;
    r.label = fmt::format("{}: {} against {}{}", group, c.key, c.y_key,
                          c.partial.empty() ? "" : " given " + c.partial);
    const ClusterCorrelation cc = cluster_bootstrap_correlation(x, y, z, seeds);
    r.n = cc.n;
    r.effect = cc.r;
    r.lo = cc.lo;
    r.hi = cc.hi;
    r.p_two = cc.p_two;
    r.r_plain = partial_correlation(x, y, {});
    r.note = fmt::format("{} runs in {} seed clusters", cc.n, cc.clusters);
    out.push_back(r);
  }
  const double pooled = partial_correlation(all_x, all_y, {});
  if (c.over.size() > 1 && std::isfinite(pooled))
    note += fmt::format("{}Pooled over {} (description, not judged: the groups differ in level): "
                        "r = {:.3f}.",
                        note.empty() ? "" : " ", join_groups(c.over), pooled);
  return out;
}

ComparisonResult ratio_part(const ClaimConfig& claim, const ComparisonConfig& c,
                            const std::vector<RunRecord>& runs) {
  ComparisonResult r;
  std::vector<double> a, b;
  for (const auto& p : arm(c.a, c.key, "", claim.stage, c.where, runs)) a.push_back(p.value);
  for (const auto& p : arm(c.b, c.key, "", claim.stage, c.where, runs)) b.push_back(p.value);
  r.n = std::min(a.size(), b.size());
  r.lo = r.hi = r.p_two = kNaN;
  r.effect = r.n == 0 ? kNaN : mean(b) / mean(a);
  if (r.n == 0 || !std::isfinite(r.effect)) r.note = "no count for one of the two";
  return r;
}

}  // namespace

ClaimResult measure_claim(const ClaimConfig& claim, const std::vector<RunRecord>& runs) {
  ClaimResult out;
  out.claim = claim;
  for (const auto& c : claim.comparisons) {
    if (c.optional && c.test != "correlation") {
      std::vector<std::string> missing;
      for (const auto* g : {&c.a, &c.b})
        if (!has_runs(*g, claim.stage, runs) &&
            std::find(missing.begin(), missing.end(), *g) == missing.end())
          missing.push_back(*g);
      if (!missing.empty()) {
        out.note += fmt::format("{}{} left out: no runs of {} here.", out.note.empty() ? "" : " ",
                                c.label.empty() ? default_label(c) : c.label, join_groups(missing));
        continue;
      }
    }
    if (c.test == "correlation") {
      for (auto& r : correlation_parts(claim, c, runs, out.note)) out.parts.push_back(r);
      continue;
    }
    ComparisonResult r = c.test == "ratio" ? ratio_part(claim, c, runs) : paired_part(claim, c, runs);
    r.spec = c;
    r.label = c.label.empty() ? default_label(c) : c.label;
    out.parts.push_back(std::move(r));
  }
  if (out.parts.empty())
    out.note += std::string(out.note.empty() ? "" : " ") + "Nothing left to compare.";
  return out;
}

std::vector<ClaimResult> judge(const std::vector<ClaimConfig>& claims,
                               const std::vector<RunRecord>& runs, const std::string& experiment,
                               const std::vector<ProvenanceConfig>& provenance) {
  std::vector<ClaimResult> out;
  for (const auto& c : claims) {
    ClaimResult r = measure_claim(c, runs);
    r.experiment = experiment;
    for (const auto& p : provenance)
      if (std::find(p.claims.begin(), p.claims.end(), c.id) != p.claims.end())
        r.provenance.push_back(p);
    out.push_back(std::move(r));
  }
  decide(out);
  return out;
}

std::string expand_text(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [name, value] : values)
    for (size_t at; (at = text.find("{" + name + "}")) != std::string::npos;)
      text.replace(at, name.size() + 2, value);
  return text;
}

ClaimConfig expand_placeholders(ClaimConfig claim, const std::map<std::string, std::string>& values) {
  const auto expand = [&](std::string& s) { s = expand_text(s, values); };
  expand(claim.metric);
  for (auto& c : claim.comparisons)
    for (std::string* s : {&c.key, &c.b_key, &c.minus, &c.y_key, &c.partial, &c.label}) expand(*s);
  return claim;
}

}  // namespace relpos::analysis
