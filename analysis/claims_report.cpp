#include "analysis/claims_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/tables.h"
#include "core/util/errors.h"
#include "core/util/paths.h"

namespace relpos::analysis {
namespace fs = std::filesystem;
using Json = nlohmann::json;
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

// The claimed direction, in words the effect column uses.
std::string claimed(const Comparison& c) {
  switch (c.test) {
    case ClaimTest::better:
      return c.higher_is_better ? "a − b > 0" : "a − b < 0";
    case ClaimTest::not_worse:
      return c.higher_is_better ? fmt::format("a − b > −{:g}", c.margin)
                                : fmt::format("a − b < {:g}", c.margin);
    case ClaimTest::correlation:
      return "r > 0";
    default:
      return fmt::format("b / a ≥ {:g}", c.margin);
  }
}

std::string effect_text(const ComparisonResult& r) {
  switch (r.comparison.test) {
    case ClaimTest::correlation:
      return fmt::format("r = {} [{}, {}]", num(r.effect), num(r.lo), num(r.hi));
    case ClaimTest::ratio:
      return std::isfinite(r.effect) ? fmt::format("×{} (10^{:.2f}; exact counts)", num(r.effect),
                                                   std::log10(r.effect))
                                     : "—";
    default:
      return r.n >= 2 ? fmt::format("{} [{}, {}]", num(r.effect, true), num(r.lo, true),
                                    num(r.hi, true))
                      : num(r.effect, true);
  }
}

std::string verdict_cell(const ComparisonResult& r) {
  return r.note.empty() ? verdict_name(r.verdict)
                        : fmt::format("{} ({})", verdict_name(r.verdict), r.note);
}

}  // namespace

std::string claim_summary(const ClaimResult& c) {
  std::string out;
  for (const auto& r : c.parts)
    out += fmt::format("{}{}: {}, n = {}", out.empty() ? "" : "; ", r.label, effect_text(r), r.n);
  if (!c.note.empty()) out += (out.empty() ? "" : ". ") + c.note;
  return out;
}

std::string claims_markdown(const std::vector<ClaimResult>& claims) {
  std::ostringstream md;
  md << "## Claims\n\n";
  if (claims.empty()) {
    md << "This experiment declares no claims.\n";
    return md.str();
  }
  md << "| # | claim | source | metric | verdict |\n|---:|:---|:---|:---|:---|\n";
  for (size_t k = 0; k < claims.size(); ++k) {
    const Claim& c = claims[k].claim;
    md << fmt::format("| {} | \"{}\" | {} | {} | **{}** |\n", k + 1, markdown_escape(c.quote),
                      markdown_escape(c.source), markdown_escape(c.metric),
                      verdict_name(claims[k].verdict));
  }
  md << "\n| # | comparison (a vs b) | claimed | n | effect (95% CI) | Cohen's d_z | paired t p "
        "| sign-flip p | verdict |\n|---:|:---|:---|---:|:---|---:|---:|---:|:---|\n";
  for (size_t k = 0; k < claims.size(); ++k)
    for (const auto& r : claims[k].parts) {
      const bool paired =
          r.comparison.test == ClaimTest::better || r.comparison.test == ClaimTest::not_worse;
      const double p = paired                                         ? r.paired.p_greater
                       : r.comparison.test == ClaimTest::correlation ? r.correlation.p_greater
                                                                      : std::nan("");
      md << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", k + 1,
                        markdown_escape(r.label), claimed(r.comparison), r.n, effect_text(r),
                        paired ? num(r.paired.cohen_dz) : "—", p_value(p),
                        paired ? p_value(r.paired.flip_greater) : "—",
                        markdown_escape(verdict_cell(r)));
    }
  for (size_t k = 0; k < claims.size(); ++k)
    if (!claims[k].note.empty()) md << "\nClaim " << k + 1 << ": " << claims[k].note << "\n";
  md << "\nEffects are a − b in the metric's unit (correlation: Pearson r with its Fisher-z "
        "interval, the metric oriented so that better is higher: a lower-is-better metric enters "
        "negated; ratio: b / a); Cohen's d_z is that of the differences oriented the claimed way "
        "(positive when the effect goes as claimed). Paired comparisons match runs by seed (same "
        "data split). "
        "p-values are one-sided, in the claimed direction: the paired t-test and the exact "
        "sign-flip test (every pattern of signs of the n differences). Verdict rule "
        "(docs/analysis.md, \"Claims and verdicts\"): **supported** when n ≥ "
     << kMinSeedsForVerdict
     << ", the 95% interval lies on the claimed side of the margin and the sign-flip p is "
        "below 0.05; **not supported** when n ≥ "
     << kMinSeedsForVerdict
     << " and the interval and the sign-flip test put the effect significantly on the other "
        "side; **inconclusive** otherwise (n too small, or the interval includes the margin). "
        "A claim of several comparisons is supported when all are, not supported when one "
        "is not.\n";
  return md.str();
}

