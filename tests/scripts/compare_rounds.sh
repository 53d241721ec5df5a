#!/usr/bin/env bash
# scripts/bench/compare_rounds.py against numbers worked out by hand: three rounds whose ratios to
# `none` are 1.30 1.40 1.20 before and 1.10 1.25 1.15 after. Paired differences -0.20 -0.15 -0.05:
# mean -0.1333, sample sd 0.07638, t(0.975, 2) = 4.303, half-width 4.303 * 0.07638 / sqrt(3) =
# 0.1898, so [-0.323, +0.056]; the ratio fell in 3 of 3 rounds, exact two-sided sign test
# p = 2 / 2^3 = 0.25. A missing round file is an error that names the file.
# With the step_ms metric, none's own step times: 3000 2800 2600 ms before, 2000 2100 2000 after;
# differences -1000 -700 -600, mean -766.7, sd 208.17, half-width 4.303 * 208.17 / sqrt(3) =
# 517.2, so [-1284, -250]; after / before 0.67 0.75 0.77, median 0.75.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
write() {  # write FILE RATIO
  cat >"$1" <<JSON
{"cases": [
 {"variant": "none", "impl": "fast", "length": 512, "status": "ok",
  "time_ratio_vs_none": 1.0, "peak_ratio_vs_none": 1.0},
 {"variant": "huang_m3", "impl": "fast", "length": 512, "status": "ok",
  "time_ratio_vs_none": $2, "peak_ratio_vs_none": 1.05}]}
JSON
}
r=1
for pair in "1.30 1.10" "1.40 1.25" "1.20 1.15"; do
  read -r before after <<<"$pair"
  write "$dir/x-before-r$r.json" "$before"
  write "$dir/x-after-r$r.json" "$after"
  r=$((r + 1))
done
out=$(python3 scripts/bench/compare_rounds.py "$dir" x 3)
echo "$out"
expect() {
  grep -qF -- "$1" <<<"$out" || { echo "FAIL: expected '$1' in the output" >&2; exit 1; }
}
expect "before: 1.30 1.40 1.20  (median 1.30)"
expect "after:  1.10 1.25 1.15  (median 1.15)"
expect "mean -0.133, 95% CI [-0.323, +0.056] (t, n=3); fell in 3 of 3 rounds, sign test p=0.250"
r=1
for pair in "3000 2000" "2800 2100" "2600 2000"; do
  read -r before after <<<"$pair"
  for w in before after; do
    ms=$before
    [ $w = after ] && ms=$after
    echo "{\"cases\": [{\"variant\": \"none\", \"impl\": \"fast\", \"length\": 512, \"status\": \"ok\",
      \"step_ms\": $ms, \"time_ratio_vs_none\": 1.0, \"peak_ratio_vs_none\": 1.0}]}" >"$dir/y-$w-r$r.json"
  done
  r=$((r + 1))
done
out=$(python3 scripts/bench/compare_rounds.py "$dir" y 3 step_ms)
echo "$out"
expect "none (fast, T=512)"
expect "before: 3000 2800 2600  (median 2800)"
expect "mean -767, 95% CI [-1284, -250] (t, n=3); fell in 3 of 3 rounds"
expect "after / before: 0.67 0.75 0.77  (median 0.75)"
rm "$dir/x-after-r2.json"
if err=$(python3 scripts/bench/compare_rounds.py "$dir" x 3 2>&1); then
  echo "FAIL: a missing round file was accepted" >&2
  exit 1
fi
grep -qF "x-after-r2.json" <<<"$err" || { echo "FAIL: the error does not name the file: $err" >&2; exit 1; }
echo "compare_rounds.py: ok"
