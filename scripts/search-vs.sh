#!/usr/bin/env bash
# Single-thread search speed of two propel binaries, game by game,
# alternating: OLD with its interpreted search (`--machine propnet`), NEW
# with its default machine. Prints iterations/s and their ratio.
#
#   OLD=/path/to/old/propel NEW=target/release/propel SECS=4 scripts/search-vs.sh [GAME.kif ...]
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OLD:?set OLD to the propel binary to compare against}"
NEW=${NEW:-target/release/propel}
SECS=${SECS:-4}
S=../shared/games
games=("$@")
if [ ${#games[@]} -eq 0 ]; then
  for g in base/breakthrough ggp-base-games/connectFour base/reversi base/hex base/checkers.v1 base/speedChess.v1 base/pentago.v1; do
    games+=("$S/$g.kif")
  done
fi
rate() { python3 -c "import json,sys; print(round(json.load(sys.stdin)['iterations_per_s']))"; }
for g in "${games[@]}"; do
  o=$("$OLD" search "$g" --machine propnet --threads 1 --seconds "$SECS" --json 2>/dev/null | rate)
  n=$("$NEW" search "$g" --threads 1 --seconds "$SECS" --json 2>/dev/null | rate)
  echo "$g old=$o new=$n ratio=$(python3 -c "print(round($n / $o, 2))")"
done
