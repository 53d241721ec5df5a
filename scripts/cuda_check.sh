#!/usr/bin/env bash
# Builds relpos against a CUDA LibTorch and checks the CUDA path on the GPU of this machine.
# Everything it reports is measured here; the logs go to LOGDIR (docs/scaling.md, "CUDA").
#
# Usage: scripts/cuda_check.sh LOGDIR [PHASE...]
#   phases (default: all, in this order)
#     build   configure and build into $RELPOS_BUILD_DIR (default build-cuda)
#     test    the ctest suite (CPU tests, run against the CUDA LibTorch)
#     interrupt  a small GPU run stopped by SIGTERM after its step-100 checkpoint and resumed,
#             against the same run uninterrupted
#     train   a BERT-base-size MLM run on the GPU (quickstart paper config, 300 steps), then
#             evaluated at 1x, 2x and 4x its training length
#     bench   `relpos bench --device cuda` over every variant at T = 128, 512, 1024, 2048
#     dist    `relpos train --nproc 2 --device cuda` (NCCL, or Gloo with RELPOS_DIST_BACKEND=gloo
#             when the two ranks must share one GPU) against one process on the same batch
#     quick   the quickstart experiment end to end with --set device=cuda
# The LibTorch comes from CMAKE_PREFIX_PATH, else from python3's torch package. NCCL_HOME is set
# from python3's nvidia-nccl package when unset. Other libraries (HDF5, yaml-cpp, ...) are found
# as usual; RELPOS_CMAKE_ARGS adds configure options (e.g. -DHDF5_ROOT=...), RELPOS_BUILD_ARGS build
# options (e.g. "-- -k 0" to see every compile error at once).
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${1:?usage: scripts/cuda_check.sh LOGDIR [build test interrupt dist bench quick train]}
shift
PHASES=("$@")
[ ${#PHASES[@]} -gt 0 ] || PHASES=(build test interrupt dist bench quick train)
mkdir -p "$LOG"
BUILD=${RELPOS_BUILD_DIR:-build-cuda}
RELPOS=$BUILD/app/relpos
JOBS=${RELPOS_JOBS:-$(nproc)}
DEVICE=${RELPOS_CHECK_DEVICE:-cuda}
# Extra --set overrides for every run (e.g. to rehearse the script on a CPU with a tiny model).
read -r -a EXTRA <<<"${RELPOS_CHECK_SETS:-}"
status=0

say() { echo "cuda_check: $*"; }
# phase NAME COMMAND...: runs one step, its output into LOG/NAME.log, its time and exit code said.
step() {
  local name=$1
  shift
  local t0=$SECONDS
  "$@" >"$LOG/$name.log" 2>&1
  local rc=$?
  say "$name: exit $rc after $((SECONDS - t0)) s (log: $LOG/$name.log)"
  [ $rc -eq 0 ] || { status=1; tail -n 15 "$LOG/$name.log"; }
  return $rc
}

facts() {
  say "date $(date -u +%FT%TZ), host $(uname -n), $(nproc) cores"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import torch; print("python3 torch", torch.__version__, "cuda", torch.version.cuda, "cxx11abi", torch.compiled_with_cxx11_abi())' 2>/dev/null
  say "$(g++ --version | head -n 1); $(cmake --version | head -n 1)"
}

build() {
  if [ -z "${CMAKE_PREFIX_PATH:-}" ]; then
    CMAKE_PREFIX_PATH=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
      { say "no CMAKE_PREFIX_PATH and no python3 torch: point CMAKE_PREFIX_PATH at a CUDA LibTorch"; return 1; }
  fi
  if [ -z "${NCCL_HOME:-}" ]; then
    NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null) && export NCCL_HOME
  fi
  say "LibTorch from $CMAKE_PREFIX_PATH; NCCL_HOME=${NCCL_HOME:-unset}"
  # CMake 4 refuses config files that ask for CMake < 3.5 (some distribution packages do).
  export CMAKE_POLICY_VERSION_MINIMUM=${CMAKE_POLICY_VERSION_MINIMUM:-3.5}
  # shellcheck disable=SC2086
  step configure cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH" \
    ${RELPOS_CMAKE_ARGS:-} || return 1
  grep -E "warning|Warning" -A2 "$LOG/configure.log" | grep -iE "gloo|nccl|sentencepiece|cuda" | head -n 5
  # shellcheck disable=SC2086
  step build cmake --build "$BUILD" -j"$JOBS" ${RELPOS_BUILD_ARGS:-} || return 1
  "$RELPOS" list >/dev/null || { say "the built relpos does not start"; ldd "$RELPOS" | grep "not found"; return 1; }
  grep -q "RELPOS_WITH_CUDA" "$BUILD/compile_commands.json" && say "built with c10_cuda (CUDA memory statistics)"
  say "relpos needs: $(readelf -d "$RELPOS" | awk '/NEEDED/{print $NF}' | tr -d '[]' | tr '\n' ' ')"
}

run_tests() {
  step ctest ctest --test-dir "$BUILD" -j"$JOBS" --timeout 600 --output-on-failure
  grep -E "tests passed|tests failed|\*\*\*Failed|Timeout" "$LOG/ctest.log" | head -n 20
}

# A BERT-base-size encoder (quickstart's paper config) on the built-in corpus, byte tokens.
BIG=(--config configs/experiments/quickstart/paper.yaml --set data.corpus=sotu --set data.tokenizer=bytes
     --set train.eval_every=100 --set train.checkpoint_every=100 --set train.log_every=20 --set snapshots.every_percent=50 "${EXTRA[@]}")
train_gpu() {
  rm -rf runs/cuda-m4
  step train-m4 "$RELPOS" train "${BIG[@]}" --set position.type=huang_m4 --set train.steps=300 --device "$DEVICE" \
    --out runs/cuda-m4 || return 1
  grep -E "tok/s|tokens/s" "$LOG/train-m4.log" | tail -n 2
  step eval-m4 "$RELPOS" eval --run runs/cuda-m4 --lengths 512,1024,2048 --device "$DEVICE"
  tail -n 8 "$LOG/eval-m4.log"
}

# SIGTERM to a small GPU run after its step-100 checkpoint, then --resume: the final losses should
# equal an uninterrupted run's (up to the GPU's nondeterministic reductions).
interrupt_gpu() {
  local small=(--config configs/experiments/quickstart/mini.yaml --set position.type=huang_m4 --set train.steps=400
               --set train.checkpoint_every=100 --device "$DEVICE" "${EXTRA[@]}")
  rm -rf runs/cuda-small runs/cuda-small-resumed
  step small "$RELPOS" train "${small[@]}" --out runs/cuda-small || return 1
  "$RELPOS" train "${small[@]}" --out runs/cuda-small-resumed >"$LOG/small-interrupted.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1200); do
    grep -q '"step":140' runs/cuda-small-resumed/metrics.jsonl 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  kill -TERM $pid 2>/dev/null
  wait $pid
  say "interrupted copy: exit $? (expected 143); $(grep -m1 -i 'resume' "$LOG/small-interrupted.log" | head -c 300)"
  step small-resume "$RELPOS" train --resume --out runs/cuda-small-resumed
  for r in runs/cuda-small runs/cuda-small-resumed; do say "$r: $(grep '"step":400' "$r/metrics.jsonl" | head -c 300)"; done
}

bench_gpu() {
  step bench "$RELPOS" bench --device "$DEVICE" --lengths "${RELPOS_CHECK_LENGTHS:-128,512,1024,2048}" --steps 10 --warmup 3 --json "$LOG/bench-cuda.json"
  tail -n 40 "$LOG/bench.log"
}

dist_gpu() {
  local small=(--config configs/experiments/quickstart/mini.yaml --set position.type=huang_m4 --set train.steps=60
               --set train.eval_every=30 --set train.checkpoint_every=30 --set train.log_every=10 --device "$DEVICE" "${EXTRA[@]}")
  rm -rf runs/cuda-dp1 runs/cuda-dp2-gloo runs/cuda-dp2-nccl
  step dp1 "$RELPOS" train "${small[@]}" --out runs/cuda-dp1
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  if [ "$gpus" -ge 2 ]; then
    step dp2-nccl "$RELPOS" train "${small[@]}" --nproc 2 --out runs/cuda-dp2-nccl
  else
    # NCCL refuses two ranks on one GPU: the run must stop with an error, not hang.
    RELPOS_DIST_TIMEOUT=60 "$RELPOS" train "${small[@]}" --nproc 2 --out runs/cuda-dp2-nccl >"$LOG/dp2-nccl.log" 2>&1
    say "dp2-nccl on one GPU: exit $? (expected non-zero); $(grep -m1 'error' "$LOG/dp2-nccl.log" | head -c 400)"
  fi
  RELPOS_DIST_BACKEND=gloo step dp2-gloo "$RELPOS" train "${small[@]}" --nproc 2 --out runs/cuda-dp2-gloo
  python3 - runs/cuda-dp1 runs/cuda-dp2-gloo runs/cuda-dp2-nccl <<'EOF'
import json, sys, os
def losses(d):
    p = os.path.join(d, "metrics.jsonl")
    if not os.path.exists(p): return {}
    out = {}
    for line in open(p):
        j = json.loads(line)
        if "train_loss" in j: out[j["step"]] = j["train_loss"]
    return out
ref = losses(sys.argv[1])
for d in sys.argv[2:]:
    l = losses(d)
    common = sorted(set(ref) & set(l))
    if not common: print(f"cuda_check: {d}: no losses to compare"); continue
    worst = max(abs(ref[s] - l[s]) for s in common)
    print(f"cuda_check: {d} vs one process: {len(common)} logged steps, max |loss difference| = {worst:.2e}")
EOF
}

quick_gpu() {
  rm -rf runs/quickstart-cuda
  step quickstart "$RELPOS" reproduce quickstart --scale mini --set device="$DEVICE" "${EXTRA[@]}" --out runs/quickstart-cuda
  tail -n 30 "$LOG/quickstart.log"
}

facts | tee "$LOG/facts.log"
for p in "${PHASES[@]}"; do
  case "$p" in
    build) build || { say "build failed: stopping"; exit 1; } ;;
    test) run_tests ;;
    train) train_gpu ;;
    interrupt) interrupt_gpu ;;
    bench) bench_gpu ;;
    dist) dist_gpu ;;
    quick) quick_gpu ;;
    *) say "unknown phase '$p' (expected build test interrupt dist bench quick train)"; exit 2 ;;
  esac
done
exit $status
