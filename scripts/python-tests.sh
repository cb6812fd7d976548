#!/usr/bin/env bash
# Builds the Python package (python/) into a fresh virtual environment and
# runs its tests: what a fresh machine needs, from the package registries.
#
#   scripts/python-tests.sh [PYTEST ARGS...]
#
# PROPEL_PY_VENV: where the environment goes (default target/python-venv,
# reused when it exists). PROPEL_PY_RELEASE=1 builds the extension
# optimised (for timings); by default it is a dev build in the workspace's
# target directory.
# PYTHON: the interpreter to make the environment with (default python3,
# 3.9 or newer).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
venv=${PROPEL_PY_VENV:-$root/target/python-venv}
python=${PYTHON:-python3}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}

if [ ! -x "$venv/bin/python" ]; then
    echo "python-tests: making a virtual environment in $venv"
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "maturin>=1.5,<2"

# A dev build. Not `--profile test`: cargo then builds the library as a test
# harness, which Python cannot load. It shares little with what `cargo test`
# compiled: pyo3's macros turn on features of syn that serde's derive also
# uses, so the whole tree under serde is built again.
profile=()
if [ "${PROPEL_PY_RELEASE:-0}" = 1 ]; then profile=(--release); fi
echo "python-tests: building the extension (maturin develop ${profile[*]:-}) and installing its test extras"
(cd python && VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop --quiet --extras all "${profile[@]}")

# The GGP-over-HTTP test plays against `propel serve`: the binary cargo
# built, when there is one.
for p in "$CARGO_TARGET_DIR/debug/propel" "$CARGO_TARGET_DIR/release/propel"; do
    if [ -z "${PROPEL_BIN:-}" ] && [ -x "$p" ]; then export PROPEL_BIN=$p; fi
done

cd python
exec "$venv/bin/python" -m pytest tests -q -rs "$@"
