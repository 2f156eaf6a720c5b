#!/usr/bin/env bash
# Installs everything the tests need (into .venv; Chromium and Java from apt when missing)
# and runs every test:
# the Linux wheel users install (built once, checked in a fresh environment with no Rust on
# PATH, then installed for the tests), Rust formatting, lints and unit tests for the core,
# the fuzz targets for a bounded time (FUZZ_SECONDS each, 20 by default, 0 to skip), then
# the Python suite, which uses TensorFlow itself as the compatibility oracle.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

step() { printf '\n==> %s\n' "$*"; }

step "Python environment ($VENV)"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip

step "Chromium (tests/docs opens the documentation site in it)"
if [ -x /usr/bin/chromium ]; then
    echo "found /usr/bin/chromium"
elif [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
        >/dev/null
else
    echo "Chromium is missing, and installing it needs root: run" >&2
    echo "  sudo apt-get install -y --no-install-recommends chromium" >&2
    if [ "${CI:-}" = true ]; then
        exit 1
    fi
    echo "(the browser test skips without it)" >&2
fi

step "Java (tests/integrations runs Spark)"
if command -v java >/dev/null 2>&1; then
    java -version 2>&1 | head -n 1
elif [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        openjdk-17-jre-headless >/dev/null
else
    echo "Java is missing, and installing it needs root: run" >&2
    echo "  sudo apt-get install -y --no-install-recommends openjdk-17-jre-headless" >&2
    exit 1
fi

step "The wheel (manylinux2014, abi3)"
bash scripts/wheel.sh
WHEEL=$(ls dist/tfrecordkit-*.whl)

step "The wheel in a fresh environment without Rust"
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
"$PYTHON" -m venv "$check/venv"
bare_path="$check/venv/bin:/usr/local/bin:/usr/bin:/bin"
for tool in cargo rustc; do
    if PATH=$bare_path command -v "$tool" >/dev/null; then
        echo "$tool is on the bare PATH ($bare_path); the check would prove nothing" >&2
        exit 1
    fi
done
# --only-binary: nothing may be compiled, neither tfrecordkit nor its dependencies.
PATH=$bare_path "$check/venv/bin/python" -m pip install --quiet --only-binary :all: \
    "$WHEEL[images]"
(cd "$check" && PATH=$bare_path venv/bin/tfrecordkit demo --dir demo)

step "Test dependencies"
# The [test] extra as a list of requirements: pip settles that in under a minute, where
# resolving "$WHEEL[test]" backtracks for many minutes over the pins of datasets and s3fs.
"$VENV/bin/python" - > "$check/test-requirements.txt" <<'EOF'
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    from pip._vendor import tomli as tomllib

with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["test"]))
EOF
"$VENV/bin/python" -m pip install --quiet "$WHEEL" -r "$check/test-requirements.txt"
"$VENV/bin/python" -m pip install --quiet --no-deps --force-reinstall "$WHEEL"

step "cargo fmt / clippy / test"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test -p tfrecordkit-core --quiet

if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
    step "fuzz targets (${FUZZ_SECONDS:-20}s each)"
    FUZZ_SECONDS=${FUZZ_SECONDS:-20} bash scripts/fuzz.sh
fi

step "ruff / stubs"
"$VENV/bin/ruff" check python tests scripts benchmarks
"$VENV/bin/python" -m mypy.stubtest tfrecordkit._core --ignore-disjoint-bases

step "pytest"
"$VENV/bin/python" -m pytest "$@"
