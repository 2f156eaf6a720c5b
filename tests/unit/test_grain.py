"""``IndexedDataset`` as a grain ``RandomAccessDataSource``, read by the real grain:
``MapDataset`` chains and the ``DataLoader``, in this process and in a worker process."""

from __future__ import annotations

import pickle

import grain
import numpy as np
import pytest
import tfrecordkit as tfr

N = 90


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    table = {
        "id": np.arange(N),
        "x": np.arange(N * 2, dtype=np.float32).reshape(N, 2),
        "name": [f"r{i}" for i in range(N)],
        "tokens": [list(range(i % 4)) for i in range(N)],
    }
    prefix = str(tmp_path_factory.mktemp("grain") / "train")
    manifest = tfr.write_dataset(table, prefix, num_shards=3, progress=False)
    return manifest, table


def _check(element, i, table):
    assert int(element["id"]) == i
    assert element["x"].tolist() == table["x"][i].tolist()
    assert element["name"] == table["name"][i].encode()
    assert element["tokens"].tolist() == table["tokens"][i]


class Fixed(grain.transforms.Map):
    """Keeps the features of one shape, which grain's batching stacks."""

    def map(self, element):
        return {"id": element["id"], "x": element["x"], "name": element["name"]}


def test_it_is_a_random_access_data_source(written):
    manifest, table = written
    ds = tfr.IndexedDataset(manifest.files, manifest.schema)
    assert isinstance(ds, grain.sources.RandomAccessDataSource)
    source = grain.MapDataset.source(ds)
    assert len(source) == N
    for i, element in enumerate(source):
        _check(element, i, table)
    # grain reads by position, wrapping positions past the end around.
    assert int(source[N + 5]["id"]) == 5


def test_shuffle_map_batch_delivers_every_record_in_grain_s_order(written, monkeypatch):
    manifest, table = written
    ds = tfr.IndexedDataset(manifest.files, manifest.schema)
    reads: list[int] = []
    batched = tfr.IndexedDataset.__getitems__

    def counted(self, indices):
        reads.append(len(indices))
        return batched(self, indices)

    monkeypatch.setattr(tfr.IndexedDataset, "__getitems__", counted)
    chain = (
        grain.MapDataset.source(ds)
        .shuffle(seed=7)
        .map(lambda e: {**e, "double": e["x"] * 2})
        .map(Fixed())
        .batch(16)
    )
    order = list(grain.MapDataset.source(list(range(N))).shuffle(seed=7))
    assert len(chain) == 6
    got = [int(i) for batch in chain for i in batch["id"]]
    assert got == order and sorted(got) == list(range(N))
    batch = chain[1]
    assert batch["x"].shape == (16, 2)
    assert batch["x"].tolist() == table["x"][order[16:32]].tolist()
    assert batch["name"].tolist() == [table["name"][i].encode() for i in order[16:32]]
    # grain's batched read (its MapDataset._getitems, which batching uses when grain's
    # batch pushdown is on) goes through the source's batched read, one call per batch.
    assert reads == []
    items = grain.MapDataset.source(ds).shuffle(seed=7)._getitems(list(range(16, 32)))
    assert reads == [16]
    assert [int(e["id"]) for e in items] == order[16:32]
    for e in items:
        _check(e, int(e["id"]), table)


def test_it_pickles_for_worker_processes(written):
    manifest, table = written
    ds = tfr.IndexedDataset(manifest.files, manifest.schema)
    ds[0]  # the schema is compiled now, and still pickles
    copy = pickle.loads(pickle.dumps(ds))
    assert len(copy) == N and copy.schema == ds.schema
    _check(copy[44], 44, table)
    assert repr(copy) == repr(ds) and "0x" not in repr(ds)
    raw = pickle.loads(pickle.dumps(tfr.IndexedDataset(manifest.files)))
    assert tfr.parse_example(raw[3], manifest.schema)["id"] == 3


@pytest.fixture
def absl_flags():
    # grain's DataLoader reads its absl flags, which a program parses at start.
    from absl import flags

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()


@pytest.mark.parametrize("workers", [0, 1])
def test_the_data_loader_reads_every_record_once(written, absl_flags, workers):
    manifest, table = written
    ds = tfr.IndexedDataset(manifest.files, manifest.schema)
    sampler = grain.samplers.IndexSampler(
        num_records=len(ds),
        shuffle=True,
        seed=3,
        num_epochs=1,
        shard_options=grain.sharding.NoSharding(),
    )
    loader = grain.DataLoader(
        data_source=ds,
        sampler=sampler,
        operations=[Fixed(), grain.transforms.Batch(batch_size=10)],
        worker_count=workers,
    )
    batches = list(loader)
    ids = [int(i) for b in batches for i in b["id"]]
    assert sorted(ids) == list(range(N)) and ids != list(range(N))
    for b in batches:
        assert b["x"].tolist() == table["x"][b["id"]].tolist()
