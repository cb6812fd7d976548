#!/usr/bin/env bash
# Instructions, branches and branch mispredictions per random playout, for
# the interpreted propnet and the JIT (one playout at a time, and 128 at a
# time on lanes), counted by valgrind's callgrind inside the playout loop
# only (not the build). Its branch predictor is a simulated one, the same
# on every machine: use this where `perf stat` has no hardware counters,
# as on this project's VMs.
#
#   scripts/instructions.sh [GAME.kif[:COUNT] ...] > table.tsv
#
# COUNT playouts per machine (default 1000). Needs valgrind (apt-get
# install valgrind) and builds the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
cargo build --release -q -p propel
propel=target/release/propel
G=../shared/games
if [ $# -eq 0 ]; then
  set -- "$G/ggp-base-games/ticTacToe.kif:20000" "$G/ggp-base-games/connectFour.kif:5000" \
    "$G/base/breakthrough.kif:1000" "$G/base/reversi.kif:100" "$G/base/hex.kif:100" \
    "$G/base/speedChess.v1.kif:100"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run N ARGS...: callgrind over `propel playouts ARGS --count N`, counting
# inside the playout loop; prints "instructions branches mispredicts".
run() {
  local n=$1; shift
  valgrind --tool=callgrind --branch-sim=yes --collect-atstart=no \
    --toggle-collect='*count_playouts*' --toggle-collect='*fast_playouts*' \
    --smc-check=all-non-file --callgrind-out-file="$tmp/cg" "$propel" playouts "$@" --count "$n" >"$tmp/out" 2>&1 ||
    return 1
  # summary: Ir Bc Bcm Bi Bim (conditional and indirect branches, mispredicted)
  awk '/^summary:/ {print $2, $3 + $5, $4 + $6}' "$tmp/cg"
}

printf 'game\tmachine\tplayouts\tinstructions/playout\tbranches/playout\tmispredicts/playout\tmispredict rate\tavg length\n'
for spec in "$@"; do
  game=${spec%%:*}
  count=${spec##*:}
  [ "$count" = "$spec" ] && count=1000
  for machine in "propnet" "jit --fast --lanes off" "jit --fast --lanes on"; do
    # shellcheck disable=SC2086
    if ! counts=$(run "$count" "$game" --machine $machine); then
      printf '%s\t%s\tfailed: %s\n' "$(basename "$game" .kif)" "$machine" "$(grep -m1 -i error "$tmp/out")"
      continue
    fi
    read -r i b m <<<"$counts"
    len=$(awk '/average length/ {print $3}' "$tmp/out")
    awk -v g="$(basename "$game" .kif)" -v mach="$machine" -v n="$count" -v len="$len" \
      -v i="$i" -v b="$b" -v m="$m" 'BEGIN {
        sub(/jit --fast --lanes off/, "jit single", mach); sub(/jit --fast --lanes on/, "jit lanes", mach);
        printf "%s\t%s\t%d\t%.0f\t%.0f\t%.0f\t%.2f%%\t%s\n", g, mach, n, i / n, b / n, m / n, 100 * m / (b > 0 ? b : 1), len
      }'
  done
done
