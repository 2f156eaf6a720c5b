"""IndexedDataset: random access across files, global shuffle, exact resume, sharding."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tfrecordkit as tfr


@pytest.fixture
def shards(tmp_path):
    n = 1000
    m = tfr.write_dataset(
        {"i": np.arange(n), "x": np.arange(n, dtype=np.float32) / 2},
        tmp_path / "d",
        num_shards=4,
        progress=False,
    )
    return m


SCHEMA = {"i": tfr.FixedLen([], "int64"), "x": tfr.FixedLen([], "float32")}


def test_random_access_across_files(shards):
    ds = tfr.IndexedDataset(shards.files, SCHEMA)
    assert len(ds) == 1000
    for i in (0, 249, 250, 251, 999, -1, 512):
        assert ds[i]["i"] == (i % 1000)
    items = ds.__getitems__([999, 0, 500])
    assert [int(it["i"]) for it in items] == [999, 0, 500]
    batch = ds.get_batch([3, 2, 1])
    assert batch["i"].tolist() == [3, 2, 1] and batch["x"].tolist() == [1.5, 1.0, 0.5]
    assert [int(e["i"]) for e in ds[10:13]] == [10, 11, 12]
    raw = tfr.IndexedDataset(shards.files)
    assert tfr.decode_example(raw[7])["i"][0] == 7
    with pytest.raises(IndexError):
        ds[1000]


def test_global_shuffle_is_a_seeded_permutation(shards):
    ds = tfr.IndexedDataset(shards.files, SCHEMA)
    a = np.concatenate([b["i"] for b in ds.batches(64, shuffle=True, seed=3)])
    b = np.concatenate([b["i"] for b in ds.batches(64, shuffle=True, seed=3)])
    c = np.concatenate([b["i"] for b in ds.batches(64, shuffle=True, seed=3, epoch=1)])
    assert a.tolist() == b.tolist() and sorted(a.tolist()) == list(range(1000))
    assert a.tolist() != c.tolist() and sorted(c.tolist()) == list(range(1000))
    assert a[:250].max() > 500  # a permutation over all records, not within one file


def test_resume_equals_uninterrupted(shards):
    ds = tfr.IndexedDataset(shards.files, SCHEMA)
    whole = [b["i"].tolist() for b in ds.batches(100, shuffle=True, seed=9)]
    it = ds.batches(100, shuffle=True, seed=9)
    first = [next(it)["i"].tolist() for _ in range(4)]
    state = json.loads(json.dumps(it.state()))
    rest = [b["i"].tolist() for b in ds.batches(100, shuffle=True, seed=9, state=state)]
    assert first + rest == whole
    with pytest.raises(ValueError, match="another order"):
        ds.batches(100, shuffle=True, seed=10, state=state)


def test_shards_of_consumers_read_every_record_once(shards):
    ds = tfr.IndexedDataset(shards.files, SCHEMA)
    seen = []
    for rank in range(3):
        for b in ds.batches(32, shuffle=True, seed=1, num_shards=3, index=rank):
            seen.extend(b["i"].tolist())
    assert sorted(seen) == list(range(1000))
    sizes = [sum(len(b["i"]) for b in ds.batches(10, drop_remainder=True)) for _ in range(1)]
    assert sizes == [1000]


def test_missing_indexes_can_be_built(tmp_path):
    path = tmp_path / "plain.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write_many([b"r%d" % i for i in range(50)])
    with pytest.raises(FileNotFoundError):
        tfr.IndexedDataset(path)
    ds = tfr.IndexedDataset(path, build_index=True)
    assert len(ds) == 50 and ds[49] == b"r49"


def test_consumers_are_num_shards_and_index_everywhere(shards):
    ds = tfr.IndexedDataset(shards.files, SCHEMA)
    by_index = [b["i"].tolist() for b in ds.batches(50, num_shards=2, index=1)]
    with pytest.warns(DeprecationWarning, match="index="):
        by_shard = [b["i"].tolist() for b in ds.batches(50, num_shards=2, shard=1)]
    assert by_index == by_shard
    pipeline = tfr.Dataset.from_files(shards.files)
    with pytest.warns(DeprecationWarning, match="num_shards="):
        old = list(pipeline.share(count=2, index=1))
    assert old == list(pipeline.share(2, 1)) == list(pipeline.share(num_shards=2, index=1))
    with pytest.raises(TypeError, match="unexpected keyword"):
        pipeline.share(counts=2)
