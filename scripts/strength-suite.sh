#!/usr/bin/env bash
# The strength suite: Propel's player against other players over HTTP on a
# fixed set of ten two-player games from the shared corpus, every game in
# both seats, MATCHES matches per game and seat, each match with its own
# seed (the players derive theirs from the match id and the role). Prints a
# table per opponent (wins-draws-losses, score with its 95% interval,
# errors) from the match records; scripts/strength-table.py makes it. Not a
# test: it takes hours at competition clocks.
#
#   scripts/strength-suite.sh OPPONENT...
#
# An opponent is one of
#   uct                     plain UCT (`builtin:uct`, in the match process)
#   bin:NAME=/path/propel   another Propel binary, served as `NAME`
#                           (e.g. bin:base=/work/base-target/release/propel)
#   url:NAME=http://h:p     a player already listening there (one match at a
#                           time is safest: JOBS=1 then)
#   cmd:NAME=COMMAND        a player started as `COMMAND PORT` for each job
#                           and stopped after it (e.g. an external player's
#                           launch script), reached at http://127.0.0.1:PORT
#
# Settings (environment):
#   PROPEL=path     the binary measured (default: this checkout's release build)
#   ARGS="..."      extra `propel serve` flags of the measured player
#   OPP_ARGS="..."  extra `propel serve` flags of `bin:` opponents
#   MATCHES=2       matches per game and seat
#   PLAY=1 START=20 the clocks (seconds); START_<game>=S overrides per game;
#                   the games whose network takes over 10 s to build on a
#                   loaded 2-core machine (checkers, hex, reversi, skirmish,
#                   speedChess) get at least HEAVY=40 unless overridden, so
#                   that the player searches its network with the analysis
#                   rather than the prover (at 10 s they did not)
#   MARGIN=0.9      Propel's margin (seconds; at most 30% of a clock)
#   GAMES="..."     games (paths under $CORPUS), default the ten below
#   CORPUS=../shared/games
#   JOBS=1          games played at once (each job serves its own players)
#   COPIES=1        jobs per game: each plays MATCHES per seat with players
#                   seeded by its copy number (--seed), in OUT/<opp>/<game>.copyN
#                   (copies after the first); the table adds them up. With
#                   many cores, JOBS=8 COPIES=4 plays 4x the matches in the
#                   time of one job's
#   SEED_BASE=0     added to every copy number to seed the players, so that
#                   a second run plays other games
#   OUT=strength-suite  records and logs; the table is OUT/table.txt
#   PORT=9400       first port for `cmd:` players (PORT + job number)
set -euo pipefail
cd "$(dirname "$0")/.."
MATCHES=${MATCHES:-2}
PLAY=${PLAY:-1}
START=${START:-20}
HEAVY=${HEAVY:-40}
MARGIN=${MARGIN:-0.9}
JOBS=${JOBS:-1}
OUT=${OUT:-strength-suite}
PORT=${PORT:-9400}
COPIES=${COPIES:-1}
SEED_BASE=${SEED_BASE:-0}
CORPUS=${CORPUS:-../shared/games}
GAMES=${GAMES:-"base/breakthrough base/knightThrough ggp-base-games/connectFour base/pentago.v1
base/nineBoardTicTacToe base/reversi base/hex base/checkers base/skirmish base/speedChess"}
[ $# -gt 0 ] || { sed -n '2,38p' "$0"; exit 2; }
if [ ! -d "$CORPUS" ]; then
  echo "the game corpus is not at $CORPUS (set CORPUS): the suite needs it" >&2
  exit 2
fi
if [ -z "${PROPEL:-}" ]; then
  cargo build --release -q -p propel
  PROPEL=${CARGO_TARGET_DIR:-target}/release/propel
fi
[ -x "$PROPEL" ] || { echo "PROPEL=$PROPEL is not an executable" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# Serves `propel serve` from binary $1 as $2 with flags $3; prints its URL.
serve() {
  local bin=$1 name=$2 flags=$3 log=$4
  : > "$log"
  # shellcheck disable=SC2086
  "$bin" serve --port 0 --host 127.0.0.1 --name "$name" --threads 1 --margin "$MARGIN" \
    --seed "${SEED:-1}" --log-dir "$OUT/logs" $flags > "$log" 2>&1 &
  echo $! >> "$5"
  for _ in $(seq 100); do
    local url
    url=$(sed -n 's/^listening on //p' "$log" | head -1)
    [ -n "$url" ] && { echo "$url"; return; }
    sleep 0.1
  done
  echo "$name did not start (see $log)" >&2
  return 1
}

# One opponent on one game: the matches of job $3 (copy $4), both seats.
play() {
  local opp=$1 game=$2 job=$3 copy=$4
  local SEED=$((copy + SEED_BASE))
  local kind=${opp%%:*} rest=${opp#*:}
  local name=${rest%%=*} what=${rest#*=}
  [ "$kind" = uct ] && name=uct
  local stem
  stem=$(basename "$game")
  local dir="$OUT/$name/$stem" pids="$OUT/.pids.$job"
  [ "$copy" -gt 1 ] && dir="$dir.copy$copy"
  mkdir -p "$dir"
  : > "$pids"
  local me other
  me=$(serve "$PROPEL" propel "${ARGS:-}" "$dir/propel.serve.log" "$pids")
  case $kind in
    uct) other=builtin:uct ;;
    bin) other=$(serve "$what" "$name" "${OPP_ARGS:-}" "$dir/$name.serve.log" "$pids") ;;
    url) other=$what ;;
    cmd)
      local port=$((PORT + job))
      $what "$port" > "$dir/$name.serve.log" 2>&1 &
      echo $! >> "$pids"
      other=http://127.0.0.1:$port
      for _ in $(seq 300); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.2
      done
      ;;
    *) echo "unknown opponent $opp" >&2; return 2 ;;
  esac
  local var="START_${stem//[^A-Za-z0-9_]/_}"
  local start=${!var:-$START}
  case $stem in
    checkers* | hex* | reversi* | skirmish* | speedChess*) [ -n "${!var:-}" ] || [ "$start" -ge "$HEAVY" ] || start=$HEAVY ;;
  esac
  echo "== $stem: propel vs $name, $MATCHES per seat, clocks $start/$PLAY s, load $(cut -d' ' -f1-3 /proc/loadavg)"
  RUST_LOG=warn "$PROPEL" match "$CORPUS/$game.kif" --player "$me" --player "$other" --round-robin \
    --matches "$MATCHES" --start-clock "$start" --play-clock "$PLAY" --threads 1 --margin "$MARGIN" \
    -o "$dir" > "$dir/match.out" 2>&1 || echo "propel match failed on $stem (see $dir/match.out)" >&2
  tail -4 "$dir/match.out"
  while read -r pid; do kill "$pid" 2>/dev/null || true; done < "$pids"
  rm -f "$pids"
}

cleanup() {
  for f in "$OUT"/.pids.*; do
    [ -e "$f" ] || continue
    while read -r pid; do kill "$pid" 2>/dev/null || true; done < "$f"
    rm -f "$f"
  done
}
trap cleanup EXIT

echo "suite: $PROPEL ${ARGS:-} against $*; $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/runs.txt"
for opp in "$@"; do
  job=0
  for game in $GAMES; do
    for copy in $(seq "$COPIES"); do
      play "$opp" "$game" "$job" "$copy" &
      job=$((job + 1))
      # At most JOBS jobs at once.
      while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    done
  done
  wait
done
echo "finished $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/runs.txt"
python3 scripts/strength-table.py "$OUT" | tee "$OUT/table.txt"
