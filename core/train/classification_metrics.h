// F1 and Matthews correlation (MCC) of a classifier, from its confusion matrix (DESIGN.md §3:
// classify reports "accuracy (F1/MCC where the task defines them)").
//   Per class k: TP_k = C[k][k], FP_k = column sum − TP_k, FN_k = row sum − TP_k,
//     F1_k = 2·TP_k / (2·TP_k + FP_k + FN_k) — the harmonic mean of precision and recall, and 0
//     for a class that is never predicted (TP_k = FP_k = 0), or that occurs nowhere (0/0).
//   f1: 2 classes: F1 of the positive class, label 1. More classes: macro-F1, the mean of F1_k
//     over the classes that occur among the gold labels or the predictions (as scikit-learn's
//     f1_score(average="macro")), so a class absent from both neither lowers nor raises it.
//   mcc: Gorodkin's R_K (2004), which for 2 classes is the binary MCC
//     (TP·TN − FP·FN) / √((TP+FP)(TP+FN)(TN+FP)(TN+FN)):
//       R_K = (c·s − Σ_k p_k·t_k) / √((s² − Σ_k p_k²)(s² − Σ_k t_k²)),
//     s examples, c of them right, t_k gold labels of class k, p_k predictions of class k;
//     0 when the denominator is 0 (every prediction, or every gold label, one class).
// Both are fractions in [0, 1] (MCC in [−1, 1]), like accuracy; span_qa's SQuAD F1 is in percent.
#pragma once

#include <cstdint>
#include <vector>

namespace relpos {

class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int64_t classes = 0);
  int64_t classes() const { return classes_; }
  // Counts `n` examples of gold class `truth` predicted as `predicted`; both in [0, classes).
  void add(int64_t truth, int64_t predicted, double n = 1);
  double at(int64_t truth, int64_t predicted) const;
  double total() const;

 private:
  int64_t classes_;
  std::vector<double> counts_;  // row-major (truth, predicted)
};

double class_f1(const ConfusionMatrix& m, int64_t k);
double classification_f1(const ConfusionMatrix& m);  // binary: class 1; else macro-F1
double matthews_correlation(const ConfusionMatrix& m);

}  // namespace relpos
