#!/usr/bin/env bash
# The runs behind "CPU block cache" in docs/performance.md: the same `relpos bench` invocations
# with the block cache (cpu_allocator: cache, the default) and with LibTorch's allocator on glibc
# malloc (cpu_allocator: system), then short quickstart trainings with each for tokens/s.
# A load sampler logs `uptime` every 30 s.
# Usage: scripts/bench/run-block-cache.sh [OUTDIR]   (default results/bench/); run from the
# repository root.
set -euo pipefail
# shellcheck source=scripts/bench/common.sh
source "$(dirname "$0")/common.sh" load-block-cache.log "$@"
for alloc in cache system; do
  "$relpos" bench --lengths 512 --steps 3 --warmup 1 --set cpu_allocator=$alloc \
    --json "$out/results-t512-$alloc.json" | tee "$out/results-t512-$alloc.txt"
  "$relpos" bench --variants none,shaw,transformer_xl,huang,huang_m4 --lengths 1024 \
    --steps 2 --warmup 1 --set cpu_allocator=$alloc \
    --json "$out/results-t1024-$alloc.json" | tee "$out/results-t1024-$alloc.txt"
done
tmp=$(mktemp -d)  # throwaway run folders
for alloc in cache system; do
  for v in none learned shaw rope t5_bias; do
    echo "== quickstart $v, cpu_allocator=$alloc"
    "$relpos" train --config configs/experiments/quickstart/mini.yaml --set position.type=$v \
      --set train.steps=60 --set cpu_allocator=$alloc --out "$tmp/$alloc-$v" 2>&1 | tail -n 4
  done
done | tee "$out/quickstart-block-cache.txt"
