#!/usr/bin/env bash
# Runs every fuzz target of the core for SECONDS each (default 30), starting from sample
# files written by TensorFlow and by tfrecordkit (crates/core/fuzz/samples). A crash fails
# the run and leaves its input under crates/core/fuzz/artifacts/; turn it into a test.
# Then fuzzes the Python loaders of sidecars (manifests, schema.json, TFDS metadata) with
# arbitrary JSON for as long, with the installed package ($VENV, .venv by default).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/crates/core"
seconds=${1:-${FUZZ_SECONDS:-30}}

command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked --quiet
# cargo-fuzz passes sanitizer flags that the stable compiler accepts only with this set.
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O

for target in $(cargo fuzz list); do
    mkdir -p "fuzz/corpus/$target"
    log=$(mktemp)
    if ! cargo fuzz run -O "$target" "fuzz/corpus/$target" "fuzz/samples/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "fuzz target $target FAILED" >&2
        exit 1
    fi
    runs=$(grep -oE 'Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' | tail -n 1)
    echo "fuzz target $target: ${runs:-?} runs in ${seconds}s, clean"
    rm -f "$log"
done

venv=${VENV:-.venv}
[[ $venv = /* ]] || venv=$root/$venv
"$venv/bin/python" -W error "$root/scripts/fuzz_sidecars.py" --seconds "$seconds"
