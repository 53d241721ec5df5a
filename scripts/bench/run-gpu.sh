#!/usr/bin/env bash
# The GPU measurements of docs/performance.md ("Fused attention (GPU)"), in one go for a GPU
# machine lent for minutes: build relpos against the machine's PyTorch LibTorch, check the fused
# attention path against the eager one on the GPU (test_fused_attention), then bench the
# BERT-base shape (12 layers, width 768, 12 heads, T = 512, batch 32) eager against fused in bf16
# and fp32 beside the plain-PyTorch peer (scripts/bench/peer_sdpa.py), and every variant's peak
# GPU memory at T = 2048, batch 8.
#
# Usage: scripts/bench/run-gpu.sh OUTDIR [DEBDIR]
#   DEBDIR: Debian .deb files of the libraries the machine lacks, unpacked by scripts/cuda_deps.sh
#   (for a machine without a package registry). RELPOS_GPU_BUILD (default build-gpu) is the build
#   folder; RELPOS_GPU_STEPS (default 10) the measured steps at T = 512; RELPOS_GPU_BUDGET
#   (seconds, default 500) skips the phases that would start after it (they are in order of
#   importance); RELPOS_COMMIT names the commit where the copy has no .git; RELPOS_GPU_PHASES
#   (default "test t512 peer t2048 fp32") the phases after the build: test (test_fused_attention),
#   t512 (bf16, eager and fused), peer, t2048 (every variant), fp32, and bias (the position-bias
#   variants alone at T = 512 and T = 2048, for a second look after a change to them, beside the
#   peer's trainable relative bias with a per-operator profile of its step), and ratio (relpos
#   and the peer alternately, three times each, none and rope: the relpos / peer ratio's spread).
# Writes OUTDIR/gpu.log (everything said, the build's errors included; the whole build log is
# BUILD/build.log, written by scripts/gpu_build.sh) and the bench and peer outputs (seven files).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${1:?usage: scripts/bench/run-gpu.sh OUTDIR [DEBDIR]}
DEBS=${2:-}
BUILD=${RELPOS_GPU_BUILD:-build-gpu}
STEPS=${RELPOS_GPU_STEPS:-10}
BUDGET=${RELPOS_GPU_BUDGET:-500}
PHASES=" ${RELPOS_GPU_PHASES:-test t512 peer t2048 fp32} "
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu.log") 2>&1
t0=$SECONDS
say() { echo "[$((SECONDS - t0)) s] $*"; }
# phase KEY NAME: false (and said) when KEY is not in RELPOS_GPU_PHASES or the budget is spent.
phase() {
  [[ "$PHASES" == *" $1 "* ]] || return 1
  shift
  if [ $((SECONDS - t0)) -ge "$BUDGET" ]; then say "skipped (budget of $BUDGET s spent): $1"; return 1; fi
  say "$1"
}

say "date $(date -u +%FT%TZ), host $(uname -n), $(nproc) cores, commit ${RELPOS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import torch; print("python3 torch", torch.__version__, "cuda", torch.version.cuda)'
if [ -n "$DEBS" ]; then scripts/cuda_deps.sh "$DEBS" | grep -v "unpacked"; fi

# Build: relpos and the fused-attention test only (minutes matter here).
say "build"
scripts/gpu_build.sh "$BUILD" test_fused_attention
say "build done"
R=$BUILD/app/relpos
[ -x "$R" ] || { say "no relpos executable"; exit 1; }
$R bench --blas --device cuda

phase test "test: fused against eager (CPU and CUDA)" &&
(cd tests && "../$BUILD/tests/relpos_core_tests" -tc="fused attention*") 2>&1 | tail -n 15

# No address-space limit (--max-memory 0): a CUDA process reserves virtual memory in the size of
# the GPU's, which the default limit (3/4 of RAM) can be below.
bert=(--set model.layers=12 --set model.width=768 --set model.heads=12 --set model.ff_width=3072
      --device cuda --direct none --max-memory 0)
