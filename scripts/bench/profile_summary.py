#!/usr/bin/env python3
"""Where a bench step's time goes: self time per operator from the chrome traces that
`relpos bench --child ... --profile FILE` writes (one extra step, LibTorch's profiler).

Self time = an event's duration minus that of the events nested in it on the same thread, so
the rows add up to the step. Each trace is summarised on its own; with several, a last table
puts the operators side by side (ms per step), the first trace as the baseline.

Usage: scripts/bench/profile_summary.py [--top N] NAME=TRACE.json [NAME=TRACE.json ...]
"""
import argparse
import json
import sys
from collections import defaultdict


def summarize(path):
    """{operator name: self milliseconds} from one chrome trace: duration minus nested events."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"profile_summary: {path}: cannot read a chrome trace ({e})")
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    by_thread = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread[e.get("tid")].append((float(e["ts"]), float(e["dur"]), e.get("name", "?")))
    selfms = defaultdict(float)
    for evs in by_thread.values():
        evs.sort(key=lambda x: (x[0], -x[1]))
        stack = []  # entries: [end, name, dur, children]
        def close(entry):
            end, name, dur, children = entry
            selfms[name] += max(dur - children, 0.0) / 1000.0
        for ts, dur, name in evs:
            while stack and ts >= stack[-1][0]:
                close(stack.pop())
            if stack:
                stack[-1][3] += dur
            stack.append([ts + dur, name, dur, 0.0])
        while stack:
            close(stack.pop())
    return selfms


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--top", type=int, default=12)
    p.add_argument("traces", nargs="+", metavar="NAME=TRACE.json")
    a = p.parse_args()
    runs = []
    for item in a.traces:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            p.error(f"'{item}': expected NAME=TRACE.json")
        runs.append((name, summarize(path)))
    for name, ms in runs:
        total = sum(ms.values())
        print(f"\n{name}: {total:.0f} ms of operator self time in the profiled step\n")
        print(f"| operator | self ms | share |\n|---|--:|--:|")
        for op, t in sorted(ms.items(), key=lambda x: -x[1])[:a.top]:
            print(f"| {op} | {t:.1f} | {100 * t / total:.1f}% |")
    if len(runs) > 1:
        base_name, base = runs[0]
        ops = set()
        for _, ms in runs:
            ops.update(op for op, _ in sorted(ms.items(), key=lambda x: -x[1])[:a.top])
        order = sorted(ops, key=lambda op: -max(ms.get(op, 0.0) for _, ms in runs))
        print(f"\nself ms per operator (the top {a.top} of each), beside {base_name}\n")
        print("| operator | " + " | ".join(n for n, _ in runs) + " |")
        print("|---|" + "--:|" * len(runs))
        for op in order:
            print(f"| {op} | " + " | ".join(f"{ms.get(op, 0.0):.1f}" for _, ms in runs) + " |")
        print("| **total** | " + " | ".join(f"{sum(ms.values()):.1f}" for _, ms in runs) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
