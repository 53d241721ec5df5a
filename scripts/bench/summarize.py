#!/usr/bin/env python3
"""Markdown tables for docs/performance.md from `relpos bench --json` files.

Usage: scripts/bench/summarize.py RESULTS.json [MORE.json ...]
       scripts/bench/summarize.py --growth RESULTS.json [MORE.json ...]   (exponents over all files)
Every number comes from the JSON: wall and CPU step time, peak RSS and the child's exact tensor
peak, each also as a ratio to `none` from the same file (same invocation), and with `--paired`
the paired ratio to `none` with its 95% interval (first column after impl); the fast/direct
comparison; the log-log growth exponents relpos bench fitted. Several files are not mixed: each
gets its own tables (ratios are only meaningful within one invocation).
"""
import json
import math
import sys


def fmt(x, f="{:.2f}"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f.format(x)


def loglog_slope(xs, ys):
    """Least-squares slope of log y on log x (the same fit relpos bench makes for wall time)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx


def table(doc):
    cases = [c for c in doc["cases"] if c["status"] == "ok"]
    none = {c["length"]: c for c in cases if c["variant"] == "none" and c["impl"] == "fast"}
    paired = any("paired_vs_none" in c for c in cases)
    print("| variant | impl | T |" + (" paired x none [95% CI] |" if paired else "")
          + " ms/step | x none | CPU ms/step | x none | tok/s | peak RSS MB "
          "| x none | tensor peak MB | x none |")
    print("|---|---|--:|" + ("--:|" if paired else "") + "--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for c in doc["cases"]:
        if c["status"] != "ok":
            print(f"| {c['variant']} | {c['impl']} | {c['length']} | failed: {c.get('error','')} |")
            continue
        n = none.get(c["length"])
        tp = c["child"].get("tensor_peak_mb", -1)
        ntp = n["child"].get("tensor_peak_mb", -1) if n else -1
        cell = ""
        if paired:
            p = c.get("paired_vs_none")
            cell = " {} |".format("-" if not p or p["ratio"] is None else "{:.3f} [{:.3f}, {:.3f}]".format(
                p["ratio"], p["ci95"][0], p["ci95"][1]))
        print("| {} | {} | {} |".format(c["variant"], c["impl"], c["length"]) + cell
              + " {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            fmt(c["step_ms"], "{:.0f}"),
            fmt(c["time_ratio_vs_none"]), fmt(c["cpu_ms"], "{:.0f}"),
            fmt(c["cpu_ms"] / n["cpu_ms"] if n else None), fmt(c["tokens_per_s"], "{:.0f}"),
            fmt(c["peak_rss_mb"], "{:.0f}"), fmt(c["peak_ratio_vs_none"]),
            fmt(tp, "{:.0f}") if tp >= 0 else "-",
            fmt(tp / ntp) if tp >= 0 and ntp > 0 else "-"))
    fast = {(c["variant"], c["length"]): c for c in cases if c["impl"] == "fast"}
    rows = [c for c in cases if c["impl"] == "direct" and (c["variant"], c["length"]) in fast]
    if rows:
        print("\n| variant | T | fast ms | direct ms | direct/fast | fast CPU ms | direct CPU ms "
              "| fast peak MB | direct peak MB | direct/fast | fast tensor MB | direct tensor MB "
              "| direct/fast |")
        print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for d in rows:
            f = fast[(d["variant"], d["length"])]
            ft, dt = f["child"].get("tensor_peak_mb", -1), d["child"].get("tensor_peak_mb", -1)
            print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                d["variant"], d["length"], fmt(f["step_ms"], "{:.0f}"), fmt(d["step_ms"], "{:.0f}"),
                fmt(d["step_ms"] / f["step_ms"]), fmt(f["cpu_ms"], "{:.0f}"),
                fmt(d["cpu_ms"], "{:.0f}"), fmt(f["peak_rss_mb"], "{:.0f}"),
                fmt(d["peak_rss_mb"], "{:.0f}"), fmt(d["peak_rss_mb"] / f["peak_rss_mb"]),
                fmt(ft, "{:.0f}"), fmt(dt, "{:.0f}"), fmt(dt / ft if ft > 0 else None)))
    fits = [f for f in doc.get("fits", []) if f["points"] >= 2]
    if fits:
        print("\n| variant | impl | points | wall step time ~ T^p | CPU step time ~ T^p "
              "| step MB ~ T^p | tensor peak ~ T^p |")
        print("|---|---|--:|--:|--:|--:|--:|")
        for f in fits:
            pts = sorted((c["length"], c) for c in cases
                         if c["variant"] == f["variant"] and c["impl"] == f["impl"])
            xs = [t for t, _ in pts]
            cpu = loglog_slope(xs, [c["cpu_ms"] for _, c in pts])
            tens = loglog_slope(xs, [c["child"].get("tensor_peak_mb", -1) for _, c in pts])
            print("| {} | {} | {} | {} | {} | {} | {} |".format(
                f["variant"], f["impl"], f["points"], fmt(f["time_exponent"]), fmt(cpu),
                fmt(f.get("step_mb_exponent", f.get("cuda_peak_mb_exponent"))), fmt(tens)))


def combined_growth(docs):
    """CPU-time and tensor-peak exponents over every length in all the files (absolute numbers,
    not ratios, so files from separate invocations on the same machine may be combined)."""
    pts = {}
    for doc in docs:
        for c in doc["cases"]:
            if c["status"] == "ok":
                pts.setdefault((c["variant"], c["impl"]), []).append(c)
    print("| variant | impl | lengths | CPU step time ~ T^p | tensor peak ~ T^p | CPU ms per token, "
          "first -> last T |")
    print("|---|---|---|--:|--:|---|")
    for (v, impl), cs in pts.items():
        cs.sort(key=lambda c: c["length"])
        xs = [c["length"] for c in cs]
        if len(xs) < 2:
            continue
        per_tok = [c["cpu_ms"] / (c["length"] * c["child"]["batch"]) for c in (cs[0], cs[-1])]
        print("| {} | {} | {} | {} | {} | {:.4f} -> {:.4f} |".format(
            v, impl, ",".join(map(str, xs)), fmt(loglog_slope(xs, [c["cpu_ms"] for c in cs])),
            fmt(loglog_slope(xs, [c["child"]["tensor_peak_mb"] for c in cs])), *per_tok))


if sys.argv[1:2] == ["--growth"]:
    combined_growth([json.load(open(p)) for p in sys.argv[2:]])
    sys.exit(0)

for path in sys.argv[1:]:
    doc = json.load(open(path))
    print(f"<!-- {path}: {doc['command']} ({doc['machine']['date']}) -->\n")
    table(doc)
    print()
