#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs the whole ctest suite.
# Idempotent; safe to run again. Extra arguments go to ctest (e.g. -R config).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The loader tests of the built-in corpora need the cached data (they skip without it).
scripts/fetch_data.sh
cd "${RELPOS_BUILD_DIR:-build}"
ctest --output-on-failure -j"${RELPOS_JOBS:-2}" "$@"
