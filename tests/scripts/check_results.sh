#!/usr/bin/env bash
# The committed results/ name no machine's folders and link only committed files
# (scripts/check_results.py; `--fix` repairs stale outputs).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "not a git checkout: results check skipped"
  exit 0
fi
python3 scripts/check_results.py
