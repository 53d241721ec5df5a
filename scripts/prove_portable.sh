#!/usr/bin/env bash
# Runs the README's test command (scripts/test.sh) on a clean clone in a hostile setting, and
# says how long it took (docs/reliability.md, "Proving the test command portable"):
#
#   scripts/prove_portable.sh loaded CLONE        every CPU busy with a CPU-bound job meanwhile
#   scripts/prove_portable.sh hidden-flags CLONE  /proc/cpuinfo without its flag list (root)
#   scripts/prove_portable.sh both CLONE          the two at once (root)
#
# CLONE is a clean clone (no build folder); when it does not exist it is cloned from this
# repository's HEAD first. Extra arguments go to scripts/test.sh (so to ctest). The environment
# passes through: RELPOS_DATA_DIR=/path/to/data reuses corpora fetched before (no download),
# RELPOS_LOAD_JOBS=N sets the number of busy jobs of `loaded` and `both` (default: one per CPU), and
# RELPOS_HIDE_FLAG=abm hides that one flag instead of the whole flag list in `hidden-flags`.
# Exit status: scripts/test.sh's; 2 when the setting cannot be made here.
set -euo pipefail

usage() {
  echo "usage: $0 loaded|hidden-flags|both CLONE [ctest arguments...]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
mode=$1
clone=$2
shift 2
case "$mode" in loaded | hidden-flags | both) ;; *) usage ;; esac

repo=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -e "$clone" ]; then
  echo "prove_portable: cloning $repo (HEAD $(git -C "$repo" rev-parse --short HEAD)) into $clone"
  git clone --quiet "$repo" "$clone"
fi
clone=$(cd "$clone" && pwd)
[ -x "$clone/scripts/test.sh" ] || {
  echo "prove_portable: error: $clone has no scripts/test.sh (expected a clone of relpos)" >&2
  exit 2
}
if [ -e "$clone/build" ]; then
  echo "prove_portable: note: $clone/build exists, so this is not a clean clone's first build" >&2
fi

# The busy jobs of `loaded`, ended on exit (only these, by their process ids), and the edited
# copy of /proc/cpuinfo of `hidden-flags`, removed on exit.
load_pids=()
edited=""
# shellcheck disable=SC2317  # run by the EXIT trap
clean_up() {
  local pid
  for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -z "$edited" ] || rm -f "$edited"
}
trap clean_up EXIT

# Starts N shell loops that never sleep: each keeps one CPU busy at the tests' own priority.
start_load() {
  local n=$1 i
  for ((i = 0; i < n; i++)); do
    (while :; do :; done) &
    load_pids+=("$!")
  done
  echo "prove_portable: $n CPU-bound job(s) running (pids ${load_pids[*]}) on $(nproc) CPU(s)"
}

# Writes /proc/cpuinfo to FILE without its flag lines (x86 "flags", aarch64 "Features"), or
# without the one flag $RELPOS_HIDE_FLAG.
edited_cpuinfo() {
  local file=$1
  if [ -n "${RELPOS_HIDE_FLAG:-}" ]; then
    sed -E "/^(flags|Features)[[:space:]]*:/ s/ ${RELPOS_HIDE_FLAG}( |\$)/\\1/" /proc/cpuinfo >"$file"
  else
    grep -Ev '^(flags|Features)[[:space:]]*:' /proc/cpuinfo >"$file"
  fi
}

# Runs scripts/test.sh in the clone with the processor's flags hidden from every process in a
# private mount namespace (the rest of the machine keeps the real /proc/cpuinfo).
run_hidden_flags() {
  if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null 2>&1; then
    echo "prove_portable: error: hidden-flags needs root and unshare (util-linux)" >&2
    exit 2
  fi
  edited=$(mktemp "${TMPDIR:-/tmp}/relpos-cpuinfo.XXXXXX")
  edited_cpuinfo "$edited"
  # shellcheck disable=SC2016  # expanded by the inner bash
  unshare --mount --propagation private bash -c '
    set -euo pipefail
    mount --bind "$1" /proc/cpuinfo
    echo "prove_portable: /proc/cpuinfo in this namespace has $(grep -cE "^(flags|Features)[[:space:]]*:" /proc/cpuinfo) flag line(s)${RELPOS_HIDE_FLAG:+; without ${RELPOS_HIDE_FLAG}: $(grep -cw -- "${RELPOS_HIDE_FLAG}" /proc/cpuinfo) line(s) still name it}"
    shift
    cd "$1"
    shift
    exec scripts/test.sh "$@"' prove_portable "$edited" "$clone" "$@"
}

start=$(date +%s)
echo "prove_portable: $mode: scripts/test.sh in $clone, started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
status=0
if [ "$mode" = loaded ]; then
  start_load "${RELPOS_LOAD_JOBS:-$(nproc)}"
  (cd "$clone" && scripts/test.sh "$@") || status=$?
elif [ "$mode" = hidden-flags ]; then
  run_hidden_flags "$@" || status=$?
else
  start_load "${RELPOS_LOAD_JOBS:-$(nproc)}"
  run_hidden_flags "$@" || status=$?
fi
end=$(date +%s)
echo "prove_portable: $mode: scripts/test.sh exited $status after $((end - start)) s" \
  "($(nproc) CPU(s), commit $(git -C "$clone" rev-parse --short HEAD))"
exit "$status"
