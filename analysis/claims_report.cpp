#include "analysis/claims_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/inference.h"
#include "analysis/tables.h"
#include "core/util/errors.h"
#include "core/util/paths.h"

namespace relpos::analysis {
namespace fs = std::filesystem;
namespace {

// Three significant digits, "—" for NaN; `sign` writes "+" before positive numbers.
std::string num(double v, bool sign = false) {
  if (std::isnan(v)) return "—";
  if (std::isinf(v)) return v > 0 ? "∞" : "−∞";
  return sign ? fmt::format("{:+.3g}", v) : fmt::format("{:.3g}", v);
}

std::string p_value(double p) {
  if (std::isnan(p)) return "—";
  return p < 0.001 ? std::string("< 0.001") : fmt::format("{:.3f}", p);
}

bool paired(const ComparisonResult& r) {
  return r.spec.test == "better" || r.spec.test == "not_worse";
}

// The claimed direction, in words the effect column uses.
std::string claimed(const ComparisonConfig& c) {
  if (c.test == "better") return c.higher_is_better ? "a − b > 0" : "a − b < 0";
  if (c.test == "not_worse")
    return c.higher_is_better ? fmt::format("a − b > −{:g}", c.margin)
                              : fmt::format("a − b < {:g}", c.margin);
  if (c.test == "correlation") return c.partial.empty() ? "r > 0" : "partial r > 0";
  return fmt::format("b / a ≥ {:g}", c.margin);
}

std::string effect_text(const ComparisonResult& r) {
  if (r.spec.test == "correlation")
    return fmt::format("r = {} [{}, {}] (plain r {})", num(r.effect), num(r.lo), num(r.hi),
                       num(r.r_plain));
  if (r.spec.test == "ratio")
    return std::isfinite(r.effect)
               ? fmt::format("×{} (10^{:.2f}; exact counts)", num(r.effect), std::log10(r.effect))
               : "—";
  return r.n >= 2 ? fmt::format("{} [{}, {}]", num(r.effect, true), num(r.lo, true), num(r.hi, true))
                  : num(r.effect, true);
}

std::string verdict_cell(const ComparisonResult& r) {
  const std::string why = r.verdict == Verdict::not_testable ? r.gate : r.why;
  return why.empty() ? verdict_name(r.verdict) : fmt::format("{} ({})", verdict_name(r.verdict), why);
}

std::string claim_verdict_cell(const ClaimResult& c) {
  return c.verdict == Verdict::not_testable && !c.gate.empty()
             ? fmt::format("**{}** ({})", verdict_name(c.verdict), c.gate)
             : fmt::format("**{}**", verdict_name(c.verdict));
}

void summary_table(std::ostringstream& md, const std::vector<ClaimResult>& claims) {
  md << "| # | claim | source | metric | verdict |\n|---:|:---|:---|:---|:---|\n";
  for (size_t k = 0; k < claims.size(); ++k) {
    const ClaimConfig& c = claims[k].claim;
    md << fmt::format("| {} | \"{}\"{} | {} | {} | {} |\n", k + 1, markdown_escape(c.quote),
                      c.role == "regime" ? " (regime check)" : "", markdown_escape(c.source),
                      markdown_escape(c.metric), markdown_escape(claim_verdict_cell(claims[k])));
  }
}

void comparison_table(std::ostringstream& md, const std::vector<ClaimResult>& claims) {
  md << "\n| # | comparison (a vs b) | claimed | n | effect (95% CI) | eval. noise | d_z | "
        "p | Holm p | sign-flip p | detects (80%) | verdict |\n"
        "|---:|:---|:---|---:|:---|:---|---:|---:|---:|---:|---:|:---|\n";
  for (size_t k = 0; k < claims.size(); ++k)
    for (const auto& r : claims[k].parts) {
      const bool pr = paired(r);
      md << fmt::format(
          "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", k + 1,
          markdown_escape(r.label), claimed(r.spec), r.n, effect_text(r),
          !pr ? "—" : r.eval_noise ? fmt::format("± {}", num(1.96 * std::sqrt(r.eval_var))) : "not known",
          pr ? num(r.cohen_dz) : "—", p_value(r.p_two), p_value(r.p_adjusted),
          pr ? p_value(r.flip_p) : "—", pr ? num(r.mde) : "—", markdown_escape(verdict_cell(r)));
    }
}

void not_testable_list(std::ostringstream& md, const std::vector<ClaimResult>& claims) {
  std::ostringstream list;
  for (size_t k = 0; k < claims.size(); ++k) {
    const auto& c = claims[k];
    std::vector<std::string> reasons;
    if (!c.gate.empty()) reasons.push_back(c.gate);
    for (const auto& p : c.parts)
      if (p.verdict == Verdict::not_testable && p.gate != c.gate)
        reasons.push_back(p.label + ": " + p.gate);
    if (reasons.empty()) continue;
    list << fmt::format("- Claim {} (\"{}\"): ", k + 1, c.claim.quote);
    for (size_t i = 0; i < reasons.size(); ++i) list << (i ? "; " : "") << reasons[i];
    list << ". "
         << (c.claim.to_test.empty() ? std::string("What testing it would take is not stated.")
                                     : "To test it: " + c.claim.to_test)
         << "\n";
  }
  if (list.str().empty()) return;
  md << "\n### Not testable here\n\n" << list.str();
}

void provenance_list(std::ostringstream& md, const std::vector<ClaimResult>& claims) {
  std::vector<const ProvenanceConfig*> seen;
  std::ostringstream list;
  for (const auto& c : claims)
    for (const auto& p : c.provenance) {
      if (std::any_of(seen.begin(), seen.end(), [&](const ProvenanceConfig* q) {
            return q->change == p.change;
          }))
        continue;
      seen.push_back(&p);
      list << fmt::format("- {} Why: {} Claims it touched: {}.{}\n", p.change, p.why,
                          p.claims.empty() ? "none named" : fmt::format("{}", fmt::join(p.claims, ", ")),
                          p.moved.empty() ? "" : " What it moved: " + p.moved);
    }
  if (seen.empty()) return;
  md << "\n### Configuration changes made after a result was seen\n\n" << list.str();
}

}  // namespace

std::string claim_summary(const ClaimResult& c) {
  std::string out;
  for (const auto& r : c.parts)
    out += fmt::format("{}{}: {}, n = {}", out.empty() ? "" : "; ", r.label, effect_text(r), r.n);
  if (!c.note.empty()) out += (out.empty() ? "" : ". ") + c.note;
  return out;
}

std::string claims_markdown(const std::vector<ClaimResult>& claims, const std::string& family_note) {
  std::ostringstream md;
  md << "## Claims\n\n";
  if (claims.empty()) {
    md << "This experiment declares no claims.\n";
    return md.str();
  }
  summary_table(md, claims);
  comparison_table(md, claims);
  for (size_t k = 0; k < claims.size(); ++k)
    if (!claims[k].note.empty()) md << "\nClaim " << k + 1 << ": " << claims[k].note << "\n";
  not_testable_list(md, claims);
  provenance_list(md, claims);
  md << "\nEffects are a − b in the metric's unit (correlation: Pearson r of the runs of one "
        "variant, partial r where a value is partialled out, with a percentile interval from "
        "resampling whole seeds; ratio: b / a of exact counts). The interval and p include the "
        "evaluation set's sampling noise where the runs record it (\"eval. noise\": ± 1.96 × its "
        "standard error, added to the seed variance; docs/analysis.md). p: two-sided paired t "
        "test over seeds (runs with the same seed and settings); Holm p: adjusted over every "
        "comparison of the family ("
     << family_note
     << "); sign-flip p: the exact one-sided permutation test, a check that needs no normality "
        "(with 5 seeds it cannot go below 1/32). \"detects (80%)\": the smallest effect these runs "
        "detect with 80% power at one-sided 0.05. Verdicts (docs/analysis.md, \"Claims and "
        "verdicts\"): **supported** / **not supported** when the Holm-adjusted p is below 0.05 "
        "and the effect goes the claimed way / the other way; **not testable here** when a gate "
        "says the runs cannot test it (its regime check not supported, runs at the metric's "
        "floor or ceiling or both at chance, parameters never trained, or too little power for "
        "the effect the source reports); **inconclusive** otherwise. A claim of several "
        "comparisons is supported when all are, not supported when one is not.\n";
  return md.str();
}

std::string write_claims(const std::string& dir, const std::string& experiment,
                         const std::vector<ClaimResult>& claims) {
  fs::create_directories(dir);
  size_t m = 0;
  for (const auto& c : claims)
    for (const auto& p : c.parts) m += std::isfinite(p.p_adjusted);
  const std::string md = claims_markdown(
      claims, fmt::format("this experiment's {} tested comparisons; results/CLAIMS.md decides "
                          "every experiment's together",
                          m));
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"claims.md", md}, {"claims.json", claims_json_text(experiment, claims)}}) {
    std::ofstream f(fs::path(dir) / name);
    f << text;
    if (!f) throw Error("cannot write " + (fs::path(dir) / name).string());
  }
  return md;
}

}  // namespace relpos::analysis
