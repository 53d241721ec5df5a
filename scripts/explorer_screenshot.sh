#!/usr/bin/env bash
# A PNG of a report's interactive explorer (docs/analysis.md, "The explorer (report.html)"), as headless Chromium
# renders it: the report.html's explorer section alone (its style and data kept, the rest of the
# report left out so the picture starts at the explorer), at its default selection.
#
# Usage: scripts/explorer_screenshot.sh REPORT_HTML OUT_PNG [WIDTHxHEIGHT [SELECTION]]
#   WIDTHxHEIGHT default 1200x1500. SELECTION: what the page shows, as the self-test's probe list
#   (docs/analysis.md), e.g. '[{"run":"learned-seed1","map":"P·Pᵀ: learned","step":200,"layer":0,"head":0,"i":20,"j":10}]':
#   the selectors are set to its last probe and the cursor put on that cell.
# Needs chromium (scripts/setup.sh installs it) and python3.
set -euo pipefail
html=${1:?usage: scripts/explorer_screenshot.sh REPORT_HTML OUT_PNG [WIDTHxHEIGHT]}
out=${2:?usage: scripts/explorer_screenshot.sh REPORT_HTML OUT_PNG [WIDTHxHEIGHT]}
size=${3:-1200x1500}
selection=${4:-}
[[ $size =~ ^[0-9]+x[0-9]+$ ]] || { echo "explorer_screenshot: size '$size' is not WIDTHxHEIGHT" >&2; exit 2; }
# Debian's browser binary before its /usr/bin/chromium wrapper, which refuses to start when
# /proc/cpuinfo lists no sse3 flag (a VM may trim the list; the binary asks the processor).
debian_binary=/usr/lib/chromium/chromium
[ -x "$debian_binary" ] || debian_binary=""
browser=${RELPOS_CHROMIUM:-${debian_binary:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}}
[ -n "$browser" ] || { echo "explorer_screenshot: no chromium on PATH (run scripts/setup.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$html" "$tmp/explorer.html" <<'PY'
import sys
src, dst = sys.argv[1], sys.argv[2]
page = open(src, encoding="utf-8").read()
head_end = page.find("<body>")
start = page.find('<h2 id="explorer">')
if head_end < 0 or start < 0:
    sys.exit(f"explorer_screenshot: {src}: no <body> or no explorer section "
             "(a report written before the explorer existed? run `relpos report` again)")
open(dst, "w", encoding="utf-8").write(page[:head_end] + "<body>\n" + page[start:])
PY
timeout 180 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$tmp/profile" --virtual-time-budget=20000 \
  --window-size="${size/x/,}" --screenshot="$(realpath -m "$out")" "file://$tmp/explorer.html${selection:+#selftest=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$selection")}" \
  >"$tmp/chromium.log" 2>&1 || { cat "$tmp/chromium.log" >&2; exit 1; }
[ -s "$out" ] || { echo "explorer_screenshot: chromium wrote no $out" >&2; cat "$tmp/chromium.log" >&2; exit 1; }
echo "explorer_screenshot: wrote $out"
