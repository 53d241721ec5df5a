#include "core/train/classification_metrics.h"

#include <fmt/format.h>

#include <cmath>

#include "core/util/errors.h"

namespace relpos {

ConfusionMatrix::ConfusionMatrix(int64_t classes)
    : classes_(classes), counts_(static_cast<size_t>(classes * classes), 0.0) {
  if (classes < 0) throw Error(fmt::format("confusion matrix: {} classes", classes));
}

void ConfusionMatrix::add(int64_t truth, int64_t predicted, double n) {
  if (truth < 0 || truth >= classes_ || predicted < 0 || predicted >= classes_)
    throw Error(fmt::format("confusion matrix: class (gold {}, predicted {}) outside 0..{}", truth,
                            predicted, classes_ - 1));
  counts_[static_cast<size_t>(truth * classes_ + predicted)] += n;
}

double ConfusionMatrix::at(int64_t truth, int64_t predicted) const {
  return counts_.at(static_cast<size_t>(truth * classes_ + predicted));
}

double ConfusionMatrix::total() const {
  double s = 0;
  for (double c : counts_) s += c;
  return s;
}

namespace {

double row_sum(const ConfusionMatrix& m, int64_t k) {  // gold labels of class k
  double s = 0;
  for (int64_t j = 0; j < m.classes(); ++j) s += m.at(k, j);
  return s;
}

double column_sum(const ConfusionMatrix& m, int64_t k) {  // predictions of class k
  double s = 0;
  for (int64_t i = 0; i < m.classes(); ++i) s += m.at(i, k);
  return s;
}

}  // namespace

double class_f1(const ConfusionMatrix& m, int64_t k) {
  const double tp = m.at(k, k);
  const double denominator = row_sum(m, k) + column_sum(m, k);  // 2·TP + FP + FN
  return denominator > 0 ? 2 * tp / denominator : 0.0;
}

double classification_f1(const ConfusionMatrix& m) {
  if (m.classes() == 2) return class_f1(m, 1);
  double sum = 0, present = 0;
  for (int64_t k = 0; k < m.classes(); ++k)
    if (row_sum(m, k) + column_sum(m, k) > 0) {
      sum += class_f1(m, k);
      present += 1;
    }
  return present > 0 ? sum / present : 0.0;
}

double matthews_correlation(const ConfusionMatrix& m) {
  const double s = m.total();
  double c = 0, pt = 0, pp = 0, tt = 0;
  for (int64_t k = 0; k < m.classes(); ++k) {
    const double t = row_sum(m, k), p = column_sum(m, k);
    c += m.at(k, k);
    pt += p * t;
    pp += p * p;
    tt += t * t;
  }
  const double denominator = (s * s - pp) * (s * s - tt);
  return denominator > 0 ? (c * s - pt) / std::sqrt(denominator) : 0.0;
}

}  // namespace relpos
