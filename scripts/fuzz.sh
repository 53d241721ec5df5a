#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/, clang) and runs each for a bounded time.
# Usage: scripts/fuzz.sh [SECONDS_PER_HARNESS=60] [HARNESS...]   (harnesses: config data safetensors)
# Environment: RELPOS_FUZZ_BUILD (default build-fuzz), RELPOS_JOBS (default 2),
#   RELPOS_CORE_LIB (default build/core/libcore.a when it exists: link the normal build's core
#   instead of compiling all of core with clang).
# Seeds: the config harness starts from every YAML file under configs/ (copied into
# build-fuzz/seeds/config at each run, so the seeds are the configs as they are now); the data
# harness from fuzz/corpus/data; both also from the kept inputs in tests/fixtures/fuzz/<harness>/
# (for the config harness, seed-set-overrides.txt shows its "--set ..." + "---cfg---" form).
# A crash leaves its input as build-fuzz/findings/<harness>/crash-*; replay it with
#   build-fuzz/fuzz/fuzz_<harness> FILE, then add it to tests/fixtures/fuzz/<harness>/ (replayed
#   by tests/test_fuzz_regressions.cpp) and fix the code.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-60}"
shift || true
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(config data safetensors)
BUILD="${RELPOS_FUZZ_BUILD:-build-fuzz}"
CXX_BIN="$(command -v clang++ || command -v clang++-14 || true)"
C_BIN="$(command -v clang || command -v clang-14 || true)"
if [ -z "$CXX_BIN" ]; then
  echo "fuzz: clang++ not found; install clang and libclang-rt-dev (Debian: clang-14 libclang-rt-14-dev)" >&2
  exit 1
fi
CORE_LIB="${RELPOS_CORE_LIB:-}"
[ -n "$CORE_LIB" ] || { [ -f build/core/libcore.a ] && CORE_LIB="$PWD/build/core/libcore.a"; } || true
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$CXX_BIN" \
  -DCMAKE_C_COMPILER="$C_BIN" -DRELPOS_FUZZ=ON -DRELPOS_BUILD_TESTS=OFF \
  -DRELPOS_FUZZ_CORE_LIB="$CORE_LIB" >/dev/null
targets=()
for h in "${HARNESSES[@]}"; do targets+=("fuzz_$h"); done
cmake --build "$BUILD" -j"${RELPOS_JOBS:-2}" --target "${targets[@]}"

# LibTorch keeps allocations alive until exit by design; leak reports would drown real findings.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
# The config seeds: configs/**/*.yaml, one file each (path separators become _).
seed_dir() {
  if [ "$1" = config ]; then
    local dir="$BUILD/seeds/config"
    rm -rf "$dir" && mkdir -p "$dir"
    find configs -name '*.yaml' | while read -r f; do cp "$f" "$dir/$(echo "$f" | tr / _)"; done
    echo "$dir"
  else
    echo "fuzz/corpus/$1"
  fi
}
status=0
for h in "${HARNESSES[@]}"; do
  work="$BUILD/corpus/$h" findings="$BUILD/findings/$h" seeds="$(seed_dir "$h")"
  mkdir -p "$work" "$findings"
  echo "fuzz: $h for ${SECONDS_EACH}s (seeds: $seeds, regressions: tests/fixtures/fuzz/$h)"
  if ! "$BUILD/fuzz/fuzz_$h" "$work" "$seeds" tests/fixtures/fuzz/"$h" \
      -max_total_time="$SECONDS_EACH" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
      -artifact_prefix="$findings/" -print_final_stats=1 2>"$BUILD/fuzz_$h.log"; then
    echo "fuzz: $h FOUND A PROBLEM; see $BUILD/fuzz_$h.log and $findings/" >&2
    tail -40 "$BUILD/fuzz_$h.log" >&2
    status=1
  else
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$BUILD/fuzz_$h.log" || true
  fi
done
exit $status
