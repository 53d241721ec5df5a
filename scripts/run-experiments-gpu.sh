#!/usr/bin/env bash
# The gpu scale of the invariance experiment and of huang2020's pre-training stage
# (configs/experiments/*/gpu.yaml; docs/experiments.md, "The gpu scale"), in one go for a GPU
# machine lent for minutes: build relpos against the machine's PyTorch LibTorch, run
# `relpos reproduce NAME --scale gpu --no-figures` for each experiment (the machine has no
# gnuplot), and pack what is to be committed into one archive: results/NAME-gpu/ without run.h5
# and checkpoints, and results/CLAIMS.md (the index of every experiment of the copy, the gpu
# ones beside the committed mini ones). Back here: `tar xzf results-gpu.tar.gz` at the
# repository root, scripts/check_results.py, commit.
#
# Usage: scripts/run-experiments-gpu.sh OUTDIR [DEBDIR]
#   DEBDIR: Debian .deb files of the libraries the machine lacks (scripts/cuda_deps.sh).
#   The built-in corpus must be at data/sotu/package/data (carry it: it is not committed).
# Environment:
#   RELPOS_GPU_EXPERIMENTS  experiments to run, in order (default "invariance huang2020")
#   RELPOS_GPU_BUDGET       seconds from the start (default 560): an experiment still running
#                           then is stopped (its finished runs are packed; its report is not
#                           written), one that would start later is skipped
#   RELPOS_GPU_BUILD        build folder (default build-gpu); RELPOS_GPU_SKIP_BUILD=1 uses it as it is
#   RELPOS_GPU_SETS         extra key=value overrides for every run, space-separated (a smoke
#                           test on a CPU: "device=cpu precision=fp32 train.steps=2")
#   RELPOS_COMMIT           the commit, where the copy has no .git (relpos writes it into every
#                           run and report then; pass it only for a copy of a clean checkout)
# Writes OUTDIR/experiments-gpu.log and OUTDIR/results-gpu.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${1:?usage: scripts/run-experiments-gpu.sh OUTDIR [DEBDIR]}
DEBS=${2:-}
BUILD=${RELPOS_GPU_BUILD:-build-gpu}
BUDGET=${RELPOS_GPU_BUDGET:-560}
EXPERIMENTS=${RELPOS_GPU_EXPERIMENTS:-invariance huang2020}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
exec > >(tee "$OUT/experiments-gpu.log") 2>&1
t0=$SECONDS
say() { echo "[$((SECONDS - t0)) s] $*"; }

[ -n "${RELPOS_COMMIT:-}" ] && export RELPOS_COMMIT
say "date $(date -u +%FT%TZ), host $(uname -n), $(nproc) cores, commit ${RELPOS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ -n "$DEBS" ]; then scripts/cuda_deps.sh "$DEBS" | grep -v "unpacked"; fi
[ -d data/sotu/package/data ] || { say "no corpus at data/sotu/package/data (carry it)"; exit 1; }

if [ "${RELPOS_GPU_SKIP_BUILD:-0}" != 1 ]; then
  say "build"
  scripts/gpu_build.sh "$BUILD" || exit 1
fi
R=$BUILD/app/relpos
[ -x "$R" ] || { say "no relpos executable in $BUILD"; exit 1; }

sets=()
for s in ${RELPOS_GPU_SETS:-}; do sets+=(--set "$s"); done
dirs=()
for name in $EXPERIMENTS; do
  left=$((BUDGET - (SECONDS - t0)))
  if [ "$left" -le 30 ]; then say "skipped $name: the budget of $BUDGET s is spent"; continue; fi
  say "reproduce $name --scale gpu (at most $left s)"
  # SIGTERM at the budget: the runs checkpoint and stop; the finished ones are kept.
  timeout --signal=TERM --kill-after=30 "$left" \
    "$R" reproduce "$name" --scale gpu --no-figures "${sets[@]}"
  say "reproduce $name: exit $?"
  [ -d "results/$name-gpu" ] && dirs+=("results/$name-gpu")
done

[ ${#dirs[@]} -gt 0 ] || { say "nothing to pack"; exit 1; }
# What results/ commits: reports, tables, metrics, configs (run.h5 and checkpoints stay here).
tar czf "$OUT/results-gpu.tar.gz" --exclude='*.h5' --exclude='checkpoints' --exclude='*.pt' \
  --exclude='*.ckpt' --exclude='split.json' --exclude='*.lock' --exclude='*.shadow' --exclude='report.html' \
  "${dirs[@]}" $( [ -f results/CLAIMS.md ] && echo results/CLAIMS.md)
say "packed ${dirs[*]}: $(du -h "$OUT/results-gpu.tar.gz" | cut -f1)"
