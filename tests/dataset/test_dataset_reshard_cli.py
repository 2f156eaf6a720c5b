"""``tfrecordkit reshard`` (and ``count`` on what it writes), through click's test runner."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import tfrecordkit as tfr
from click.testing import CliRunner
from tfrecordkit.cli import main


def _run(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def inputs(tmp_path, ds):
    """Three uneven input files (one gzip) of distinct records, and all records in order."""
    recs = [tfr.encode_example({"i": i, "pad": "p" * (i % 37)}) for i in range(257)]
    parts = [recs[:10], recs[10:200], recs[200:]]
    src = tmp_path / "src"
    src.mkdir()
    paths = []
    for k, part in enumerate(parts):
        ext = ".tfrecord.gz" if k == 1 else ".tfrecord"
        p = src / f"in{k}{ext}"
        with tfr.RecordWriter(p, "gzip" if k == 1 else None) as w:
            w.write_many(part)
        paths.append(str(p))
    return paths, recs


@pytest.mark.parametrize("n", [1, 4, 300])
def test_reshard_fixed_count_keeps_order(tmp_path, ds, inputs, n):
    paths, recs = inputs
    out = tmp_path / "out" / "rs"
    result = _run("reshard", *paths, "-o", out, "-n", n)
    assert result.exit_code == 0, result.output
    assert f"{len(recs):,} records into {n} shard{'' if n == 1 else 's'} " in result.output
    # More shards than records: the empty ones are counted, not left to be found.
    empty = max(0, n - len(recs))
    assert (f"), {empty} of them empty, as there are fewer records" in result.output) == (empty > 0)
    m = tfr.Manifest.load(out)
    assert [s.file for s in m.shards] == [f"rs-{i:05d}-of-{n:05d}.tfrecord" for i in range(n)]
    assert ds.records(m.files) == recs
    # Contiguous, even runs.
    counts = [s.records for s in m.shards]
    assert counts == [len(recs) * (k + 1) // n - len(recs) * k // n for k in range(n)]
    for s, f in zip(m.shards, m.files, strict=True):
        raw = Path(f).read_bytes()
        assert s.crc32c == f"{ds.crc32c(raw):08x}" and s.bytes == len(raw)
        assert os.path.exists(f + ".idx")
    result = _run("count", str(out) + "-*")
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1].split()[0].replace(",", "") == str(len(recs))


def test_reshard_glob_input_and_json(tmp_path, ds, inputs):
    paths, recs = inputs
    out = tmp_path / "j"
    result = _run("reshard", str(Path(paths[0]).parent / "in*"), "-o", out, "-n", 2, "--json")
    assert result.exit_code == 0, result.output
    d = json.loads(result.output)
    assert d["records"] == len(recs) and len(d["shards"]) == 2
    assert d == json.loads(Path(str(out) + ".manifest.json").read_text())
    # Globs expand sorted: in0, in1 (gz), in2 — the original order.
    assert ds.records(tfr.Manifest.load(out).files) == recs


def test_reshard_max_shard_bytes(tmp_path, ds, inputs):
    paths, recs = inputs
    out = tmp_path / "mb"
    result = _run("reshard", *paths, "-o", out, "--max-shard-bytes", "2KiB")
    assert result.exit_code == 0, result.output
    m = tfr.Manifest.load(out)
    biggest = max(len(r) for r in recs) + 16
    assert len(m.shards) > 5
    for s in m.shards:
        assert s.bytes < 2048 + biggest
    for s in m.shards[:-1]:
        assert s.bytes >= 2048
    assert ds.records(m.files) == recs
    assert tfr.count(m.files) == len(recs)


def test_reshard_output_gzip(tmp_path, ds, inputs):
    paths, recs = inputs
    out = tmp_path / "gz"
    result = _run("reshard", *paths, "-o", out, "-n", 3, "--output-compression", "gzip")
    assert result.exit_code == 0, result.output
    m = tfr.Manifest.load(out)
    assert m.compression == "gzip"
    assert all(f.endswith(".tfrecord.gz") for f in m.files)
    assert all(Path(f).read_bytes()[:2] == b"\x1f\x8b" for f in m.files)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".idx")]
    assert ds.records(m.files) == recs
    result = _run("count", "--json", *m.files)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["total"] == len(recs)
    # And back from gzip to plain, in place of a new prefix.
    result = _run("reshard", *m.files, "-o", tmp_path / "back", "-n", 2)
    assert result.exit_code == 0, result.output
    assert ds.records(tfr.Manifest.load(tmp_path / "back").files) == recs


def test_reshard_refuses_existing_without_overwrite(tmp_path, ds, inputs):
    paths, recs = inputs
    out = tmp_path / "ex"
    assert _run("reshard", *paths, "-o", out, "-n", 2).exit_code == 0
    before = {n: (tmp_path / n).read_bytes() for n in os.listdir(tmp_path) if n.startswith("ex")}
    result = _run("reshard", paths[0], "-o", out, "-n", 3)
    assert result.exit_code == 1
    assert "overwrite" in result.output
    after = {n: (tmp_path / n).read_bytes() for n in os.listdir(tmp_path) if n.startswith("ex")}
    assert after == before
    result = _run("reshard", paths[0], "-o", out, "-n", 3, "--overwrite")
    assert result.exit_code == 0, result.output
    m = tfr.Manifest.load(out)
    assert len(m.shards) == 3 and ds.records(m.files) == recs[:10]
    names = sorted(n for n in os.listdir(tmp_path) if n.startswith("ex"))
    assert names == sorted(
        ["ex.manifest.json"]
        + [f"ex-{i:05d}-of-00003.tfrecord{e}" for i in range(3) for e in ("", ".idx")]
    )


def test_reshard_in_place(tmp_path, ds, inputs):
    paths, recs = inputs
    out = tmp_path / "ip"
    assert _run("reshard", *paths, "-o", out, "-n", 5).exit_code == 0
    result = _run("reshard", str(out) + "-*", "-o", out, "-n", 2, "--overwrite")
    assert result.exit_code == 0, result.output
    m = tfr.Manifest.load(out)
    assert len(m.shards) == 2
    assert ds.records(m.files) == recs
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith("ip")) == sorted(
        ["ip.manifest.json"]
        + [f"ip-{i:05d}-of-00002.tfrecord{e}" for i in range(2) for e in ("", ".idx")]
    )


def test_reshard_missing_input_fails(tmp_path, ds):
    result = _run("reshard", tmp_path / "nope-*.tfrecord", "-o", tmp_path / "o", "-n", 2)
    assert result.exit_code == 1
    assert "error" in result.output
    assert os.listdir(tmp_path) == []


def test_reshard_damaged_input_fails_and_writes_nothing(tmp_path, ds, inputs):
    paths, _ = inputs
    raw = Path(paths[2]).read_bytes()
    Path(paths[2]).write_bytes(raw[:-7])
    out = tmp_path / "dmg"
    for extra in (["-n", "2"], ["--max-shard-bytes", "1KiB"]):
        result = _run("reshard", *paths, "-o", out, *extra)
        assert result.exit_code == 1, result.output
        assert [n for n in os.listdir(tmp_path) if n.startswith(("dmg", ".dmg"))] == []
