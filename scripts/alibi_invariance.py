#!/usr/bin/env python3
"""Translation invariance of the attention map of bidirectional ALiBi alone (docs/analysis.md).

The attention of a purely relative score, softmax_j(-m*|i - j|), is not Toeplitz: each row is
normalised over the offsets that row has, which differ near the edges. This prints the
invariance 1 - ||A - P(A)||^2 / ||A - mean(A)||^2 (P: the mean of each diagonal, DESIGN.md
section 4) for slope m = 1/16 at a few lengths. Written from the formulas in docs/analysis.md,
independently of relpos's code. Needs numpy (Debian: python3-numpy).
Usage: /usr/bin/python3 scripts/alibi_invariance.py [slope] [T ...]
"""
import sys

import numpy as np


def invariance(a):
    t = a.shape[0]
    proj = np.zeros_like(a)
    for r in range(-(t - 1), t):
        rows = np.arange(max(0, -r), min(t, t - r))
        proj[rows, rows + r] = np.diagonal(a, r).mean()
    return 1.0 - ((a - proj) ** 2).sum() / ((a - a.mean()) ** 2).sum()


def alibi_attention(t, slope):
    pos = np.arange(t)
    scores = -slope * np.abs(pos[None, :] - pos[:, None])
    probs = np.exp(scores - scores.max(axis=1, keepdims=True))
    return probs / probs.sum(axis=1, keepdims=True)


def main():
    slope = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0 / 16
    lengths = [int(x) for x in sys.argv[2:]] or [16, 64, 128]
    for t in lengths:
        print(f"T = {t:4d}  slope {slope:g}  invariance {invariance(alibi_attention(t, slope)):.4f}")


if __name__ == "__main__":
    main()
