#!/usr/bin/env bash
# The variants of issue 28 against `none` on the default bench model (configs/bench.yaml), one
# invocation at T=128 and 512, fast paths only (deberta's and cope's direct paths build
# (B,H,T,T,d) tensors: several GB at T=512, for tests only). A load sampler logs `uptime` every
# 30 s. Usage: scripts/bench/run-issue28.sh [OUTDIR]   (default results/bench/); run from the repository root.
set -euo pipefail
# shellcheck source=scripts/bench/common.sh
source "$(dirname "$0")/common.sh" load-issue28.log "$@"
"$relpos" bench --variants none,deberta,kerple_log,kerple_power,fire,xpos,cope \
  --lengths 128,512 --steps 3 --warmup 1 --direct none \
  --json "$out/results-issue28.json" | tee "$out/results-issue28.txt"
