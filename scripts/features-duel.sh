#!/usr/bin/env bash
# Do the analysis's features hurt anywhere? On every game of a suite
# (scripts/suites/broad.tsv by default), `propel duel` plays the player's
# analysed search settings (the challenger, every feature the analysis's
# checks pass, as with `--no-validation`) against the same search with
# every feature off (`--search features=off`), GAMES games at MOVE_TIME
# seconds a move, the challenger in each seat in turn; then a table of
# each game's wins-draws-losses and mean score with its 95% interval.
# Below 50% on a game is a feature that hurts there unless the player's
# start-clock validation turns it off. Not a test: about an hour.
#
#   scripts/features-duel.sh [OUT] [BIN]
# env: GAMES=20 MOVE_TIME=0.1 ANALYSE=3 SUITE=scripts/suites/broad.tsv
#      ONLY="base/x base/y" (a subset) CORPUS=../shared/games
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-features-duel}
BIN=${2:-${CARGO_TARGET_DIR:-target}/release/propel}
GAMES=${GAMES:-20}
MOVE_TIME=${MOVE_TIME:-0.1}
ANALYSE=${ANALYSE:-3}
SUITE=${SUITE:-scripts/suites/broad.tsv}
CORPUS=${CORPUS:-../shared/games}
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release -p propel)" >&2; exit 2; }
[ -d "$CORPUS" ] || { echo "the corpus is not at $CORPUS (set CORPUS)" >&2; exit 2; }
mkdir -p "$OUT"
tail -n +2 "$SUITE" | while IFS=$'\t' read -r game category; do
  [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $game "* ]] || continue
  f="$OUT/$(basename "$game").json"
  [ -s "$f" ] && continue
  echo "== $game ($category) $(date -u +%T)" >&2
  "$BIN" duel "$CORPUS/$game.kif" --challenger "" --base features=off --games "$GAMES" \
    --move-time "$MOVE_TIME" --analyse "$ANALYSE" --json > "$f.tmp" 2> "$OUT/$(basename "$game").err" \
    && mv "$f.tmp" "$f" || { echo "duel failed on $game (see $OUT/$(basename "$game").err)" >&2; rm -f "$f.tmp"; }
done
python3 - "$OUT" "$SUITE" <<'PY'
import json, math, sys
from pathlib import Path
out, suite = Path(sys.argv[1]), sys.argv[2]
rows = [l.split("\t") for l in open(suite).read().splitlines()[1:] if l.strip()]
print(f"{'game':<34} {'category':<13} {'W-D-L':<9} {'mean (95%)':<15} features")
for game, cat in rows:
    f = out / (Path(game).name + ".json")
    if not f.exists():
        print(f"{game:<34} {cat:<13} (no result)")
        continue
    d = json.loads(f.read_text())
    n, mean = d["games"], d["mean"] or 0.0
    half = 1.96 * (d.get("std_error") or 0.0)
    print(f"{game:<34} {cat:<13} {d['wins']}-{d['draws']}-{d['losses']:<5} {100*mean:5.1f}% ± {100*half:<5.1f} {', '.join(d.get('features', [])) or 'none'}")
PY
