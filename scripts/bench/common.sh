# shellcheck shell=bash
# Sourced by the scripts/bench/run-*.sh scripts: the output folder ($1, default results/bench/),
# the relpos executable ($RELPOS, default build/app/relpos), and a load sampler that logs
# `uptime` every 30 s to OUT/LOGNAME until the script exits (it also removes the folder in $tmp,
# if set).
# Usage: source scripts/bench/common.sh LOGNAME "$@"
out=${2:-results/bench}
# shellcheck disable=SC2034  # read by the scripts that source this file
relpos=${RELPOS:-build/app/relpos}
mkdir -p "$out"
( while true; do echo "$(date -u +%FT%TZ) $(uptime)"; sleep 30; done ) >"$out/$1" &
sampler=$!
# shellcheck disable=SC2154  # tmp: set by a sourcing script that wants its folder removed
trap 'kill $sampler; rm -rf "${tmp:-}"' EXIT
