#!/usr/bin/env python3
"""Before/after comparison over alternating rounds of `relpos bench` (run-before-after.sh with
ROUNDS > 1): per variant, its step-time ratio to `none` in each round before and after, and the
paired change with its uncertainty.

Usage: scripts/bench/compare_rounds.py OUTDIR NAME ROUNDS [ratio|step_ms]
Reads OUTDIR/NAME-{before,after}-rN.json (N = 1..ROUNDS). The metric compared is the step time's
ratio to `none` (default) or, with step_ms, every variant's own step time in ms (`none`
included): for a change that affects every variant alike, such as the CPU allocator. On a machine whose speed drifts
between processes, one invocation's ratio can move by ±0.2 for unchanged code; a change is shown
by the rounds' paired differences: their mean with a 95% t-interval, and an exact two-sided sign
test (how many rounds the ratio fell). Peak memory ratios are deterministic and printed once.
"""
import json
import math
import sys

# Two-sided 95% quantiles of Student's t, by degrees of freedom (1..30); normal beyond.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.960


def sign_test(k, n):
    """Exact two-sided p of k successes in n fair coin flips."""
    tail = sum(math.comb(n, i) for i in range(0, min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"compare_rounds.py: {path}: {e}")
    return {(c["variant"], c["impl"], c["length"]): c for c in doc.get("cases", [])}


def main(argv):
    if (len(argv) not in (4, 5) or not argv[3].isdigit() or int(argv[3]) < 2
            or (len(argv) == 5 and argv[4] not in ("ratio", "step_ms"))):
        sys.exit("usage: compare_rounds.py OUTDIR NAME ROUNDS [ratio|step_ms] (ROUNDS >= 2)")
    out, name, rounds = argv[1], argv[2], int(argv[3])
    metric = argv[4] if len(argv) == 5 else "ratio"
    field, fmt = ("time_ratio_vs_none", ".2f") if metric == "ratio" else ("step_ms", ".0f")
    runs = {w: [load(f"{out}/{name}-{w}-r{r}.json") for r in range(1, rounds + 1)]
            for w in ("before", "after")}
    keys = [k for k in runs["after"][0] if metric == "step_ms" or k[0] != "none"]
    print(f"# {name}: {rounds} alternating rounds (odd rounds before first, even rounds after first)")
    what = "step time / none's" if metric == "ratio" else "step time (ms)"
    print(f"{what}, per round; after - before paired by round\n")
    for key in keys:
        label = f"{key[0]} ({key[1]}, T={key[2]})"
        pairs = []
        for r in range(rounds):
            b, a = runs["before"][r].get(key), runs["after"][r].get(key)
            if not b or not a or b.get("status") != "ok" or a.get("status") != "ok":
                print(f"{label}: round {r + 1} failed or missing; left out")
                continue
            pairs.append((b[field], a[field],
                          b["peak_ratio_vs_none"], a["peak_ratio_vs_none"]))
        if len(pairs) < 2:
            print(f"{label}: fewer than 2 complete rounds\n")
            continue
        n = len(pairs)
        diffs = [p[1] - p[0] for p in pairs]
        mean = sum(diffs) / n
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
        half = t975(n - 1) * sd / math.sqrt(n)
        fell = sum(d < 0 for d in diffs)
        med = lambda xs: sorted(xs)[len(xs) // 2] if len(xs) % 2 else (
            sorted(xs)[len(xs) // 2 - 1] + sorted(xs)[len(xs) // 2]) / 2
        print(f"{label}")
        dfmt = "+.3f" if metric == "ratio" else "+.0f"
        print("  before: " + " ".join(f"{p[0]:{fmt}}" for p in pairs) + f"  (median {med([p[0] for p in pairs]):{fmt}})")
        print("  after:  " + " ".join(f"{p[1]:{fmt}}" for p in pairs) + f"  (median {med([p[1] for p in pairs]):{fmt}})")
        print(f"  after - before: mean {mean:{dfmt}}, 95% CI [{mean - half:{dfmt}}, {mean + half:{dfmt}}] "
              f"(t, n={n}); fell in {fell} of {n} rounds, sign test p={sign_test(fell, n):.3f}")
        if metric == "step_ms":
            ratios = [p[1] / p[0] for p in pairs]
            print(f"  after / before: " + " ".join(f"{x:.2f}" for x in ratios)
                  + f"  (median {med(ratios):.2f})")
        print(f"  peak RSS / none's: before {med([p[2] for p in pairs]):.2f}, "
              f"after {med([p[3] for p in pairs]):.2f}\n")


if __name__ == "__main__":
    main(sys.argv)
