#!/usr/bin/env bash
# One change measured against the build before it: the same bench (VARIANTS at T=512 on the
# default bench model, fast paths, 1 warm-up + 3 steps, --repeat 2) run by the executable BEFORE
# and then by the current build ($RELPOS, default build/app/relpos), back to back on an idle
# machine, with a load sampler. Ratios to `none` compare within each invocation; the two
# invocations' ratios are what the change did.
# Usage: scripts/bench/run-before-after.sh BEFORE NAME VARIANTS [OUTDIR]
#   e.g. scripts/bench/run-before-after.sh /tmp/old/build/app/relpos huang-scale none,huang_m1,huang_m2
# Writes OUTDIR/NAME-{before,after}.{json,txt} and OUTDIR/load-NAME.log (OUTDIR: results/bench/).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 BEFORE NAME VARIANTS [OUTDIR]" >&2
  exit 2
fi
before=$1 name=$2 variants=$3
[ -x "$before" ] || { echo "$0: BEFORE: $before is not an executable" >&2; exit 2; }
# shellcheck source=scripts/bench/common.sh
source "$(dirname "$0")/common.sh" "load-$name.log" "${4:-results/bench}"
for which in before after; do
  exe=$relpos
  [ "$which" = before ] && exe=$before
  echo "# $which (the git commit of its source is in the JSON)" | tee "$out/$name-$which.txt"
  "$exe" bench --variants "$variants" --lengths 512 --steps 3 --warmup 1 --direct none \
    --repeat 2 --json "$out/$name-$which.json" | tee -a "$out/$name-$which.txt"
done
