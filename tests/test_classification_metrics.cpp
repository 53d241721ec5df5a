// Classification F1 and MCC (core/train/classification_metrics.h): hand-computed confusion
// matrices, the binary MCC as the Pearson correlation of the 0/1 vectors, Gorodkin's R_K as the
// covariance of one-hot vectors, edge cases, and the classifier's MetricAccumulator against
// counts made in the test from the model's own logits.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/data/rng.h"
#include "core/train/classification_metrics.h"
#include "core/train/objective.h"
#include "tests/small_model.h"

using namespace relpos;

namespace {

// rows: gold class, columns: predicted class.
ConfusionMatrix confusion_from_rows(const std::vector<std::vector<double>>& rows) {
  ConfusionMatrix m(static_cast<int64_t>(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j)
      m.add(static_cast<int64_t>(i), static_cast<int64_t>(j), rows[i][j]);
  return m;
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace

TEST_CASE("classification metrics: a hand-computed binary confusion matrix") {
  // gold 1: 6 predicted 1 (TP), 2 predicted 0 (FN); gold 0: 1 predicted 1 (FP), 11 predicted 0
  // (TN). Precision 6/7, recall 6/8: F1 = 2·6 / (2·6 + 1 + 2) = 12/15 = 0.8.
  // MCC = (6·11 − 1·2) / √((6+1)(6+2)(11+1)(11+2)) = 64 / √8736 = 0.684737 (4 d.p. by hand:
  // √8736 ≈ 93.4666).
  const ConfusionMatrix m = confusion_from_rows({{11, 1}, {2, 6}});
  CHECK(m.total() == 20);
  CHECK(classification_f1(m) == doctest::Approx(0.8));
  CHECK(matthews_correlation(m) == doctest::Approx(0.684737).epsilon(1e-6));
  // The negative class's own F1 (2·11 / (22 + 2 + 1) = 0.88) is not what a binary task reports.
  CHECK(class_f1(m, 0) == doctest::Approx(0.88));
}

TEST_CASE("classification metrics: a hand-computed 3-class confusion matrix") {
  //            predicted 0  1  2 | gold count t_k
  //   gold 0:            5  2  1 | 8
  //   gold 1:            1  4  0 | 5
  //   gold 2:            0  3  4 | 7
  //   predicted p_k:     6  9  5 | s = 20, right c = 5 + 4 + 4 = 13
  // F1_0 = 2·5 / (8 + 6) = 5/7, F1_1 = 2·4 / (5 + 9) = 4/7, F1_2 = 2·4 / (7 + 5) = 2/3;
  // macro-F1 = (5/7 + 4/7 + 2/3) / 3 = 41/63 = 0.650794.
  // R_K: c·s − Σ p_k t_k = 260 − (48 + 45 + 35) = 132; s² − Σ p_k² = 400 − 142 = 258;
  // s² − Σ t_k² = 400 − 138 = 262; R_K = 132 / √(258·262) = 132 / √67596 = 0.507707.
  const ConfusionMatrix m = confusion_from_rows({{5, 2, 1}, {1, 4, 0}, {0, 3, 4}});
  CHECK(class_f1(m, 0) == doctest::Approx(5.0 / 7));
  CHECK(class_f1(m, 1) == doctest::Approx(4.0 / 7));
  CHECK(class_f1(m, 2) == doctest::Approx(2.0 / 3));
  CHECK(classification_f1(m) == doctest::Approx(41.0 / 63));
  CHECK(matthews_correlation(m) == doctest::Approx(0.507707).epsilon(1e-6));
}

TEST_CASE("classification metrics: all correct gives 1") {
  CHECK(classification_f1(confusion_from_rows({{7, 0}, {0, 3}})) == 1.0);
  CHECK(matthews_correlation(confusion_from_rows({{7, 0}, {0, 3}})) == doctest::Approx(1.0));
  const ConfusionMatrix three = confusion_from_rows({{4, 0, 0}, {0, 2, 0}, {0, 0, 9}});
  CHECK(classification_f1(three) == 1.0);
  CHECK(matthews_correlation(three) == doctest::Approx(1.0));
  // A class absent from gold labels and predictions alike is left out of the macro mean.
  const ConfusionMatrix absent = confusion_from_rows({{4, 0, 0}, {0, 2, 0}, {0, 0, 0}});
  CHECK(classification_f1(absent) == 1.0);
  CHECK(matthews_correlation(absent) == doctest::Approx(1.0));
  // All wrong, binary: every gold 1 predicted 0 and vice versa.
  CHECK(matthews_correlation(confusion_from_rows({{0, 5}, {5, 0}})) == doctest::Approx(-1.0));
}

TEST_CASE("classification metrics: edge cases") {
  // Class 2 is never predicted: its F1 is 0 (no 0/0 precision), and the macro mean counts it.
  // F1_0 = 2·3 / (4 + 6) = 0.6, F1_1 = 2·2 / (3 + 3) = 2/3, F1_2 = 0: macro (0.6 + 2/3) / 3.
  const ConfusionMatrix never = confusion_from_rows({{3, 1, 0}, {1, 2, 0}, {2, 0, 0}});
  CHECK(class_f1(never, 2) == 0.0);
  CHECK(classification_f1(never) == doctest::Approx((0.6 + 2.0 / 3) / 3));
  // Every prediction one class: MCC's denominator is 0, MCC is 0 (not NaN).
  CHECK(matthews_correlation(confusion_from_rows({{5, 0}, {3, 0}})) == 0.0);
  CHECK(matthews_correlation(confusion_from_rows({{0, 2, 0}, {0, 3, 0}, {0, 1, 0}})) == 0.0);
  // Every gold label one class: likewise.
  CHECK(matthews_correlation(confusion_from_rows({{4, 2}, {0, 0}})) == 0.0);
  // Binary, class 1 never predicted: F1 0; class 1 nowhere at all: F1 0 too.
  CHECK(classification_f1(confusion_from_rows({{5, 0}, {3, 0}})) == 0.0);
  CHECK(classification_f1(confusion_from_rows({{6, 0}, {0, 0}})) == 0.0);
  CHECK(classification_f1(ConfusionMatrix(3)) == 0.0);
  ConfusionMatrix m(2);
  CHECK_THROWS_WITH(m.add(2, 0), "confusion matrix: class (gold 2, predicted 0) outside 0..1");
}

TEST_CASE("classification metrics: binary MCC is the Pearson correlation of the 0/1 vectors, "
          "R_K the correlation of one-hot vectors") {
  Rng rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t K = 2 + trial % 3, n = 10 + rng.below(200);
    std::vector<int64_t> gold(n), pred(n);
    for (int64_t i = 0; i < n; ++i) {
      gold[i] = rng.below(K);
      // Right about 60 % of the time, so the correlation is neither 0 nor 1.
      pred[i] = rng.bernoulli(0.6) ? gold[i] : rng.below(K);
    }
    ConfusionMatrix m(K);
    for (int64_t i = 0; i < n; ++i) m.add(gold[i], pred[i]);
    CAPTURE(trial);
    if (K == 2) {
      std::vector<double> x(gold.begin(), gold.end()), y(pred.begin(), pred.end());
      CHECK(matthews_correlation(m) == doctest::Approx(pearson(x, y)).epsilon(1e-12));
    }
    // Gorodkin's definition: cov(X, Y) / √(cov(X, X)·cov(Y, Y)), X and Y the (n, K) one-hot
    // matrices, cov(X, Y) = Σ_n Σ_k (X_nk − mean_k X)(Y_nk − mean_k Y).
    std::vector<double> mx(K, 0), my(K, 0);
    for (int64_t i = 0; i < n; ++i) {
      mx[gold[i]] += 1.0 / n;
      my[pred[i]] += 1.0 / n;
    }
    double xy = 0, xx = 0, yy = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < K; ++k) {
        const double a = (gold[i] == k) - mx[k], b = (pred[i] == k) - my[k];
        xy += a * b;
        xx += a * a;
        yy += b * b;
      }
    CHECK(matthews_correlation(m) == doctest::Approx(xy / std::sqrt(xx * yy)).epsilon(1e-12));
  }
}

TEST_CASE("classifier evaluation reports f1 and mcc of the argmax predictions over all batches") {
  const Config cfg = test::small_config(
      "none", false, {"task.type=classify", "data.corpus=sentiment", "task.num_classes=2"});
  Model model = test::small_model(cfg, 40, 3);
  torch::manual_seed(7);
  // Two batches of 12 rows, gold labels chosen so every cell of the confusion matrix is likely
  // filled: the first half of each batch copies the model's prediction, the second half flips it.
  MetricAccumulator acc("classify", nullptr, Split::Valid);
  double tp = 0, fp = 0, fn = 0, tn = 0;
  for (int batch = 0; batch < 2; ++batch) {
    Batch b;
    b.tokens = torch::randint(5, 40, {12, 8}, torch::kLong);  // (B,T)
    b.pool_index = torch::zeros({12}, torch::kLong);          // (B)
    torch::Tensor logits;
    {
      torch::NoGradGuard guard;
      logits = model->class_logits(model->hidden(b.tokens), b.pool_index);  // (B,2)
    }
    b.targets = torch::empty({12}, torch::kLong);  // (B)
    for (int64_t i = 0; i < 12; ++i) {
      const int64_t p = logits[i].argmax().item<int64_t>();
      const int64_t y = i < 6 ? p : 1 - p;
      b.targets[i] = y;
      if (p == 1) (y == 1 ? tp : fp) += 1;
      else (y == 1 ? fn : tn) += 1;
    }
    acc.add(model, b);
  }
  REQUIRE(tp + fp > 0);  // the model predicts class 1 somewhere,
  REQUIRE(tn + fn > 0);  // and class 0
  const auto m = acc.result();
  const double precision = tp / (tp + fp), recall = tp / (tp + fn);
  CHECK(m.at("accuracy") == doctest::Approx(0.5));
  CHECK(m.at("f1") == doctest::Approx(2 * precision * recall / (precision + recall)));
  CHECK(m.at("mcc") == doctest::Approx((tp * tn - fp * fn) /
                                       std::sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))));
}
