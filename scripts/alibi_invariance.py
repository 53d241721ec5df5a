#!/usr/bin/env python3
"""Translation invariance of the attention map of bidirectional ALiBi alone (docs/analysis.md).

The attention of a purely relative score, softmax_j(-m*|i - j|), is not Toeplitz: each row is
normalised over the offsets that row has, which differ near the edges. This prints the
invariance 1 - ||A - P(A)||^2 / ||A - mean(A)||^2 (P: the mean of each diagonal, DESIGN.md
section 4) for slope m = 1/16 at a few lengths. With --causal: the causal maps instead (each row
normalised over keys j <= i, measured over those entries only, as relpos measures causal maps),
of ALiBi's -m*(i - j) and of attention with no position information at all (1/(i+1) on every
visible key). Written from the formulas in
docs/analysis.md, independently of relpos's code. Needs numpy (Debian: python3-numpy).
Usage: /usr/bin/python3 scripts/alibi_invariance.py [--causal] [slope] [T ...]
"""
import sys

import numpy as np


def invariance(a, lower=False):
    """Over every entry, or (lower) over the visible entries j <= i of a causal map only."""
    t = a.shape[0]
    mask = np.tril(np.ones((t, t), dtype=bool)) if lower else np.ones((t, t), dtype=bool)
    proj = np.zeros_like(a)
    for r in range(-(t - 1), t):
        rows = np.arange(max(0, -r), min(t, t - r))
        keep = mask[rows, rows + r]
        if keep.any():
            proj[rows[keep], rows[keep] + r] = a[rows[keep], rows[keep] + r].mean()
    vals, fit = a[mask], proj[mask]
    return 1.0 - ((vals - fit) ** 2).sum() / ((vals - vals.mean()) ** 2).sum()


def alibi_attention(t, slope, causal=False):
    pos = np.arange(t)
    scores = -slope * np.abs(pos[None, :] - pos[:, None])
    if causal:
        scores = np.where(pos[None, :] <= pos[:, None], scores, -np.inf)
    probs = np.exp(scores - scores.max(axis=1, keepdims=True))
    return probs / probs.sum(axis=1, keepdims=True)


def uniform_causal_attention(t):
    pos = np.arange(t)
    return np.where(pos[None, :] <= pos[:, None], 1.0 / (pos[:, None] + 1.0), 0.0)


def main():
    args = sys.argv[1:]
    causal = "--causal" in args
    args = [a for a in args if a != "--causal"]
    slope = float(args[0]) if args else 1.0 / 16
    lengths = [int(x) for x in args[1:]] or [16, 64, 128]
    for t in lengths:
        line = f"T = {t:4d}  slope {slope:g}  invariance {invariance(alibi_attention(t, slope, causal), causal):.4f}"
        if causal:
            uniform = invariance(uniform_causal_attention(t), True)
            line += f"  (causal, over j <= i; no position information: {uniform:.4f})"
        print(line)


if __name__ == "__main__":
    main()