std::string write_claims(const std::string& dir, const std::string& experiment,
                         const std::vector<ClaimResult>& claims) {
  const fs::path tables(dir);
  fs::create_directories(tables);
  const std::string md = claims_markdown(claims);
  Json j;
  j["experiment"] = experiment;
  j["claims"] = Json::array();
  for (const auto& c : claims)
    j["claims"].push_back({{"id", c.claim.id},
                           {"quote", c.claim.quote},
                           {"source", c.claim.source},
                           {"metric", c.claim.metric},
                           {"result", claim_summary(c)},
                           {"verdict", verdict_name(c.verdict)}});
  for (const auto& [name, text] :
       std::vector<std::pair<std::string, std::string>>{{"claims.md", md},
                                                        {"claims.json", j.dump(1) + "\n"}}) {
    std::ofstream f(tables / name);
    f << text;
    if (!f) throw Error("cannot write " + (tables / name).string());
  }
  return md;
}

std::string write_claims_index(const std::string& root) {
  std::vector<fs::path> folders;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory() && fs::exists(e.path() / "report.md") &&
        fs::exists(e.path() / "claims.json"))
      folders.push_back(e.path());
  if (folders.empty()) return "";
  std::sort(folders.begin(), folders.end());
  std::ostringstream md;
  md << "# Claims tested by the named experiments\n\n"
        "Generated by `relpos report` from each experiment's `claims.json`: one row per "
        "claim, with the experiment's numbers and verdict (rule: docs/analysis.md, \"Claims and "
        "verdicts\"). Each report's Claims section has every comparison in full.\n\n"
        "| experiment | claim | source | metric | result (a − b, 95% CI) | verdict |\n"
        "|:---|:---|:---|:---|:---|:---|\n";
  for (const auto& f : folders) {
    std::ifstream in(f / "claims.json");
    const Json j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("claims") || !j["claims"].is_array())
      throw SchemaError(fmt::format("{}: not a claims record (expected an object with a "
                                    "\"claims\" array, as `relpos report` writes)",
                                    (f / "claims.json").string()));
    const std::string name = f.filename().string();
    // The link resolves from CLAIMS.md; its text is the report's path in the repository.
    const std::string link = fmt::format(
        "[{}]({}/report.md)", repo_relative((f / "report.md").string()), name);
    for (const auto& c : j["claims"])
      md << fmt::format("| {} | \"{}\" | {} | {} | {} | **{}** |\n", link,
                        markdown_escape(c.value("quote", "")), markdown_escape(c.value("source", "")),
                        markdown_escape(c.value("metric", "")), markdown_escape(c.value("result", "")),
                        c.value("verdict", ""));
  }
  const fs::path out = fs::path(root) / "CLAIMS.md";
  std::ofstream f(out);
  f << md.str();
  if (!f) throw Error("cannot write " + out.string());
  return out.string();
}

}  // namespace relpos::analysis
