#!/usr/bin/env bash
# Describes every current game of the corpus's `base/` folder (Tiltyard's
# repository; older versions `*.vN.kif` left out) for scripts/suites/select.py:
# one JSON line per game from `propel analyse --seconds 2 --json` (roles,
# random-game length, branching per role, simultaneous moves, goals), or
# the reason it gave none (refused, over a minute, no random game).
#
#   scripts/suites/scan.sh OUT.jsonl [BIN]     # about 20 minutes on 2 cores
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?usage: scan.sh OUT.jsonl [BIN]}
BIN=${2:-${CARGO_TARGET_DIR:-target}/release/propel}
CORPUS=${CORPUS:-../shared/games}
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release -p propel)" >&2; exit 2; }
[ -d "$CORPUS/base" ] || { echo "the corpus is not at $CORPUS (set CORPUS)" >&2; exit 2; }
: > "$OUT"
scan() {
  local f=$1 game=${1#"$CORPUS"/}
  game=${game%.kif}
  local json
  if json=$(timeout 60 "$BIN" analyse "$f" --seconds 2 --json 2>/dev/null) && [ -n "$json" ]; then
    python3 -c 'import json,sys; d=json.loads(sys.argv[2]); d["game"]=sys.argv[1]; d.pop("heuristics",None); d.pop("length_histogram",None); print(json.dumps(d))' "$game" "$json"
  else
    echo "{\"game\": \"$game\", \"refused\": true}"
  fi
}
export -f scan
export BIN CORPUS
ls "$CORPUS"/base/*.kif | grep -v -E '\.v[0-9]+\.kif$' | xargs -P 2 -I{} bash -c 'scan "$@"' _ {} >> "$OUT"
echo "$(wc -l < "$OUT") games described in $OUT"
