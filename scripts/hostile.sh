#!/usr/bin/env bash
# The player against a hostile manager: six hostile
# starts at once (scripts/hostile/*.kif: a million facts feeding `legal`,
# a product of four relations, a transitive closure; each played once and
# aborted) beside a normal connect-four match against the same server.
# Checks that
#   - the normal match has no late, illegal or missing move,
#   - the server's resident memory stays under its --max-memory,
#   - 10 s after the aborts no thread of an aborted match is left
#     (thread names m:ID, f:ID, b:ID in /proc/PID/task/*/comm).
# Exit status 0 when all hold. Not part of `cargo test` (about a minute;
# player/tests/integration/player_robust.rs runs a fast variant).
#
# usage: scripts/hostile.sh [BIN]     (default target/release/propel)
# env:   LIMIT (server memory, default 4G), START (hostile start clock, 5),
#        OUT (work folder, default a temporary one)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/propel}
LIMIT=${LIMIT:-4G}
START=${START:-5}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release -p propel)"; exit 2; }
command -v curl >/dev/null || { echo "curl is needed"; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed"; exit 2; }

"$BIN" serve --port 0 --host 127.0.0.1 --max-memory "$LIMIT" --log-dir "$OUT/logs" >"$OUT/serve.out" 2>"$OUT/serve.err" &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q listening "$OUT/serve.out" 2>/dev/null && break; sleep 0.1; done
URL=$(awk '/listening/ {print $3}' "$OUT/serve.out")
echo "server $PID at $URL, limit $LIMIT, work in $OUT"
LIMIT_BYTES=$(python3 -c "import sys;s=sys.argv[1];u={'k':1<<10,'m':1<<20,'g':1<<30,'t':1<<40};print(int(float(s[:-1])*u[s[-1].lower()]) if s[-1].isalpha() else int(s))" "$LIMIT")

# Resident memory every 0.1 s while the server runs.
( while kill -0 $PID 2>/dev/null; do awk '{print $2*4096}' /proc/$PID/statm 2>/dev/null || true; sleep 0.1; done ) >"$OUT/rss.txt" &
SAMPLER=$!

# The normal match: the server against a built-in MCTS player.
"$BIN" match games/connect4.kif --player "$URL" --player builtin:mcts --start-clock 10 --play-clock 1 \
    --threads 1 -o "$OUT/match" >"$OUT/match.log" 2>&1 &
MATCH=$!
sleep 3

post() { curl -s -m 60 -w ' [%{http_code} %{time_total}s]' -H 'Content-Type: text/acl' --data-binary "$1" "$URL"; }
hostile() { # id rules-file
    local id=$1 rules
    rules=$(cat "$2")
    echo "$id start: $(post "(start $id a ($rules) $START 2)")"
    echo "$id play:  $(post "(play $id nil)" | cut -c1-120)"
    echo "$id abort: $(post "(abort $id)")"
}
i=0
HOSTILE=()
for f in million product closure million product closure; do
    i=$((i + 1))
    hostile "h$i" "scripts/hostile/$f.kif" >"$OUT/h$i.log" 2>&1 &
    HOSTILE+=($!)
done
wait "${HOSTILE[@]}"
for j in 1 2 3 4 5 6; do cat "$OUT/h$j.log"; done
ours() { cat /proc/$PID/task/*/comm 2>/dev/null | grep -cE '^[mfb]:h[1-6]$' || true; }
T0=$(date +%s.%N)
since() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}'; }
while [ "$(ours)" -gt 0 ] && awk -v t="$(since)" 'BEGIN {exit !(t < 10)}'; do sleep 0.05; done
echo "threads of the aborted matches gone $(since) s after the aborts were answered (10: still there)"
sleep "$(awk -v t="$(since)" 'BEGIN {d = 10 - t; printf "%.2f", (d > 0 ? d : 0)}')"
LEFT=$(ours)
echo "threads of aborted matches left 10 s after the aborts: $LEFT"

wait $MATCH || true
kill $SAMPLER 2>/dev/null || true
cat "$OUT/match.log" | tail -4
python3 - "$OUT" "$LIMIT_BYTES" "$LEFT" <<'EOF'
import json, glob, sys
out, limit, left = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rss = [int(x) for x in open(f"{out}/rss.txt").read().split() if x.isdigit()]
peak = max(rss) if rss else 0
ok = True
# The match folder also holds standings.json (propel match writes it).
recs = [json.load(open(p)) for p in glob.glob(f"{out}/match/*.json") if not p.endswith("/standings.json")]
if len(recs) != 1:
    print(f"FAIL: {len(recs)} match records"); ok = False
for r in recs:
    errs = [e for turn in r["errors"] for e in turn if e] + [e for e in r["startErrors"] if e]
    over = [t for turn in r["moveTimes"] for t in turn if t > 1000 * r["playClock"]]
    print(f"normal match: {len(r['moves'])} turns, goals {r['goalValues']}, errors {len(errs)}, "
          f"answers over the clock {len(over)}, fallbacks {r.get('playerFallbacks')}, completed {r['isCompleted']}")
    for e in errs[:5]: print("   ", e)
    ok &= not errs and r["isCompleted"]
print(f"peak resident memory {peak >> 20} MiB of {limit >> 20} MiB; last {rss[-1] >> 20 if rss else 0} MiB")
ok &= peak <= limit
ok &= left == 0
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
EOF
