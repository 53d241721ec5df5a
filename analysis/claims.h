// Claims and verdicts (docs/analysis.md, "Claims and verdicts"). A named experiment declares the
// claims it tests — the paper's words, quoted short, with their source — as comparisons between
// the runs of two variants (or two numbers of the same runs), and judges each from per-run
// numbers, whichever way they come out:
//
//   better       a beats b: paired over seeds (runs with the same seed share the data split)
//   not_worse    a is not worse than b by more than `margin` (non-inferiority)
//   correlation  two numbers of the same runs correlate positively across runs (Pearson)
//   ratio        b's value is at least `margin` times a's (an exact count, e.g. parameters)
//
// The verdict rule is judge_paired() / judge_correlation(); a claim of several comparisons is
// supported when every one is, not supported when one is not, inconclusive otherwise.
#pragma once

#include <string>
#include <vector>

#include "analysis/inference.h"
#include "analysis/tables.h"

namespace relpos::analysis {

enum class Verdict { supported, not_supported, inconclusive };
std::string verdict_name(Verdict v);  // "supported", "not supported", "inconclusive"

enum class ClaimTest { better, not_worse, correlation, ratio };

// The runs of `group` (RunRecord::group), value `key`.
struct Arm {
  std::string group, key;
};

struct Comparison {
  ClaimTest test = ClaimTest::better;
  Arm a, b;  // correlation: a.key against b.key over the runs of `over`
  bool higher_is_better = true;
  // not_worse: the margin in the metric's unit; ratio: the factor.
  double margin = 0;
  // Left out of the claim (with a note) when an arm's variant has no runs here, e.g. the
  // regime check's `sinusoidal` in an experiment that does not train it.
  bool optional = false;
  std::vector<std::string> over;  // correlation: the groups whose runs count (empty: every run)
  std::string label;              // e.g. "huang_m4 vs shaw"; empty: made from the arms
};

struct Claim {
  std::string id;      // short and stable, e.g. "huang2020-table1-qa"
  std::string quote;   // the paper's words, a few of them (a citation)
  std::string source;  // "Huang et al. 2020, Table 1"
  std::string metric;  // what is compared, with its unit and split
  std::vector<Comparison> comparisons;
};

struct ComparisonResult {
  Comparison comparison;
  std::string label;
  size_t n = 0;                  // pairs (better, not_worse), runs (correlation, ratio)
  double effect = 0;             // a − b; correlation: r; ratio: b / a
  double lo = 0, hi = 0;         // 95% interval of the effect (NaN when there is none)
  PairedTest paired;             // better, not_worse (oriented: positive = the claimed way)
  CorrelationTest correlation;   // correlation
  Verdict verdict = Verdict::inconclusive;
  std::string note;              // why inconclusive ("n = 3 < 5"), or what was left out
};

struct ClaimResult {
  Claim claim;
  std::vector<ComparisonResult> parts;
  Verdict verdict = Verdict::inconclusive;
  std::string note;  // comparisons left out (optional arms without runs)
};

// The verdict of a paired test computed on oriented differences (positive = the claimed
// direction) with shift = −margin: supported when n >= kMinSeedsForVerdict, the 95% interval
// lies above −margin and the one-sided sign-flip p in the claimed direction is below 0.05;
// not supported when n >= kMinSeedsForVerdict, the interval lies below −margin and the
// sign-flip p the other way is below 0.05; inconclusive otherwise. `why` gets the reason for
// an inconclusive verdict.
Verdict judge_paired(const PairedTest& t, double margin, std::string* why = nullptr);
// A claimed positive correlation: supported when n >= kMinSeedsForVerdict runs and the
// Fisher-z interval lies above 0, not supported when it lies below 0, else inconclusive.
Verdict judge_correlation(const CorrelationTest& t, std::string* why = nullptr);
// Every part supported: supported; a part not supported: not supported; else inconclusive.
Verdict combine(const std::vector<Verdict>& parts);

ClaimResult evaluate_claim(const Claim& c, const std::vector<RunRecord>& runs);

}  // namespace relpos::analysis
