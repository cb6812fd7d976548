#!/usr/bin/env bash
# Compiles every valid game under DIR to a native library (`propel compile`)
# and records, per game, whether it compiled, the code generation time and
# size, or why not (over the grounding budget, a code generation error...).
# A quick check of "the full corpus compiles", without the prover: agreement
# is what `propel corpus --compare` and `propel compare` check.
# Usage: scripts/compile-corpus.sh DIR OUT.tsv [TIMEOUT]
set -u
dir=${1:?folder of .kif files}
out=${2:?output tsv}
limit=${3:-120}
here=$(cd "$(dirname "$0")/.." && pwd)
propel=${PROPEL:-$here/target/release/propel}
tmp=$(mktemp -d)
printf 'file\tresult\tseconds\tdetail\n' > "$out"
find "$dir" -name '*.kif' | sort | while read -r f; do
  "$propel" check "$f" >/dev/null 2>&1 || continue
  start=$(date +%s.%N)
  timeout "$limit" "$propel" compile "$f" -o "$tmp/game.so" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  case $rc in
    0) printf '%s\tcompiled\t%.1f\t%s\n' "$f" "$secs" "$(tail -n 1 "$tmp/out" | sed 's|^[^:]*: ||' | tr '\t\n' '  ')" >> "$out" ;;
    124) printf '%s\ttimeout\t%.1f\tno result within %s s\n' "$f" "$secs" "$limit" >> "$out" ;;
    *) printf '%s\tfailed\t%.1f\t%s\n' "$f" "$secs" "$(tail -n 2 "$tmp/err" | tr '\t\n' '  ' | head -c 300)" >> "$out" ;;
  esac
done
rm -rf "$tmp"
awk -F'\t' 'NR > 1 { n[$2]++ } END { for (k in n) printf "%s %d\n", k, n[k] }' "$out"
