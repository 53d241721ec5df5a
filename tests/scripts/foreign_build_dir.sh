#!/usr/bin/env bash
# A checkout copied with its build folder: the copy's build/CMakeCache.txt names the original
# tree, and cmake refuses it with its cache error. scripts/setup.sh (through scripts/test.sh and
# scripts/quickstart.sh too) calls relpos_reset_foreign_build_dir from scripts/build_dir.sh, which
# must clear such a cache, and leave a cache of this tree alone. Shown on a tiny CMake project
# (no compiler needed): configure it, copy it, see cmake fail on the copy, reset, configure.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
# shellcheck source=/dev/null
source "$repo/scripts/build_dir.sh"

mkdir -p "$tmp/orig"
printf 'cmake_minimum_required(VERSION 3.13)\nproject(tiny LANGUAGES NONE)\n' >"$tmp/orig/CMakeLists.txt"
cmake -S "$tmp/orig" -B "$tmp/orig/build" >/dev/null 2>&1 || fail "configuring the original tree"
cp -a "$tmp/orig" "$tmp/copy"

# 1. The reproduction: cmake on the copied build folder fails with the cache error.
if out=$(cmake -S "$tmp/copy" -B "$tmp/copy/build" 2>&1); then
  fail "cmake accepted the copied cache; the test no longer reproduces the problem"
else
  grep -q "CMakeCache.txt" <<<"$out" || fail "unexpected cmake error: $out"
fi

# 2. The original's own cache is left alone, without a word.
msg=$(relpos_reset_foreign_build_dir "$tmp/orig/build" "$tmp/orig" 2>&1)
[ -z "$msg" ] || fail "a cache of this tree was reported: $msg"
[ -f "$tmp/orig/build/CMakeCache.txt" ] || fail "a cache of this tree was removed"

# 3. The copy's: cleared with a message naming the other tree, then cmake configures it.
msg=$(relpos_reset_foreign_build_dir "$tmp/copy/build" "$tmp/copy" 2>&1)
grep -qF "configured for another checkout (source $tmp/orig" <<<"$msg" || fail "message: '$msg'"
[ ! -e "$tmp/copy/build/CMakeCache.txt" ] || fail "the copied cache is still there"
cmake -S "$tmp/copy" -B "$tmp/copy/build" >/dev/null 2>&1 || fail "cmake after the reset"
[ "$(relpos_cache_value "$tmp/copy/build" CMAKE_HOME_DIRECTORY)" = "$(cd "$tmp/copy" && pwd -P)" ] ||
  fail "the new cache names $(relpos_cache_value "$tmp/copy/build" CMAKE_HOME_DIRECTORY)"

# 4. A fake cache (no cmake run) that names another source folder, and a folder with no cache.
mkdir -p "$tmp/fake/build/CMakeFiles"
printf 'CMAKE_HOME_DIRECTORY:INTERNAL=/elsewhere/relpos\nCMAKE_CACHEFILE_DIR:INTERNAL=/elsewhere/relpos/build\n' \
  >"$tmp/fake/build/CMakeCache.txt"
relpos_reset_foreign_build_dir "$tmp/fake/build" "$tmp/fake" 2>/dev/null
if [ -e "$tmp/fake/build/CMakeCache.txt" ] || [ -e "$tmp/fake/build/CMakeFiles" ]; then
  fail "the fake foreign cache was not cleared"
fi
mkdir -p "$tmp/empty/build"
relpos_reset_foreign_build_dir "$tmp/empty/build" "$tmp/empty" || fail "a folder without a cache"

# 5. setup.sh calls it before configuring.
# shellcheck disable=SC2016  # the literal text of the call
grep -q 'relpos_reset_foreign_build_dir "$BUILD_DIR"' "$repo/scripts/setup.sh" ||
  fail "scripts/setup.sh does not call relpos_reset_foreign_build_dir"
[ "$status" -eq 0 ] && echo "foreign build folder: ok"
exit "$status"
