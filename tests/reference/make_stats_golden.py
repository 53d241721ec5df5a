#!/usr/bin/python3
"""Golden values for analysis/distributions.h and analysis/inference.h, computed with scipy.

The C++ code implements the formulas itself (incomplete beta by continued fraction, bisection for
quantiles, its own sign-flip enumeration); this script asks scipy (Debian's python3-scipy) and
plain itertools for the same numbers, so tests/test_analysis_inference.cpp compares two
independent computations. Run it from the repository root after changing the cases:

    /usr/bin/python3 tests/reference/make_stats_golden.py > tests/fixtures/stats/golden.json

The output is committed; the C++ tests do not need scipy.
"""
import itertools
import json
import math

import scipy
from scipy import stats

# Student t quantiles and distribution function, for the degrees of freedom of 2..101 seeds.
T_CASES = [(p, df) for df in (1, 2, 3, 4, 5, 9, 29, 100, 2.5)
           for p in (0.975, 0.95, 0.995, 0.6, 0.025)]
T_CDF_CASES = [(t, df) for df in (1, 3, 4, 10, 50) for t in (-7.5, -2.0, -0.3, 0.0, 1.0, 2.776, 12.0)]

# Seeds' values of one variant (accuracies, F1 in %, losses), and a constant sample.
SAMPLES = [
    [0.2595, 0.2636, 0.2570, 0.2611, 0.2589],
    [16.5, 27.5, 10.4],
    [0.70, 0.573, 0.647, 0.61, 0.66, 0.59],
    [1.0, 2.0],
    [3.25, 3.25, 3.25],
]

# Paired differences (a − b over seeds): clear win, clear loss, overlap, small n, ties.
PAIRS = [
    ([0.31, 0.35, 0.33, 0.36, 0.30], [0.26, 0.27, 0.25, 0.26, 0.27]),
    ([0.20, 0.21, 0.19, 0.22, 0.20], [0.26, 0.27, 0.25, 0.26, 0.27]),
    ([0.61, 0.55, 0.66, 0.58, 0.63, 0.60], [0.60, 0.59, 0.62, 0.61, 0.58, 0.64]),
    ([16.5, 27.5, 10.4], [12.5, 18.3, 14.4]),
    ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [1.5, 1.0, 3.5, 2.0, 5.5, 4.0, 6.0]),
]
# A non-inferiority margin: tests of H0 mean(a − b) = -margin.
SHIFTED = [([0.60, 0.62, 0.59, 0.63, 0.61], [0.61, 0.62, 0.60, 0.62, 0.62], -0.02)]

PROPORTIONS = [(2458 * 0.38, 2458), (45, 150), (0, 20), (20, 20), (7, 9)]

CORRELATIONS = [
    ([0.61, 0.65, 0.70, 0.58, 0.66, 0.72], [0.20, 0.23, 0.26, 0.19, 0.22, 0.30]),
    ([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 6.0]),
    ([0.1, 0.4, 0.2, 0.9], [0.5, 0.1, 0.4, 0.2]),
]


def sign_flip(d):
    """Exact p-values by enumerating every pattern of signs (itertools, not bit masks)."""
    observed = sum(d)
    tol = 1e-12 * max(sum(abs(x) for x in d), 1e-300)
    greater = less = two = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        s = sum(sg * x for sg, x in zip(signs, d))
        greater += s >= observed - tol
        less += s <= observed + tol
        two += abs(s) >= abs(observed) - tol
    total = 2 ** len(d)
    return greater / total, less / total, two / total


def mean_ci(x):
    n = len(x)
    m = sum(x) / n
    sd = stats.tstd(x) if n > 1 else float("nan")
    if n > 1 and sd > 0:
        lo, hi = stats.t.interval(0.95, n - 1, loc=m, scale=stats.sem(x))
    elif n > 1:
        lo = hi = m
    else:
        lo = hi = float("nan")
    return {"x": x, "n": n, "mean": m, "sd": sd, "lo": lo, "hi": hi}


def paired(a, b, shift=0.0):
    d = [x - y for x, y in zip(a, b)]
    c = mean_ci(d)
    shifted = [x - shift for x in d]
    res = {"d": d, "shift": shift, "n": len(d), "mean": c["mean"], "sd": c["sd"],
           "lo": c["lo"], "hi": c["hi"], "cohen_dz": c["mean"] / c["sd"]}
    for alt, key in (("two-sided", "p_two"), ("greater", "p_greater"), ("less", "p_less")):
        # ttest_1samp of d − shift against 0 is the paired test of a − b against shift
        t = stats.ttest_1samp(shifted, 0.0, alternative=alt)
        res[key] = float(t.pvalue)
        res["t"] = float(t.statistic)
    if shift == 0.0:  # the paired form gives the same statistic
        res["t_rel"] = float(stats.ttest_rel(a, b).statistic)
    res["flip_greater"], res["flip_less"], res["flip_two"] = sign_flip(shifted)
    return res


def main():
    out = {"scipy": scipy.__version__}
    out["t_quantile"] = [{"p": p, "df": df, "value": float(stats.t.ppf(p, df))} for p, df in T_CASES]
    out["t_cdf"] = [{"t": t, "df": df, "value": float(stats.t.cdf(t, df))} for t, df in T_CDF_CASES]
    out["normal_quantile"] = [{"p": p, "value": float(stats.norm.ppf(p))}
                              for p in (0.975, 0.995, 0.5, 0.1, 0.0001)]
    out["incomplete_beta"] = [{"a": a, "b": b, "x": x, "value": float(scipy.special.betainc(a, b, x))}
                              for a, b, x in ((0.5, 0.5, 0.3), (2.0, 3.0, 0.8), (10.0, 0.5, 0.95),
                                              (1.5, 50.0, 0.01), (0.5, 7.0, 0.999))]
    out["mean_ci"] = [mean_ci(x) for x in SAMPLES]
    out["paired"] = [paired(a, b) for a, b in PAIRS] + [paired(a, b, s) for a, b, s in SHIFTED]
    out["wilson"] = []
    for k, n in PROPORTIONS:
        k_int = int(round(k))
        ci = stats.binomtest(k_int, n).proportion_ci(0.95, method="wilson")
        out["wilson"].append({"k": k_int, "n": n, "lo": ci.low, "hi": ci.high})
    out["pearson"] = []
    for x, y in CORRELATIONS:
        r = stats.pearsonr(x, y)
        entry = {"x": x, "y": y, "r": float(r.statistic), "p_two": float(r.pvalue),
                 "p_greater": float(stats.pearsonr(x, y, alternative="greater").pvalue)}
        if len(x) >= 4:
            ci = r.confidence_interval(0.95)
            entry["lo"], entry["hi"] = float(ci.low), float(ci.high)
        out["pearson"].append(entry)
    print(json.dumps(out, indent=1, allow_nan=True))


if __name__ == "__main__":
    main()
