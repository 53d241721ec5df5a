#!/usr/bin/env bash
# Builds relpos on a GPU machine against its PyTorch's LibTorch (CUDA), for the scripts a GPU
# machine lent for minutes runs in one go (scripts/bench/run-gpu.sh,
# scripts/run-experiments-gpu.sh). Configure and build output go to BUILD/build.log; the
# errors, if any, are printed. Exit status 0 when BUILD/app/relpos was built.
#
# Usage: scripts/gpu_build.sh BUILD [TESTS]
#   TESTS: regex of the test files to build too (RELPOS_TEST_ONLY, e.g. test_fused_attention);
#   default: none (a regex no test file matches).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${1:?usage: scripts/gpu_build.sh BUILD [TESTS]}
TESTS=${2:-^\$}
export CMAKE_POLICY_VERSION_MINIMUM=${CMAKE_POLICY_VERSION_MINIMUM:-3.5}
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
  { echo "gpu_build: python3 has no torch to take LibTorch from" >&2; exit 1; }
NCCL_HOME=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null) && export NCCL_HOME
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
echo "gpu_build: configure (LibTorch from $prefix)"
mkdir -p "$BUILD"
if ! cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$prefix" \
  "-DRELPOS_TEST_ONLY=$TESTS" >"$BUILD/build.log" 2>&1; then
  tail -n 30 "$BUILD/build.log"
  exit 1
fi
keep=()
[ ${#gen[@]} -gt 0 ] && keep=(-- -k 0)
cmake --build "$BUILD" -j"$(nproc)" "${keep[@]}" >>"$BUILD/build.log" 2>&1
rc=$?
echo "gpu_build: build exit $rc"
grep -E "error:|FAILED:" "$BUILD/build.log" | head -n 20
[ -x "$BUILD/app/relpos" ] || { echo "gpu_build: no relpos executable" >&2; exit 1; }
