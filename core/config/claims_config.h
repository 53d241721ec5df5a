// Claims as data (DESIGN §6): the `claims:` block of an experiment's or a sweep's YAML declares
// what the runs test — the source's words, the comparisons that decide them, the effect the
// source reports — and `provenance:` lists every configuration change made after a result was
// seen. The engine that judges them is analysis/claims.h; these are its plain inputs.
//
//   claims:
//     - id: huang2020-table1-span-qa
//       quote: "improving results on SQuAD1.1 compared to previous position embeddings"
//       source: "Huang et al. 2020, Table 1"
//       metric: "span-QA F1 (%, validation split)"
//       stage: squad                 # the experiment stage whose runs it compares
//       requires: [huang2020-squad-regime]   # regime checks that must be supported first
//       bounds: [0, 100]             # the metric's floor and ceiling
//       comparisons:
//         - {test: better, a: huang_m4, b: shaw, key: "squad:valid_f1", target_effect: 1.03,
//            target_note: "BERT-base SQuAD1.1 dev F1, method 4 against Shaw (Table 1)"}
//
// Keys may name the experiment's lengths: {T} (task.seq_len), {longest} (the longest
// eval.lengths), {N} (task.max_len of the synthetic tasks), replaced before judging.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config/fields.h"

namespace relpos {

struct ComparisonConfig : ConfigSection {
  // better       a beats b on `key`, paired over runs with the same seed (and settings)
  // not_worse    a is not worse than b by more than `margin` (non-inferiority)
  // correlation  `key` against `y_key` across the runs of each group in `over`
  // ratio        b's value is at least `margin` times a's (an exact count: no sampling error)
  std::string test = "better";
  std::string a, b;  // groups (position types, e.g. "learned+tisa"); b may equal a
  std::string key;   // the record value compared (a's, and b's unless b_key is given)
  std::string b_key;  // b's value when it is another one of the same runs (last vs first)
  // Subtracted from `key` (and from b_key) in each run: e.g. key "loss@{longest}", minus
  // "loss@{T}" compares the change of the loss from T to the longest length.
  std::string minus;
  bool higher_is_better = true;
  double margin = 0;
  // Left out of the claim (with a note) when an arm has no runs, e.g. a regime check's
  // `sinusoidal` in an experiment that does not train it.
  bool optional = false;
  // Only the runs whose settings match every "dotted.key=value" here (e.g. train.steps=800).
  std::vector<std::string> where;
  // correlation: the second value, the groups whose runs count (each group its own part:
  // within-variant), and a value of the same runs to partial out (e.g. the step-0 score).
  std::string y_key;
  std::vector<std::string> over;
  std::string partial;
  // The effect this comparison should be able to detect, in the metric's unit: the source's
  // (target_note says where it is from) or a stated meaningful size. The power gate compares
  // the smallest effect the runs detect with it. 0: none given.
  double target_effect = 0;
  std::string target_note;
  std::string label;  // empty: made from the arms

  template <class V>
  void visit(V& v) {
    v.choice("test", test, {"better", "not_worse", "correlation", "ratio"},
             "better | not_worse | correlation | ratio");
    v("a", a, "group a (position types)");
    v("b", b, "group b");
    v("key", key, "record value compared");
    v("b_key", b_key, "b's record value when not `key`");
    v("minus", minus, "record value subtracted from key in each run");
    v("higher_is_better", higher_is_better, "direction of the metric");
    v("margin", margin, "not_worse: margin; ratio: factor");
    v("optional", optional, "left out when an arm has no runs");
    v("where", where, "dotted.key=value settings the runs must have");
    v("y_key", y_key, "correlation: second value");
    v("over", over, "correlation: groups, each judged within itself");
    v("partial", partial, "correlation: value partialled out");
    v("target_effect", target_effect, "effect to detect (power gate), metric unit");
    v("target_note", target_note, "where target_effect comes from");
    v("label", label, "comparison label");
  }
};

// A configuration change made after a result was seen: what, why, and the claims it touched.
struct ProvenanceConfig : ConfigSection {
  std::string change, why;
  std::vector<std::string> claims;  // claim ids whose verdicts the change could move
  std::string moved;                // what it moved, in words ("regime check: inconclusive -> supported")

  template <class V>
  void visit(V& v) {
    v("change", change, "the configuration change");
    v("why", why, "the result that prompted it");
    v("claims", claims, "claim ids it touched");
    v("moved", moved, "what it moved");
  }
};

struct ClaimConfig : ConfigSection {
  std::string id, quote, source, metric;
  // regime: a check that position is used at all (learned and sinusoidal beat none); the
  // claims that require it are not testable unless it is supported.
  std::string role = "claim";
  std::string stage;                  // the stage whose runs it compares ("" for one stage)
  std::vector<std::string> requires_ids;  // regime claim ids; empty: the regime checks of `stage`
  std::vector<double> bounds;         // [floor, ceiling] of the metric; empty: unbounded
  std::optional<double> chance;       // the metric at chance
  // Judged at the source's model size (architecture claims, e.g. parameter counts): the
  // overrides that make the experiment's config that size ("model.width=768", ...).
  std::vector<std::string> paper_size;
  std::string paper_size_name;        // "ALBERT-base"
  // What it would take to test the claim where these runs cannot: scale, command, time.
  std::string to_test;
  std::vector<ComparisonConfig> comparisons;

  template <class V>
  void visit(V& v) {
    v("id", id, "short stable id");
    v("quote", quote, "the source's words");
    v("source", source, "paper and section/table/figure");
    v("metric", metric, "what is compared, with unit and split");
    v.choice("role", role, {"claim", "regime"}, "claim | regime");
    v("stage", stage, "experiment stage");
    v("requires", requires_ids, "regime claim ids that gate it");
    v("bounds", bounds, "[floor, ceiling] of the metric");
    v("chance", chance, "the metric at chance");
    v("paper_size", paper_size, "overrides of the source's model size");
    v("paper_size_name", paper_size_name, "name of that size");
    v("to_test", to_test, "what testing it would take");
    v("comparisons", comparisons, "the comparisons that decide it");
  }
};

}  // namespace relpos
