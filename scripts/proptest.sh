#!/usr/bin/env bash
# Runs the long property tests (ignored in the default suite): thousands
# of random small games through the whole pipeline, every pass, the JIT
# and its lanes against the prover (tests/random_games.rs). Minutes.
# Usage: scripts/proptest.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -p propel-tests --test integration random_games:: "$@" -- --ignored --nocapture
