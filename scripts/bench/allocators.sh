#!/usr/bin/env bash
# The CPU block cache against the allocators that usually replace glibc malloc (docs/architecture.md,
# "Hand-written where a library exists"): `relpos bench` of
# none and shaw at T = 512 under
#   cache     cpu_allocator: cache (relpos's block cache, the default)
#   system    cpu_allocator: system (glibc malloc)
#   jemalloc  cpu_allocator: system with LD_PRELOAD of Debian's libjemalloc2
#   mimalloc  cpu_allocator: system with LD_PRELOAD of Debian's libmimalloc2.0
#   jemalloc-retain, mimalloc-retain  the same, told to keep freed memory (jemalloc: no decay;
#             mimalloc: no page reset, a long reset delay, eager commit), as the block cache does
# interleaved (cache, system, jemalloc, mimalloc, the -retain pair, then again) ROUNDS times in one session, each a
# bench of its own; the summary is each allocator's median step time and peak RSS over the rounds,
# and its ratio to the cache's in the same round (the machine's speed drifts between processes).
#
# Usage: scripts/bench/allocators.sh OUTDIR [ROUNDS]   (ROUNDS default 3; needs build/app/relpos;
# installs libjemalloc2 and libmimalloc2.0 when missing, as root or with sudo)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?usage: scripts/bench/allocators.sh OUTDIR [ROUNDS]}
ROUNDS=${2:-3}
R=${RELPOS_BUILD_DIR:-build}/app/relpos
[ -x "$R" ] || { echo "allocators: no $R (build first: scripts/setup.sh)" >&2; exit 1; }
missing=()
for p in libjemalloc2 libmimalloc2.0; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
JEMALLOC=$(dpkg -L libjemalloc2 | grep -m1 'libjemalloc\.so\.2$')
MIMALLOC=$(dpkg -L libmimalloc2.0 | grep -m1 'libmimalloc\.so\.2')
mkdir -p "$OUT"
bench() {  # NAME ROUND [ENV...] -- relpos bench arguments
  local name=$1 round=$2
  shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$R" bench --variants none,shaw --lengths 512 --steps 5 --warmup 2 \
    --json "$OUT/$name-round$round.json" "$@" >"$OUT/$name-round$round.txt" 2>&1
}
for round in $(seq 1 "$ROUNDS"); do
  echo "round $round of $ROUNDS"
  bench cache "$round" RELPOS_ALLOCATOR_RUN=cache --
  bench system "$round" RELPOS_ALLOCATOR_RUN=system -- --set cpu_allocator=system
  bench jemalloc "$round" "LD_PRELOAD=$JEMALLOC" -- --set cpu_allocator=system
  bench mimalloc "$round" "LD_PRELOAD=$MIMALLOC" -- --set cpu_allocator=system
  bench jemalloc-retain "$round" "LD_PRELOAD=$JEMALLOC" MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 \
    -- --set cpu_allocator=system
  bench mimalloc-retain "$round" "LD_PRELOAD=$MIMALLOC" MIMALLOC_PAGE_RESET=0 MIMALLOC_ARENA_EAGER_COMMIT=1 \
    MIMALLOC_RESET_DELAY=1000000 -- --set cpu_allocator=system
done
python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
names = ["cache", "system", "jemalloc", "mimalloc", "jemalloc-retain", "mimalloc-retain"]
rows = {}
for n in names:
    for r in range(1, rounds + 1):
        j = json.load(open(f"{out}/{n}-round{r}.json"))
        for c in j["cases"]:
            if c["impl"] != "fast":
                continue
            rows.setdefault((c["variant"], n), []).append((r, c["step_ms"], c["peak_rss_mb"]))
print(f"| variant | allocator | step ms (median of {rounds}) | x cache (median of per-round ratios) | peak RSS MB | x cache |")
print("|---|---|---|---|---|---|")
for v in ["none", "shaw"]:
    base = {r: (ms, mb) for r, ms, mb in rows[(v, "cache")]}
    for n in names:
        pts = rows[(v, n)]
        t = [ms / base[r][0] for r, ms, _ in pts]
        m = [mb / base[r][1] for r, _, mb in pts]
        print(f"| {v} | {n} | {statistics.median(p[1] for p in pts):.0f} | {statistics.median(t):.2f} "
              f"[{min(t):.2f}, {max(t):.2f}] | {statistics.median(p[2] for p in pts):.0f} | "
              f"{statistics.median(m):.2f} |")
PY
