#!/usr/bin/env bash
# Installs everything the tests need (into .venv) and runs every test:
# Rust formatting, lints and unit tests for the core, the fuzz targets for a bounded time
# (FUZZ_SECONDS each, 20 by default, 0 to skip), then the Python suite, which uses
# TensorFlow itself as the compatibility oracle.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

step() { printf '\n==> %s\n' "$*"; }

step "Python environment ($VENV)"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet ".[test]"

step "cargo fmt / clippy / test"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test -p tfrecordkit-core --quiet

if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
    step "fuzz targets (${FUZZ_SECONDS:-20}s each)"
    FUZZ_SECONDS=${FUZZ_SECONDS:-20} bash scripts/fuzz.sh
fi

step "ruff / stubs"
"$VENV/bin/ruff" check python tests benchmarks
"$VENV/bin/python" -m mypy.stubtest tfrecordkit._core --ignore-disjoint-bases

step "pytest"
"$VENV/bin/python" -m pytest "$@"
