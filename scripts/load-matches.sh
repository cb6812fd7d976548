#!/usr/bin/env bash
# Matches under load: one served player (`propel serve`)
# plays N matches at play clock 1 s, three at a time: one lane each on
# base/chess_200.v1, base/breakthrough and base/reversi from
# ../shared/games, against a built-in MCTS player, both roles in turn.
# Counts, over every record: illegal moves, late answers (beyond the
# manager's grace), other errors, answers over the clock but within the
# grace, moves the players answered by their fallback, and incomplete
# matches. Exit status 0 when there are no illegal, late or incomplete.
# Not part of `cargo test` (chess_200 takes up to 200 s a match).
#
# usage: scripts/load-matches.sh [N] [BIN]   (N default 100, rounded up to
#        whole pairs per game; BIN target/release/propel)
# env:   START (start clock, default 10), OUT (work folder)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100}
BIN=${2:-${CARGO_TARGET_DIR:-target}/release/propel}
START=${START:-10}
OUT=${OUT:-$(mktemp -d)}
GAMES=(base/chess_200.v1 base/breakthrough base/reversi)
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release -p propel)"; exit 2; }
for g in "${GAMES[@]}"; do
    [ -f "../shared/games/$g.kif" ] || { echo "../shared/games/$g.kif is missing: this script needs the public games"; exit 2; }
done
command -v python3 >/dev/null || { echo "python3 is needed"; exit 2; }
mkdir -p "$OUT"

"$BIN" serve --port 0 --host 127.0.0.1 --log-dir "$OUT/logs" >"$OUT/serve.out" 2>"$OUT/serve.err" &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q listening "$OUT/serve.out" 2>/dev/null && break; sleep 0.1; done
URL=$(awk '/listening/ {print $3}' "$OUT/serve.out")
echo "server at $URL; $N matches, start clock $START s, play clock 1 s; work in $OUT"

LANES=()
TOTAL=0
for k in 0 1 2; do
    g=${GAMES[$k]}
    # This lane's share of N, as pairs of matches (the served player in each role).
    n=$(( (N - k + 2) / 3 ))
    pairs=$(( (n + 1) / 2 ))
    TOTAL=$(( TOTAL + 2 * pairs ))
    name=$(basename "$g")
    "$BIN" match "../shared/games/$g.kif" --player "$URL" --player builtin:mcts --round-robin --matches "$pairs" \
        --start-clock "$START" --play-clock 1 --threads 1 -o "$OUT/$name" >"$OUT/$name.log" 2>&1 &
    LANES+=($!)
done
STATUS=0
for p in "${LANES[@]}"; do wait "$p" || STATUS=1; done
for g in "${GAMES[@]}"; do tail -4 "$OUT/$(basename "$g").log"; done
python3 - "$OUT" "$TOTAL" "$STATUS" <<'EOF'
import json, glob, sys
out, want, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# Match records are the JSON files with a matchId (standings.json lies beside them).
recs = [r for r in (json.load(open(p)) for p in sorted(glob.glob(f"{out}/*/*.json"))) if "matchId" in r]
count = {"illegal": 0, "late": 0, "other errors": 0, "over the clock, within the grace": 0, "incomplete": 0}
by_player = {}
fallbacks = {}
for r in recs:
    clock = 1000 * r["playClock"]
    for turn, times in zip(r["errors"], r["moveTimes"]):
        for seat, (e, t) in enumerate(zip(turn, times)):
            kind = None
            if "illegal" in e or "malformed" in e:
                kind = "illegal"
            elif "late" in e or "timeout" in e:
                kind = "late"
            elif e:
                kind = "other errors"
            elif t > clock:
                kind = "over the clock, within the grace"
            if kind:
                count[kind] += 1
                who = r["playerNamesFromHost"][seat]
                by_player.setdefault(who, {}).setdefault(kind, 0)
                by_player[who][kind] += 1
    count["other errors"] += sum(1 for e in r["startErrors"] if e)
    if not r["isCompleted"]:
        count["incomplete"] += 1
    for name, f in zip(r["playerNamesFromHost"], r.get("playerFallbacks", [])):
        fallbacks[name] = fallbacks.get(name, 0) + f
count["incomplete"] += max(0, want - len(recs))
turns = sum(len(r["moves"]) for r in recs)
print(f"{len(recs)} matches of {want}, {turns} turns")
for k, v in count.items():
    print(f"  {k}: {v}")
print(f"  by player: {by_player}")
print(f"  fallback answers: {fallbacks}")
ok = status == 0 and count["illegal"] == 0 and count["late"] == 0 and count["incomplete"] == 0
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
EOF
