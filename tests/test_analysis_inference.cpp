// Student t quantiles, confidence intervals, paired tests, sign-flip tests, Wilson intervals and
// correlation tests (analysis/distributions.h, analysis/inference.h) against the golden values
// that tests/reference/make_stats_golden.py computed with scipy and itertools.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/distributions.h"
#include "analysis/inference.h"
#include "text_file.h"

using namespace relpos::analysis;
using Json = nlohmann::json;

namespace {

const Json& golden() {
  static const Json g = Json::parse(
      relpos::test::read_text(std::string(RELPOS_TEST_DIR) + "/fixtures/stats/golden.json"));
  return g;
}

std::vector<double> doubles(const Json& j) { return j.get<std::vector<double>>(); }

// Relative agreement, or absolute near 0 (p-values of 1e-9 need not agree to 1e-9 relative).
void check_close(double got, double want, double rel = 1e-9, double abs = 1e-12) {
  CHECK(std::abs(got - want) <= std::max(abs, rel * std::abs(want)));
}

}  // namespace

// scipy's t.ppf (cephes stdtrit) is accurate to about 1e-9 relative: its own t.cdf at its
// quantile for p = 0.995, df = 3 is 0.994999999976. Quantiles and the intervals built from them
// are compared at 2e-8; the round trip cdf(quantile(p)) = p checks them to 1e-13.
constexpr double kQuantileTol = 2e-8;

TEST_CASE("Student t and normal quantiles and distribution functions agree with scipy") {
  REQUIRE(golden().at("t_quantile").size() >= 40);
  for (const auto& c : golden().at("t_quantile")) {
    CAPTURE(c.dump());
    const double q = student_t_quantile(c.at("p"), c.at("df"));
    check_close(q, c.at("value"), kQuantileTol);
    check_close(student_t_cdf(q, c.at("df")), c.at("p"), 1e-13, 1e-15);
  }
  for (const auto& c : golden().at("t_cdf")) {
    CAPTURE(c.dump());
    check_close(student_t_cdf(c.at("t"), c.at("df")), c.at("value"), 1e-10, 1e-14);
  }
  for (const auto& c : golden().at("normal_quantile")) {
    CAPTURE(c.dump());
    check_close(normal_quantile(c.at("p")), c.at("value"), kQuantileTol);
  }
  for (const auto& c : golden().at("incomplete_beta")) {
    CAPTURE(c.dump());
    check_close(incomplete_beta(c.at("a"), c.at("b"), c.at("x")), c.at("value"), 1e-10, 1e-15);
  }
  // Outside the domain: NaN, never a number that looks like an answer.
  CHECK(std::isnan(student_t_quantile(0.0, 3)));
  CHECK(std::isnan(student_t_quantile(0.975, 0)));
  CHECK(std::isnan(normal_quantile(1.0)));
}

TEST_CASE("mean_ci: the Student t interval of the mean agrees with scipy") {
  for (const auto& c : golden().at("mean_ci")) {
    CAPTURE(c.dump());
    const MeanCI m = mean_ci(doubles(c.at("x")));
    CHECK(m.n == c.at("n").get<size_t>());
    check_close(m.mean, c.at("mean"));
    check_close(m.sd, c.at("sd"), 1e-9, 1e-15);
    check_close(m.lo, c.at("lo"), kQuantileTol);
    check_close(m.hi, c.at("hi"), kQuantileTol);
  }
  // One run: a mean, no interval. NaN values (not applicable) are left out.
  const MeanCI one = mean_ci({0.4});
  CHECK(one.n == 1);
  CHECK(one.mean == 0.4);
  CHECK(std::isnan(one.lo));
  CHECK(std::isnan(one.sd));
  CHECK(mean_ci({NAN, 1.0, 2.0}).n == 2);
  // The t interval of (1, 2) by hand: mean 1.5, s = 1/√2, t_{0.975,1} = 12.7062: ±6.3531.
  CHECK(mean_ci({1.0, 2.0}).hi == doctest::Approx(1.5 + 12.706204736 * std::sqrt(0.5) / std::sqrt(2.0)));
}

