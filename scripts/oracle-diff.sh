#!/usr/bin/env bash
# Differential check of a Propel machine against the independent oracle
# (../shared/oracle, SWI-Prolog): for every valid game under DIR, write a
# `propel trace` and have `oracle replay` check it line by line.
# Usage: scripts/oracle-diff.sh DIR OUT.tsv [MACHINE] [SEEDS] [TIMEOUT]
# Needs swi-prolog-nox (apt-get install swi-prolog-nox). Not part of the
# test suite: the project's tests must not depend on the oracle.
set -u
dir=${1:?folder of .kif files}
out=${2:?output tsv}
machine=${3:-prover}
seeds=${4:-1}
limit=${5:-60}
here=$(cd "$(dirname "$0")/.." && pwd)
propel=${PROPEL:-$here/target/release/propel}
oracle=${ORACLE:-$here/../shared/oracle/oracle}
tmp=$(mktemp -d)
printf 'file\tseed\tresult\tdetail\n' > "$out"
find "$dir" -name '*.kif' | sort | while read -r f; do
  "$propel" check "$f" >/dev/null 2>&1 || continue
  for s in $(seq 1 "$seeds"); do
    t="$tmp/trace.jsonl"
    if ! timeout "$limit" "$propel" trace "$f" --seed "$s" --max-steps 300 --machine "$machine" >"$t" 2>"$tmp/err"; then
      printf '%s\t%s\tpropel-failed\t%s\n' "$f" "$s" "$(head -c 300 "$tmp/err" | tr '\t\n' '  ')" >> "$out"
      continue
    fi
    r=$(ORACLE_QUIET=1 timeout "$limit" "$oracle" replay "$f" "$t" 2>&1 | tail -n 1 | tr '\t\n' '  ')
    case "$r" in
      ok*) printf '%s\t%s\tok\t%s\n' "$f" "$s" "$r" >> "$out" ;;
      mismatch*) printf '%s\t%s\tMISMATCH\t%s\n' "$f" "$s" "$r" >> "$out" ;;
      *) printf '%s\t%s\toracle-failed\t%s\n' "$f" "$s" "$(echo "$r" | head -c 300)" >> "$out" ;;
    esac
  done
done
rm -rf "$tmp"
cut -f3 "$out" | tail -n +2 | sort | uniq -c
