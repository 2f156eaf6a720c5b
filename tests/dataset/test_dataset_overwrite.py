"""Refusing and replacing an existing dataset; identical output for any number of workers."""

from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import tfrecordkit as tfr


def _files(tmp_path, prefix, n, ext=".tfrecord", idx=True):
    names = [f"{prefix}-{i:05d}-of-{n:05d}{ext}" for i in range(n)]
    if idx:
        names += [x + ".idx" for x in names]
    return sorted([*names, f"{prefix}.manifest.json"])


def test_second_write_refused(tmp_path, ds):
    ds.write({"i": np.arange(10)}, tmp_path / "d", num_shards=2)
    before = {n: (tmp_path / n).read_bytes() for n in ds.listing(tmp_path)}
    with pytest.raises(FileExistsError) as info:
        ds.write({"i": np.arange(99)}, tmp_path / "d", num_shards=2)
    assert info.value.errno == errno.EEXIST
    with pytest.raises(FileExistsError):
        ds.write(ds.gen([{"i": 1}]), tmp_path / "d", num_shards=5, compression="gzip")
    assert {n: (tmp_path / n).read_bytes() for n in ds.listing(tmp_path)} == before


@pytest.mark.parametrize("leftover", ["manifest", "shard", "gz-shard"])
def test_any_part_of_a_dataset_blocks_a_write(tmp_path, ds, leftover):
    name = {
        "manifest": "d.manifest.json",
        "shard": "d-00003-of-00007.tfrecord",
        "gz-shard": "d-00000-of-00001.tfrecord.gz",
    }[leftover]
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(FileExistsError):
        ds.write({"i": np.arange(3)}, tmp_path / "d")
    assert ds.listing(tmp_path) == [name]


def test_other_prefixes_do_not_block(tmp_path, ds):
    ds.write({"i": np.arange(4)}, tmp_path / "train", num_shards=2)
    (tmp_path / "train-notes.txt").write_text("x")
    m = ds.write({"i": np.arange(4)}, tmp_path / "train-b", num_shards=2)
    assert m.records == 4
    m = ds.write({"i": np.arange(4)}, tmp_path / "trai", num_shards=2)
    assert m.records == 4


def test_overwrite_replaces_and_removes_stale_shards(tmp_path, ds):
    ds.write({"i": np.arange(50)}, tmp_path / "d", num_shards=5)
    (tmp_path / "README").write_text("keep me")
    (tmp_path / "d-extra.txt").write_text("keep me too")
    ds.write({"i": np.arange(8)}, tmp_path / "other", num_shards=4)
    other = {n: (tmp_path / n).read_bytes() for n in ds.listing(tmp_path) if n.startswith("other")}

    m = ds.write({"j": np.arange(100, 130)}, tmp_path / "d", num_shards=2, overwrite=True)
    names = ds.listing(tmp_path)
    mine = sorted(n for n in names if n.startswith("d-0") or n.startswith("d."))
    assert mine == _files(tmp_path, "d", 2)
    assert "README" in names and "d-extra.txt" in names
    assert (tmp_path / "README").read_text() == "keep me"
    assert {n: (tmp_path / n).read_bytes() for n in names if n.startswith("other")} == other
    assert [int(r["j"][0]) for r in ds.decoded(m.files)] == list(range(100, 130))
    assert tfr.count(str(tmp_path / "d-0*")) == 30
    assert tfr.Manifest.load(tmp_path / "d").records == 30


def test_overwrite_with_more_shards_and_compression(tmp_path, ds):
    ds.write({"i": np.arange(20)}, tmp_path / "d", num_shards=2)
    m = ds.write(
        {"i": np.arange(12)}, tmp_path / "d", num_shards=3, compression="gzip", overwrite=True
    )
    assert sorted(ds.listing(tmp_path)) == _files(tmp_path, "d", 3, ".tfrecord.gz", idx=False)
    assert tfr.count(m.files) == 12
    m = ds.write({"i": np.arange(7)}, tmp_path / "d", num_shards=1, overwrite=True)
    assert sorted(ds.listing(tmp_path)) == _files(tmp_path, "d", 1)
    assert tfr.count(str(tmp_path / "d-0*")) == 7


def test_overwrite_same_names(tmp_path, ds):
    ds.write({"i": np.arange(20)}, tmp_path / "d", num_shards=2)
    m = ds.write({"i": np.arange(6)}, tmp_path / "d", num_shards=2, overwrite=True)
    assert sorted(ds.listing(tmp_path)) == _files(tmp_path, "d", 2)
    assert [int(r["i"][0]) for r in ds.decoded(m.files)] == list(range(6))
    for f in m.files:
        raw = Path(f).read_bytes()
        lines = Path(f + ".idx").read_text().split()
        assert [(int(a), int(b)) for a, b in zip(lines[::2], lines[1::2], strict=True)] == [
            (o, n) for o, n, _ in ds.frames(raw)
        ]


