#!/usr/bin/env bash
# Thread scaling of the search as `propel search` runs it (the match path's
# search: root parallelisation with lanes, the pipeline without): one run of
# SECS seconds per game and thread count from the initial state, and each
# count's iterations/s against one thread's in the same window. Not a test;
# on a shared machine run it more than once and quote the spread.
#
#   scripts/thread-scaling.sh [GAME.kif...]
#
# Settings (environment):
#   PROPEL=path       the binary (default: this checkout's release build)
#   THREADS="1 2 ..." thread counts (default: 1, 2, then doubling up to the
#                     number of cores)
#   SECS=3            seconds per run
#   ARGS="..."        extra `propel search` flags (e.g. --win-first)
#   CORPUS=../shared/games  where the default games are
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-3}
CORPUS=${CORPUS:-../shared/games}
if [ $# -eq 0 ]; then
  [ -d "$CORPUS" ] || { echo "no games given and $CORPUS is missing" >&2; exit 2; }
  set -- "$CORPUS/base/breakthrough.kif" "$CORPUS/ggp-base-games/connectFour.kif"
fi
if [ -z "${THREADS:-}" ]; then
  cores=$(nproc)
  THREADS="1"
  t=2
  while [ "$t" -le "$cores" ]; do THREADS="$THREADS $t"; t=$((t * 2)); done
fi
if [ -z "${PROPEL:-}" ]; then
  cargo build --release -q -p propel
  PROPEL=${CARGO_TARGET_DIR:-target}/release/propel
fi
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }
echo "cores $(nproc); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %7s %-9s %14s %8s\n' game threads mode iterations/s speed-up
for game in "$@"; do
  one=""
  for t in $THREADS; do
    # shellcheck disable=SC2086 # ARGS is a list of flags
    json=$("$PROPEL" search "$game" --seconds "$SECS" --threads "$t" --json ${ARGS:-} 2>/dev/null)
    rate=$(printf '%s' "$json" | field iterations_per_s)
    mode=$(printf '%s' "$json" | field mode)
    [ -n "$one" ] || one=$rate
    printf '%-22s %7s %-9s %14.0f %8s\n' "$(basename "$game" .kif)" "$t" "$mode" "$rate" \
      "$(awk -v a="$rate" -v b="$one" 'BEGIN {printf "%.2fx", a / b}')"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
