"""Nothing half-written ever appears under a final name: kills, full disks, Ctrl-C, bad rows."""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tfrecordkit as tfr

_KILL_CHILD = textwrap.dedent(
    """
    import sys, time
    import tfrecordkit as tfr

    def rows():
        for i in range(1_000_000):
            if i == 400:
                print("ready", flush=True)
            if i >= 400:
                time.sleep(0.001)
            yield tfr.encode_example({"i": i, "pad": b"p" * 100})

    tfr.write_dataset(rows(), sys.argv[1], max_shard_bytes=4096, progress=False)
    print("finished", flush=True)
    """
)


@pytest.mark.parametrize("mode", ["fill", "round-robin"])
def test_sigkill_mid_write_leaves_no_final_files(tmp_path, ds, mode):
    script = _KILL_CHILD
    if mode == "round-robin":
        script = script.replace("max_shard_bytes=4096", "num_shards=3")
    out = tmp_path / "out"
    out.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(out / "k")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = child.stdout.readline()
        assert line.strip() == "ready", child.stderr.read()
        time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    names = ds.listing(out)
    # Work was under way: temporaries exist, hidden.
    assert names, "the child wrote nothing before it was killed"
    if mode == "fill":
        # Several shards were complete (but not committed) when the child died.
        assert len(names) >= 6, names
    assert all(n.startswith(".") for n in names), names
    assert ds.finals(out) == []
    # The prefix is free: a new write there needs no overwrite, and is not confused by
    # the leftovers.
    m = ds.write(ds.gen(ds.example_bytes(10)), out / "k", num_shards=2)
    assert tfr.count(m.files) == 10
    assert sorted(n for n in ds.listing(out) if not n.startswith(".")) == sorted(
        ["k.manifest.json"]
        + [f"k-0000{i}-of-00002.tfrecord{e}" for i in range(2) for e in ("", ".idx")]
    )


_EFBIG_CHILD = textwrap.dedent(
    """
    import json, os, resource, signal, sys
    import numpy as np
    import tfrecordkit as tfr

    limit = 64 * 1024
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    kind = sys.argv[2]
    if kind == "table":
        data = {"i": np.arange(20_000), "pad": np.full(20_000, b"x" * 20, dtype="S20")}
        kw = {"num_shards": 3, "workers": 2}
    elif kind == "table-1":
        data = {"i": np.arange(20_000), "pad": np.full(20_000, b"x" * 20, dtype="S20")}
        kw = {"num_shards": 1, "workers": 1}
    else:
        data = (tfr.encode_example({"i": i, "pad": b"y" * 50}) for i in range(20_000))
        kw = {"num_shards": 2}
        if kind == "stream":
            # Many shards finish under the limit before one record crosses it.
            small = [tfr.encode_example({"i": i, "pad": b"y" * 50}) for i in range(2000)]
            data = iter([*small, b"B" * 200_000])
            kw = {"max_shard_bytes": "16KiB"}
        data = ({"i": i, "pad": "y" * 50} for i in range(20_000)) if kind == "rows" else data
    try:
        tfr.write_dataset(data, sys.argv[1], progress=False, **kw)
    except OSError as err:
        print(json.dumps({"errno": err.errno, "type": type(err).__name__}))
    else:
        print(json.dumps({"errno": None}))
    """
)


@pytest.mark.parametrize("kind", ["table", "table-1", "stream", "rows"])
def test_file_size_limit_raises_efbig_and_cleans_up(tmp_path, ds, kind):
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", _EFBIG_CHILD, str(out / "big"), kind],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["errno"] == errno.EFBIG, result
    assert ds.listing(out) == []


def _interrupting(n_before: int):
    for i in range(n_before):
        yield {"i": i, "pad": "z" * 200}
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    "kw", [{"max_shard_bytes": 2048}, {"num_shards": 3}, {}], ids=["fill", "round-robin", "one"]
)
def test_keyboard_interrupt_from_generator(tmp_path, ds, kw):
    with pytest.raises(KeyboardInterrupt):
        ds.write(_interrupting(100), tmp_path / "ki", **kw)
    assert ds.listing(tmp_path) == []


def test_keyboard_interrupt_from_sized_iterable(tmp_path, ds):
    class Rows:
        def __len__(self):
            return 100

        def __iter__(self):
            return _interrupting(60)

    with pytest.raises(KeyboardInterrupt):
        ds.write(Rows(), tmp_path / "kis", num_shards=4)
    assert ds.listing(tmp_path) == []


@pytest.mark.parametrize(
    "kw", [{"max_shard_bytes": 1024}, {"num_shards": 2}], ids=["fill", "round-robin"]
)
def test_bad_row_raises_and_leaves_nothing(tmp_path, ds, kw):
    def rows():
        for i in range(50):
            yield {"i": i, "t": "q" * 100}
        yield {"i": 50, "bad": object()}

    with pytest.raises(TypeError):
        ds.write(rows(), tmp_path / "br", **kw)
    assert ds.listing(tmp_path) == []


def test_bad_table_column_leaves_nothing(tmp_path, ds):
    with pytest.raises(TypeError):
        ds.write({"i": np.arange(3), "c": np.array([1 + 2j, 3j, 0j])}, tmp_path / "bc")
    with pytest.raises(ValueError):
        ds.write({"i": np.arange(3), "j": np.arange(4)}, tmp_path / "bc")
    assert ds.listing(tmp_path) == []


def test_failure_keeps_existing_dataset(tmp_path, ds):
    m = ds.write({"i": np.arange(10)}, tmp_path / "keep", num_shards=2)
    before = {n: (tmp_path / n).read_bytes() for n in ds.listing(tmp_path)}
    with pytest.raises(KeyboardInterrupt):
        ds.write(_interrupting(30), tmp_path / "keep", num_shards=3, overwrite=True)
    after = {n: (tmp_path / n).read_bytes() for n in ds.listing(tmp_path)}
    assert after == before
    assert tfr.count(m.files) == 10


def test_a_failed_write_removes_the_directories_it_made(tmp_path, ds):
    (tmp_path / "kept").mkdir()
    for prefix in ("new/deeper/train", "kept/sub/train"):
        with pytest.raises(KeyboardInterrupt):
            ds.write(_interrupting(30), tmp_path / prefix, num_shards=2)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["kept"]
    ds.write({"i": np.arange(3)}, tmp_path / "made" / "train")
    assert tfr.count(str(tmp_path / "made" / "train-*.tfrecord")) == 3