def test_overwrite_without_index_removes_old_sidecars(tmp_path, ds):
    # Old .idx files would describe the old shards' bytes, not the new ones'.
    ds.write({"i": np.arange(20)}, tmp_path / "d", num_shards=2)
    m = ds.write({"s": ["x" * 50] * 9}, tmp_path / "d", num_shards=2, index=False, overwrite=True)
    assert sorted(ds.listing(tmp_path)) == _files(tmp_path, "d", 2, idx=False)
    assert tfr.count(m.files) == 9


# ---------------------------------------------------------------------------------------------
# workers
# ---------------------------------------------------------------------------------------------


def _table(n: int = 5000):
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "i": np.arange(n),
            "x": rng.standard_normal(n).astype(np.float32),
            "s": [("abc" * int(k)) for k in rng.integers(0, 20, n)],
            "v": [list(range(int(k))) for k in rng.integers(0, 5, n)],
            "opt": pd.array([None if k % 7 == 0 else k for k in range(n)], dtype="Int64"),
        }
    )


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_workers_give_identical_bytes(tmp_path, ds, compression):
    df = _table()
    out = {}
    for w in (1, 2, 4):
        m = ds.write(df, tmp_path / f"w{w}", num_shards=5, workers=w, compression=compression)
        out[w] = [Path(f).read_bytes() for f in m.files]
        assert [s.crc32c for s in m.shards] == [f"{ds.crc32c(b):08x}" for b in out[w]]
    assert out[1] == out[2] == out[4]
    if compression is None:
        idx = [Path(f + ".idx").read_bytes() for f in m.files]
        idx1 = [Path(f.replace("w4-", "w1-") + ".idx").read_bytes() for f in m.files]
        assert idx == idx1


def test_workers_with_byte_limit_and_arrow(tmp_path, ds):
    table = pa.Table.from_pandas(_table(), preserve_index=False)
    m1 = ds.write(table, tmp_path / "a1", max_shard_bytes="40KB", workers=1)
    m2 = ds.write(table, tmp_path / "a2", max_shard_bytes="40KB", workers=2)
    assert len(m1.shards) > 2
    assert [(s.records, s.bytes, s.crc32c) for s in m1.shards] == [
        (s.records, s.bytes, s.crc32c) for s in m2.shards
    ]
    assert [Path(f).read_bytes() for f in m1.files] == [Path(f).read_bytes() for f in m2.files]
    # Same bytes as writing the rows one by one with RecordWriter.write_examples.
    with tfr.RecordWriter(tmp_path / "single.tfrecord") as w:
        w.write_examples(table)
    assert (
        b"".join(Path(f).read_bytes() for f in m1.files)
        == (tmp_path / "single.tfrecord").read_bytes()
    )


@pytest.mark.parametrize("loser_shards", [2, 3])
def test_a_writer_that_loses_a_race_raises_and_leaves_the_winner_whole(tmp_path, loser_shards):
    prefix = str(tmp_path / "train")

    def rows():
        for i in range(100):
            if i == 50:
                # Another writer finishes a dataset at the same prefix meanwhile.
                tfr.write_dataset({"x": np.arange(7)}, prefix, num_shards=2, progress=False)
            yield {"x": 1000 + i}

    with pytest.raises(FileExistsError):
        tfr.write_dataset(rows(), prefix, num_shards=loser_shards, progress=False)
    manifest = tfr.Manifest.load(prefix)
    assert manifest.records == 7
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(
        [s.file for s in manifest.shards]
        + [s.file + ".idx" for s in manifest.shards]
        + ["train.manifest.json"]
    )
    got = [int(tfr.decode_example(r)["x"][0]) for r in tfr.read_records(manifest.files)]
    assert got == list(range(7))


def test_commit_never_replaces_an_existing_file(tmp_path):
    from tfrecordkit import _core

    target = tmp_path / "final.tfrecord"
    target.write_bytes(b"theirs")
    with tfr.RecordWriter(tmp_path / "mine.tfrecord") as w:
        w.write(b"mine")
    temp = tmp_path / ".mine"
    (tmp_path / "mine.tfrecord").rename(temp)
    with pytest.raises(FileExistsError):
        _core.commit_shard(str(temp), str(target))
    assert target.read_bytes() == b"theirs"
    assert not temp.exists()  # a failed commit removes its own file
    (tmp_path / "again").write_bytes(b"x")
    _core.commit_shard(str(tmp_path / "again"), str(target), replace=True)
    assert target.read_bytes() == b"x"
