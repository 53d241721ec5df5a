#!/usr/bin/env bash
# The README's main job: installs what is missing, fetches the built-in corpora, builds, then runs
# the quickstart experiment (a few small models with different position encodings trained on the
# built-in data, analysed and reported). Idempotent: a second run reuses finished runs.
# Usage: scripts/quickstart.sh [extra relpos reproduce options, e.g. --out DIR or --set k=v]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch_data.sh
BUILD_DIR="${RELPOS_BUILD_DIR:-build}"
# runs/ (git-ignored) rather than results/quickstart, which holds the committed reference run.
OUT=(--out runs/quickstart)
for a in "$@"; do case "$a" in --out|-o|--out=*) OUT=() ;; esac; done
"$BUILD_DIR/app/relpos" reproduce quickstart --scale mini "${OUT[@]}" "$@"
