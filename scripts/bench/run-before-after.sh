#!/usr/bin/env bash
# One change measured against the build before it: the same bench (VARIANTS at T=512 on the
# default bench model, fast paths, 1 warm-up + 3 steps, --repeat 2) run by the executable BEFORE
# and then by the current build ($RELPOS, default build/app/relpos), back to back on an idle
# machine, with a load sampler. Ratios to `none` compare within each invocation; the two
# invocations' ratios are what the change did.
# Usage: [ROUNDS=N] scripts/bench/run-before-after.sh BEFORE NAME VARIANTS [OUTDIR]
#   e.g. scripts/bench/run-before-after.sh /tmp/old/build/app/relpos huang-scale none,huang_m1,huang_m2
# Writes OUTDIR/NAME-{before,after}.{json,txt} and OUTDIR/load-NAME.log (OUTDIR: results/bench/).
# ROUNDS=N (N >= 2): N rounds of one repeat each, alternating which executable runs first, into
# OUTDIR/NAME-{before,after}-rK.json, then the paired per-round comparison with its 95% interval
# (scripts/bench/compare_rounds.py) into OUTDIR/NAME-rounds.txt: on a machine whose speed drifts
# between processes, the change a single pair of invocations shows can be noise.
# BEFORE_ARGS: more options for BEFORE's invocations only, e.g. the same executable with
#   BEFORE_ARGS="--set cpu_allocator=cache_small_pages"; METRIC=step_ms compares every variant's
#   step time itself (none included) instead of its ratio to none.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 BEFORE NAME VARIANTS [OUTDIR]" >&2
  exit 2
fi
before=$1 name=$2 variants=$3
[ -x "$before" ] || { echo "$0: BEFORE: $before is not an executable" >&2; exit 2; }
# shellcheck source=scripts/bench/common.sh
source "$(dirname "$0")/common.sh" "load-$name.log" "${4:-results/bench}"
rounds=${ROUNDS:-1}
case $rounds in '' | *[!0-9]*) echo "$0: ROUNDS=$rounds: expected a whole number" >&2; exit 2 ;; esac
# One invocation of the bench by BEFORE or the current build: run WHICH JSON REPEATS
run() {
  local exe=$relpos
  [ "$1" = before ] && exe=$before
  local extra=()
  # shellcheck disable=SC2206  # BEFORE_ARGS is split into options on purpose
  [ "$1" = before ] && extra=(${BEFORE_ARGS:-})
  "$exe" bench --variants "$variants" --lengths 512 --steps 3 --warmup 1 --direct none \
    --repeat "$3" --json "$2" "${extra[@]}"
}
if [ "$rounds" -le 1 ]; then
  for which in before after; do
    echo "# $which (the git commit of its source is in the JSON)" | tee "$out/$name-$which.txt"
    run "$which" "$out/$name-$which.json" 2 | tee -a "$out/$name-$which.txt"
  done
  exit 0
fi
for which in before after; do
  echo "# $which, $rounds rounds (the git commit of its source is in the JSON)" >"$out/$name-$which.txt"
done
for r in $(seq 1 "$rounds"); do
  order="before after"
  [ $((r % 2)) -eq 0 ] && order="after before"
  for which in $order; do
    echo "# round $r: $which" | tee -a "$out/$name-$which.txt"
    run "$which" "$out/$name-$which-r$r.json" 1 | tee -a "$out/$name-$which.txt"
  done
done
"$(dirname "$0")/compare_rounds.py" "$out" "$name" "$rounds" "${METRIC:-ratio}" |
  tee "$out/$name-rounds.txt"
