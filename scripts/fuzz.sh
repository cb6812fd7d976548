#!/usr/bin/env bash
# Runs each fuzz target under fuzz/ for SECONDS (default 60) with
# `cargo fuzz` (nightly toolchain; installs cargo-fuzz if missing), after
# seeding its corpus: the bundled games, GGP requests, a compiled library
# and its metadata. Stops at the first target that finds a crash (its
# input is in fuzz/artifacts/TARGET/). Not part of the test suite.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
seconds=${1:-60}
shift || true
here=$(cd "$(dirname "$0")/.." && pwd)
# The fuzz build (release, sanitizers) beside the project's debug build.
target=${CARGO_TARGET_DIR:-$here/target}
cd "$here/fuzz"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(kif protocol http meta library_file)
fi
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

seed() { mkdir -p "corpus/$1"; printf '%b' "$3" > "corpus/$1/$2"; }
mkdir -p corpus/kif
cp "$here"/games/*.kif corpus/kif/
seed protocol info '(info)'
seed protocol start '(start m1 white ((role white) (role black) (<= (legal ?r noop) (role ?r))) 30 10)'
seed protocol play '(play m1 ((mark 1 1) noop))'
seed protocol stop '(stop m1 nil)'
seed protocol abort '(ABORT m1)'
seed http post 'POST / HTTP/1.1\r\nContent-Type: text/acl\r\nContent-Length: 6\r\n\r\n(info)'
seed http chunked 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n(in\r\n3;x=1\r\nfo)\r\n0\r\n\r\n'
seed http expect 'POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab'
# A real library and its metadata (mode byte 0: the JSON as it is).
if command -v cc >/dev/null; then
  (cd "$here" && cargo build -q -p propel)
  propel=$target/debug/propel
  tmp=$(mktemp -d)
  "$propel" compile "$here/games/tictactoe.kif" -o "$tmp/ttt.so" >/dev/null
  mkdir -p corpus/library_file corpus/meta
  cp "$tmp/ttt.so" corpus/library_file/ttt.so
  python3 - "$tmp/ttt.so" corpus/meta/ttt.json <<'PY'
import json, sys
data = open(sys.argv[1], "rb").read()
at = data.index(b'{"format":')
meta, _ = json.JSONDecoder().raw_decode(data[at:].decode("latin-1"))
open(sys.argv[2], "wb").write(b"\0" + json.dumps(meta, separators=(",", ":")).encode())
PY
  rm -rf "$tmp"
fi

for t in "${targets[@]}"; do
  echo "== $t: ${seconds}s"
  cargo +nightly fuzz run --target-dir "$target/fuzz" "$t" "corpus/$t" -- -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096
done
