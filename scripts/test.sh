#!/usr/bin/env bash
# Installs everything the tests need (into .venv) and runs every test:
# Rust formatting, lints and unit tests for the core, then the Python suite, which uses
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

step "ruff / stubs"
"$VENV/bin/ruff" check python tests benchmarks
"$VENV/bin/python" -m mypy.stubtest tfrecordkit._core --ignore-disjoint-bases

step "pytest"
"$VENV/bin/python" -m pytest "$@"