phase t512 "bench: BERT-base shape, T=512, batch 32, bf16, eager and fused" &&
$R bench "${bert[@]}" --timeout 120 --batch 32 --lengths 512 --set precision=bf16 --attention eager,fused \
  --variants none,rope,learned,alibi,t5_bias,tisa,huang_m4,transformer_xl \
  --steps "$STEPS" --warmup 3 --json "$OUT/bert-t512-bf16.json" >"$OUT/bert-t512-bf16.txt" &&
cat "$OUT/bert-t512-bf16.txt"
phase peer "peer: plain PyTorch SDPA, same shape, bf16" &&
PYTHONUNBUFFERED=1 python3 scripts/bench/peer_sdpa.py --layers 12 --width 768 --heads 12 --ff 3072 \
  --batch 32 --lengths 512 --precision bf16 --variants none,rope,learned,alibi --steps "$STEPS" \
  --warmup 3 --json "$OUT/peer-t512-bf16.json"

phase t2048 "bench: every variant at T=2048, batch 8, bf16 (attention auto): peak GPU memory" &&
$R bench "${bert[@]}" --batch 8 --lengths 2048 --set precision=bf16 --steps 3 --warmup 1 \
  --timeout 60 --json "$OUT/bert-t2048-bf16.json" >"$OUT/bert-t2048-bf16.txt" &&
cat "$OUT/bert-t2048-bf16.txt"

phase fp32 "bench and peer: fp32, T=512, batch 32" &&
$R bench "${bert[@]}" --timeout 120 --batch 32 --lengths 512 --attention eager,fused --variants none,rope,alibi \
  --steps "$STEPS" --warmup 3 --json "$OUT/bert-t512-fp32.json" >"$OUT/bert-t512-fp32.txt" &&
cat "$OUT/bert-t512-fp32.txt" &&
PYTHONUNBUFFERED=1 python3 scripts/bench/peer_sdpa.py --layers 12 --width 768 --heads 12 --ff 3072 \
  --batch 32 --lengths 512 --precision fp32 --variants none,rope,alibi --steps "$STEPS" --warmup 3
phase bias "bench: the position-bias variants, bf16, T=512 batch 32 and T=2048 batch 8" &&
$R bench "${bert[@]}" --timeout 120 --batch 32 --lengths 512 --set precision=bf16 --attention eager,fused \
  --variants alibi,t5_bias,tisa,kerple_log --steps "$STEPS" --warmup 3 \
  --json "$OUT/bias-t512-bf16.json" >"$OUT/bias-t512-bf16.txt" &&
cat "$OUT/bias-t512-bf16.txt" &&
PYTHONUNBUFFERED=1 python3 scripts/bench/peer_sdpa.py --layers 12 --width 768 --heads 12 --ff 3072 \
  --batch 32 --lengths 512 --precision bf16 --variants none,alibi,rel_bias --steps "$STEPS" \
  --warmup 3 --profile 12 --json "$OUT/peer-bias-t512-bf16.json" &&
$R bench "${bert[@]}" --timeout 60 --batch 8 --lengths 2048 --set precision=bf16 --steps 3 --warmup 1 \
  --variants t5_bias,tisa,kerple_log,fire,transformer_xl,huang_m4 \
  --json "$OUT/bias-t2048-bf16.json" >"$OUT/bias-t2048-bf16.txt" &&
cat "$OUT/bias-t2048-bf16.txt"
phase ratio "relpos against the peer, alternately three times each: none and rope, T=512, batch 32, bf16" &&
for i in 1 2 3; do
  $R bench "${bert[@]}" --timeout 120 --batch 32 --lengths 512 --set precision=bf16 --attention fused \
    --variants none,rope --steps "$STEPS" --warmup 3 --json "$OUT/ratio-relpos-$i.json" |
    grep -E "^(none|rope) " &&
  PYTHONUNBUFFERED=1 python3 scripts/bench/peer_sdpa.py --layers 12 --width 768 --heads 12 --ff 3072 \
    --batch 32 --lengths 512 --precision bf16 --variants none,rope --steps "$STEPS" --warmup 3 \
    --json "$OUT/ratio-peer-$i.json"
done
say "done"
