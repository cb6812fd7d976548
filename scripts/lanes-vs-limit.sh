#!/usr/bin/env bash
# Lane playouts (`propel playouts --machine jit --fast --lanes on`) against
# the hand-written bitboard engines of ../shared/limit on the three games
# they implement, alternated in one window (ROUNDS rounds of SECONDS each,
# engine then lanes), with the median of each and their ratio. The machine
# is shared and noisy: the load average is printed before and after.
#
#   scripts/lanes-vs-limit.sh [ROUNDS [SECONDS]]
#
# Needs ../shared/limit (built here into $LIMIT_TARGET, default
# /tmp/propel-limit-target) and builds the release binary (set PROPEL to
# use another binary instead).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-3}
G=../shared/games
[ -d ../shared/limit ] || { echo "../shared/limit not found: nothing to compare with" >&2; exit 1; }
[ -d "$G" ] || { echo "$G not found: the games are missing" >&2; exit 1; }
limit_target=${LIMIT_TARGET:-/tmp/propel-limit-target}
(cd ../shared/limit && CARGO_TARGET_DIR="$limit_target" cargo build --release -q)
limit="$limit_target/release/limit"
if [ -z "${PROPEL:-}" ]; then
  cargo build --release -q -p propel
  PROPEL=${CARGO_TARGET_DIR:-target}/release/propel
fi
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %14s %14s %7s\n' game limit/s lanes/s ratio
for spec in ticTacToe:ggp-base-games/ticTacToe.kif connectFour:ggp-base-games/connectFour.kif \
  breakthrough:base/breakthrough.kif; do
  name=${spec%%:*}
  file=$G/${spec#*:}
  l=() p=()
  for _ in $(seq "$rounds"); do
    l+=("$("$limit" "$name" "$secs" | sed 's/.*"playouts_per_s":\([0-9.]*\).*/\1/')")
    p+=("$("$PROPEL" playouts "$file" --machine jit --fast --lanes on --seconds "$secs" 2>/dev/null | awk '/^playouts\/s:/ {print $2}')")
  done
  lm=$(printf '%s\n' "${l[@]}" | median)
  pm=$(printf '%s\n' "${p[@]}" | median)
  printf '%-14s %14.0f %14.0f %7.2f\n' "$name" "$lm" "$pm" "$(echo "$lm / $pm" | bc -l)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
