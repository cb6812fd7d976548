#!/usr/bin/env bash
# Strength of Propel's MCTS: matches over HTTP (propel match) against a
# random player, against plain single-threaded UCT, and (opponent
# `noanalysis`) against the same MCTS player without the start-clock
# meta-game analysis (a second `propel serve --no-analysis` process), or
# (`noheuristics`) with the analysis but without its heuristic node
# initialisation (`--no-heuristics`), or (`nofactors`) searching the whole
# game where the analysis found factors (`--no-factors`), or (`nolanes`)
# never using the hybrid machine (`--no-lanes`: rollouts one at a time), or
# (`base`) another build of Propel served from the binary `$BASE` (e.g. a
# tagged release, to measure a change in matches), on
# the bundled games (or the games given), every seating, with win rates and
# 95% confidence intervals (score with Wilson intervals, Bradley-Terry Elo;
# each folder gets standings.json). Not a test: it takes a while (about
# PLAY x game length x MATCHES x seatings per game, divided by the matches
# run at once). Matches run in parallel (`propel match --jobs`, default: the
# cores) as far as the built-in players' search threads fit the cores;
# against a served opponent (a process of its own on this machine, which
# `match` cannot count) one at a time. RESUME=1 keeps the matches already
# in OUT and plays the rest (against built-in opponents: a served opponent
# listens on a new port, hence has a new name, in every run).
#
#   scripts/strength.sh [GAME.kif ...]
#   MATCHES=5 PLAY=0.5 START=2 THREADS=2 OUT=strength scripts/strength.sh
#   OPPONENTS=base BASE=/path/to/old/propel PROPEL=/path/to/new/propel scripts/strength.sh
set -euo pipefail
cd "$(dirname "$0")/.."
MATCHES=${MATCHES:-5}
PLAY=${PLAY:-0.5}
START=${START:-2}
THREADS=${THREADS:-2}
OUT=${OUT:-strength}
OPPONENTS=${OPPONENTS:-"random uct"}
JOBS=${JOBS:-$(nproc)}
RESUME=${RESUME:-0}
games=("$@")
[ ${#games[@]} -gt 0 ] || games=(games/*.kif)
# PROPEL: the binary to measure (default: build this checkout's).
if [ -z "${PROPEL:-}" ]; then
  cargo build --release -q -p propel
fi
propel=${PROPEL:-${CARGO_TARGET_DIR:-target}/release/propel}
mkdir -p "$OUT"
pids=()
trap '[ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null' EXIT
summary="$OUT/summary.txt"
: > "$summary"
for opp in $OPPONENTS; do
  for g in "${games[@]}"; do
    name=$(basename "$g" .kif)
    roles=$(grep -c '^(role [^?]' "$g" || true)
    players=(--player builtin:mcts)
    # Enough opponents to fill every other seat; the round robin seats
    # MCTS in every role.
    jobs=$JOBS
    for ((i = 1; i < (roles > 1 ? roles : 2); i++)); do
      if [ "$opp" = base ]; then
        [ -x "${BASE:-}" ] || { echo "opponent base: set BASE to a propel binary" >&2; exit 2; }
        "$BASE" serve --port 0 --host 127.0.0.1 --name base --threads "$THREADS" \
          --log-dir "$OUT/base-logs" > "$OUT/serve.out" 2>/dev/null &
        pids+=($!)
        jobs=1
        sleep 1
        players+=(--player "$(sed -n 's/^listening on //p' "$OUT/serve.out" | head -1)")
      elif [ "$opp" = noanalysis ] || [ "$opp" = noheuristics ] || [ "$opp" = nofactors ] || [ "$opp" = nolanes ]; then
        jobs=1
        "$propel" serve --port 0 --host 127.0.0.1 --name "$opp" "--no-${opp#no}" --threads "$THREADS" \
          --log-dir "$OUT/$opp-logs" > "$OUT/serve.out" 2>/dev/null &
        pids+=($!)
        sleep 1
        players+=(--player "$(sed -n 's/^listening on //p' "$OUT/serve.out" | head -1)")
      else
        players+=(--player "builtin:$opp")
      fi
    done
    echo "== $name: mcts vs $opp ($MATCHES matches per seating, play clock $PLAY s)" | tee -a "$summary"
    resume=()
    [ "$RESUME" = 1 ] && resume=(--resume)
    RUST_LOG=warn "$propel" match "$g" "${players[@]}" --round-robin --matches "$MATCHES" --jobs "$jobs" \
      "${resume[@]}" --start-clock "$START" --play-clock "$PLAY" --threads "$THREADS" -o "$OUT/$opp/$name" \
      | tee -a "$summary"
    if [ ${#pids[@]} -gt 0 ]; then kill "${pids[@]}" 2>/dev/null || true; pids=(); fi
  done
done
echo "summary in $summary"