TEST_CASE("paired_test: t-test, interval, Cohen's d_z and exact sign-flip p agree with scipy") {
  REQUIRE(golden().at("paired").size() >= 6);
  for (const auto& c : golden().at("paired")) {
    CAPTURE(c.dump());
    const PairedTest p = paired_test(doubles(c.at("d")), 0.95, c.at("shift"));
    CHECK(p.n == c.at("n").get<size_t>());
    check_close(p.mean, c.at("mean"));
    check_close(p.lo, c.at("lo"), kQuantileTol);
    check_close(p.hi, c.at("hi"), kQuantileTol);
    check_close(p.t, c.at("t"), 1e-9);
    if (c.contains("t_rel")) check_close(p.t, c.at("t_rel"), 1e-9);
    check_close(p.p_two, c.at("p_two"), 1e-8, 1e-14);
    check_close(p.p_greater, c.at("p_greater"), 1e-8, 1e-14);
    check_close(p.p_less, c.at("p_less"), 1e-8, 1e-14);
    check_close(p.cohen_dz, c.at("cohen_dz"));
    CHECK(p.flip_greater == c.at("flip_greater").get<double>());
    CHECK(p.flip_less == c.at("flip_less").get<double>());
    CHECK(p.flip_two == c.at("flip_two").get<double>());
  }
}

TEST_CASE("paired_test: properties of the sign-flip test and of degenerate inputs") {
  // Five positive differences: the observed sum is the largest of the 32 patterns, so the
  // one-sided p-value is 1/32 and the two-sided 2/32 — the smallest five seeds can give.
  const PairedTest win = paired_test({0.1, 0.2, 0.05, 0.3, 0.15});
  CHECK(win.flip_greater == 1.0 / 32);
  CHECK(win.flip_two == 2.0 / 32);
  CHECK(win.flip_less == 1.0);
  // Every difference equal: infinite t, p-values 0 or 1, no effect size.
  const PairedTest same = paired_test({0.2, 0.2, 0.2});
  CHECK(std::isinf(same.t));
  CHECK(same.p_greater == 0.0);
  CHECK(same.p_less == 1.0);
  CHECK(std::isnan(same.cohen_dz));
  // Beyond kMaxExactSignFlip pairs the sign-flip p-values are NaN (not enumerated).
  CHECK(std::isnan(paired_test(std::vector<double>(kMaxExactSignFlip + 1, 0.5)).flip_greater));
  // One pair: no t-test.
  CHECK(std::isnan(paired_test({0.3}).p_greater));
}

TEST_CASE("wilson_ci: a proportion's interval agrees with scipy's binomtest") {
  for (const auto& c : golden().at("wilson")) {
    CAPTURE(c.dump());
    const ProportionCI p = wilson_ci(c.at("k"), c.at("n"));
    check_close(p.lo, c.at("lo"), kQuantileTol, 1e-12);
    check_close(p.hi, c.at("hi"), kQuantileTol, 1e-12);
  }
  CHECK(std::isnan(wilson_ci(0, 0).lo));
}

TEST_CASE("pearson_test: r, its t-test and Fisher-z interval agree with scipy") {
  for (const auto& c : golden().at("pearson")) {
    CAPTURE(c.dump());
    const CorrelationTest t = pearson_test(doubles(c.at("x")), doubles(c.at("y")));
    check_close(t.r, c.at("r"));
    check_close(t.p_two, c.at("p_two"), 1e-8, 1e-14);
    check_close(t.p_greater, c.at("p_greater"), 1e-8, 1e-14);
    if (c.contains("lo")) {
      check_close(t.lo, c.at("lo"), kQuantileTol);
      check_close(t.hi, c.at("hi"), kQuantileTol);
    }
  }
  CHECK(std::isnan(pearson_test({1, 2}, {2, 1}).r));  // fewer than 3 pairs
}
