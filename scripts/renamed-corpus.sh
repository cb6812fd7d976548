#!/usr/bin/env bash
# The corpus under meaningless names: every symbol that is not a GDL
# keyword or a number renamed (as tests/lib.rs `obfuscate` does), then
# `propel corpus --compare propnet` on the renamed copies and on the games
# as written, and the two TSVs compared: the same verdict and the same
# component count for every game, or the differences listed.
#
#   scripts/renamed-corpus.sh [CORPUS] [OUT]     # defaults ../shared/games, /tmp/propel-renamed
#
# PROPEL (default target/release/propel), JOBS (2), TIMEOUT (400).
set -euo pipefail
CORPUS=${1:-../shared/games}
OUT=${2:-/tmp/propel-renamed}
PROPEL=${PROPEL:-target/release/propel}
mkdir -p "$OUT"
rm -rf "$OUT/renamed"
python3 - "$CORPUS" "$OUT/renamed" <<'PY'
import os, sys
KEEP = {"role", "init", "true", "next", "legal", "does", "goal", "terminal", "distinct", "not", "or",
        "base", "input", "sees", "random", "<="}
def meaningless(s):
    h = 0xcbf29ce484222325
    for b in s.lower().encode():
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return "q%07x" % (h & 0xfffffff)
def number(t):
    try:
        int(t)
        return True
    except ValueError:
        return False
src, dst = sys.argv[1], sys.argv[2]
for root, _, files in os.walk(src):
    for f in files:
        if not f.endswith(".kif"):
            continue
        p = os.path.join(root, f)
        q = os.path.join(dst, os.path.relpath(p, src))
        os.makedirs(os.path.dirname(q), exist_ok=True)
        out = []
        for line in open(p, encoding="utf-8", errors="replace").read().splitlines():
            code = line.split(";")[0].replace("(", " ( ").replace(")", " ) ")
            for t in code.split():
                if t in "()":
                    out.append(t)
                elif t.startswith("?"):
                    out.append("?" + meaningless(t[1:]))
                elif t.lower() in KEEP or number(t):
                    out.append(t)
                else:
                    out.append(meaningless(t))
            out.append("\n")
        open(q, "w").write(" ".join(out))
PY
for which in renamed written; do
  dir=$OUT/renamed; [ "$which" = written ] && dir=$CORPUS
  "$PROPEL" corpus "$dir" --compare propnet --jobs "${JOBS:-2}" --timeout "${TIMEOUT:-400}" --tsv "$OUT/$which.tsv" > "$OUT/$which.out" 2>&1 || true
  tail -1 "$OUT/$which.out"
done
python3 - "$OUT/written.tsv" "$OUT/renamed.tsv" <<'PY'
import csv, re, sys
def rows(p):
    return {r[0]: r for r in csv.reader(open(p), delimiter="\t") if r and r[0] != "file"}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
def comps(r):
    m = re.search(r"(\d+) components", r[3] if len(r) > 3 else "")
    return m and m.group(1)
diff = [k for k in sorted(a) if k not in b or a[k][1] != b[k][1] or comps(a[k]) != comps(b[k])]
for k in diff:
    print(k, a[k][1:4], "|", b.get(k, ["", "missing"])[1:4])
print(f"{len(a)} games: {len(diff)} differ between the rules as written and renamed")
sys.exit(1 if diff else 0)
PY
