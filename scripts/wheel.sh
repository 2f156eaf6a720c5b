#!/usr/bin/env bash
# Builds the Linux wheel that installs without a Rust toolchain: one abi3 wheel for every
# CPython >= 3.10, tagged manylinux2014 (glibc >= 2.17). zig links it against that old glibc,
# whatever glibc this machine has; auditwheel then checks the tag independently.
# Writes dist/tfrecordkit-VERSION-cp310-abi3-manylinux2014_ARCH.manylinux_2_17_ARCH.whl.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "maturin>=1.7,<2" "ziglang>=0.13" "auditwheel>=6"
rm -f dist/tfrecordkit-*.whl
# maturin finds zig through `python3 -m ziglang`, so the venv comes first on PATH (made
# absolute: VENV may be given relative or absolute).
PATH="$(cd "$VENV/bin" && pwd):$PATH" "$VENV/bin/maturin" build --release --zig \
    --compatibility manylinux2014 --out dist
wheel=$(ls dist/tfrecordkit-*.whl)
# auditwheel's report goes on to say how a more compatible tag could be had ("you would
# need to recompile..."), which reads like an error: only the tag it confirms is shown,
# and the whole report where it confirms none.
report=$("$VENV/bin/auditwheel" show "$wheel")
if printf '%s' "$report" | tr -s ' \n' ' ' |
    grep -q 'consistent with the following platform tag: "manylinux_2_17_'; then
    echo "auditwheel: $(basename "$wheel") is consistent with manylinux_2_17" >&2
else
    printf '%s\n' "$report" >&2
    echo "auditwheel does not confirm manylinux_2_17 for $wheel" >&2
    exit 1
fi
echo "$wheel"
