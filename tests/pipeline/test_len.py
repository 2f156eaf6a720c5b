"""``len()`` and ``cardinality()`` from manifests and index sidecars, never from the data,
checked against what iterating delivers and against tf.data's own cardinality rules."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr
from torch.utils.data import DataLoader

SCHEMA = {"id": tfr.FixedLen([], "int64")}
COUNTS = [25, 26, 26, 26]  # write_dataset's split of 103 records into 4 shards


@pytest.fixture
def written(tmp_path):
    manifest = tfr.write_dataset(
        {"id": np.arange(103)}, str(tmp_path / "d" / "train"), num_shards=4, progress=False
    )
    assert [s.records for s in manifest.shards] == COUNTS
    return manifest


def _records(manifest):
    return tfr.Dataset.list_files(manifest.files).interleave(cycle_length=2).parse(SCHEMA)


# (our stages, the same stages in tf.data) over the 103 records.
CHAINS = {
    "plain": (lambda d: d, lambda d: d),
    "batch": (lambda d: d.batch(10), lambda d: d.batch(10)),
    "batch-drop": (lambda d: d.batch(10, True), lambda d: d.batch(10, True)),
    "take": (lambda d: d.take(7), lambda d: d.take(7)),
    "take-more": (lambda d: d.take(500), lambda d: d.take(500)),
    "skip": (lambda d: d.skip(100), lambda d: d.skip(100)),
    "skip-all": (lambda d: d.skip(200), lambda d: d.skip(200)),
    "shard": (lambda d: d.shard(4, 3), lambda d: d.shard(4, 3)),
    "repeat-batch": (lambda d: d.repeat(3).batch(7), lambda d: d.repeat(3).batch(7)),
    "repeat-take": (lambda d: d.repeat().take(250), lambda d: d.repeat().take(250)),
    "shuffle-batch-skip": (
        lambda d: d.shuffle(50, seed=1).batch(8).skip(2).prefetch(2),
        lambda d: d.shuffle(50, seed=1).batch(8).skip(2).prefetch(2),
    ),
    "map-batch": (
        lambda d: d.map(lambda e: e).batch(4).shard(3, 0),
        lambda d: d.map(lambda e: e).batch(4).shard(3, 0),
    ),
    "cache-repeat-0": (lambda d: d.cache().repeat(0), lambda d: d.cache().repeat(0)),
}


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_len_follows_the_stages_as_tf_data_counts_them(written, chain):
    ours, theirs = CHAINS[chain]
    ds = ours(_records(written))
    expected = int(theirs(tf.data.Dataset.range(103)).cardinality())
    assert ds.cardinality() == expected
    assert len(ds) == expected == sum(1 for _ in ds)


def test_the_file_names_are_counted_before_any_count_is_known(tmp_path):
    paths = []
    for i in range(5):
        paths.append(str(tmp_path / f"f{i}.tfrecord"))
        with tfr.RecordWriter(paths[-1]) as w:
            w.write(b"x")
    files = tfr.Dataset.list_files(paths, shuffle=True, seed=0)
    assert len(files) == 5 == int(tf.data.Dataset.list_files(paths).cardinality())
    assert len(files.shard(2, 1)) == 2 and len(files.repeat(3).skip(4)) == 11
    assert files.repeat().cardinality() == tfr.INFINITE_CARDINALITY
    # No manifest, no index: the records are not counted, and nothing is read to count them.
    records = files.interleave()
    assert records.cardinality() == tfr.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="not known without reading"):
        len(records)
    assert bool(records) and list(records) == [b"x"] * 5


def test_index_sidecars_give_the_counts_of_files_without_a_manifest(tmp_path):
    paths = []
    for n in (3, 0, 5):
        paths.append(str(tmp_path / f"part-{len(paths)}.tfrecord"))
        with tfr.RecordWriter(paths[-1], index=True) as w:
            w.write_many(tfr.encode_example({"id": i}) for i in range(n))
    ds = tfr.Dataset.from_files(paths).parse(SCHEMA)
    assert len(ds) == 8 and len(ds.batch(3)) == 3
    assert len(tfr.Dataset.list_files(paths).interleave().shard(3, 2)) == 2
    gz = str(tmp_path / "seekable.tfrecord.gz")
    with tfr.RecordWriter(gz, "gzip", seekable=True, index=True) as w:
        w.write_many(b"r%d" % i for i in range(9))
    assert len(tfr.Dataset.from_files([*paths, gz])) == 17


def test_counts_come_from_the_manifest_not_the_data(written):
    ds = _records(written).batch(10)
    path = Path(written.files[2])
    data = bytearray(path.read_bytes())
    data[40:60] = b"\xff" * 20  # damaged, the same size: only reading it would tell
    path.write_bytes(bytes(data))
    assert len(ds) == 11
    with pytest.raises(tfr.DataLossError):
        list(ds)
    # A shard whose size no longer matches its manifest is not trusted.
    with open(written.files[0], "ab") as f:
        f.write(b"\0")
    assert _records(written).cardinality() == tfr.UNKNOWN_CARDINALITY


def test_unknown_and_infinite(written):
    records = _records(written)
    assert records.filter(lambda e: True).cardinality() == tfr.UNKNOWN_CARDINALITY
    assert records.filter(lambda e: True).take(3).cardinality() == tfr.UNKNOWN_CARDINALITY
    assert records.repeat().cardinality() == tfr.INFINITE_CARDINALITY
    assert records.filter(lambda e: True).repeat().cardinality() == tfr.INFINITE_CARDINALITY
    with pytest.raises(TypeError, match="infinite"):
        len(records.repeat().batch(4))
    skipping = tfr.Dataset.list_files(written.files, on_error="skip").interleave()
    assert skipping.cardinality() == tfr.UNKNOWN_CARDINALITY
    assert len(tfr.Dataset.list_files(written.files, on_error="skip")) == 4


def test_shuffled_files_picked_by_shard_are_counted_only_when_they_hold_the_same(written, tmp_path):
    # Which files a shard of shuffled files holds changes every epoch.
    ds = tfr.Dataset.list_files(written.files, shuffle=True, seed=0).shard(2, 0).interleave()
    assert ds.cardinality() == tfr.UNKNOWN_CARDINALITY
    even = tfr.write_dataset(
        {"id": np.arange(100)}, str(tmp_path / "even"), num_shards=4, progress=False
    )
    ds = tfr.Dataset.list_files(even.files, shuffle=True, seed=0).shard(2, 0).interleave()
    assert len(ds) == 50 == sum(1 for _ in ds)
    # Sharding before the shuffle picks the same files every epoch.
    ds = tfr.Dataset.list_files(written.files).shard(2, 1).shuffle(4, seed=0).interleave()
    assert len(ds) == 52 == sum(1 for _ in ds)


@pytest.mark.parametrize("count", [2, 3, 5, 7])
def test_every_share_knows_its_length(written, count):
    ds = _records(written).batch(6)
    shares = [ds.share(count, i) for i in range(count)]
    assert [len(s) for s in shares] == [sum(1 for _ in s) for s in shares]
    unbatched = _records(written)
    assert sum(len(unbatched.share(count, i)) for i in range(count)) == 103


def _ids(ds):
    return sorted(np.concatenate([np.atleast_1d(e["id"]) for e in ds] or [[]]).tolist())


@pytest.mark.parametrize("chain", sorted(CHAINS))
@pytest.mark.parametrize("count", [3, 5])
def test_shares_together_are_the_whole_pipeline(written, chain, count):
    ds = CHAINS[chain][0](_records(written))
    shares = [ds.share(count, i) for i in range(count)]
    together = sorted(i for s in shares for i in _ids(s))
    if chain == "batch-drop":  # each consumer drops its own last short batch
        assert set(together) <= set(range(103)) and len(together) == len(set(together))
    else:
        assert together == _ids(ds)
    assert [len(s) for s in shares] == [sum(1 for _ in s) for s in shares]


@pytest.mark.parametrize(
    "pick, lengths",
    [
        (lambda f: f.skip(1).interleave(), {78}),
        (lambda f: f.take(2).interleave(), {51}),
        (lambda f: f.shard(2, 1).interleave(), {52}),
        (lambda f: f.interleave().take(9), {9}),
        (lambda f: f.interleave().shuffle(20).take(9), {9}),
        # Three of the four files, whichever the unseeded shuffle picks: 77 or 78 records.
        (lambda f: f.shuffle(4).take(3).interleave().skip(40), {37, 38}),
    ],
    ids=["skip-files", "take-files", "shard-files", "take", "shuffle-take", "files-and-records"],
)
def test_a_pick_before_the_split_is_made_once_for_all_the_consumers(written, pick, lengths):
    ds = pick(tfr.Dataset.list_files(written.files)).parse(SCHEMA)
    for count in (2, 3, 4, 6):
        ids = [x for i in range(count) for x in _ids(ds.share(count, i))]
        assert len(ids) in lengths and len(ids) == len(set(ids))
    workers = DataLoader(ds.to_torch(), batch_size=None, num_workers=2)
    ids = [int(e["id"]) for e in workers]
    assert len(ids) in lengths and len(ids) == len(set(ids))


def test_load_knows_a_converted_split_s_length(tmp_path):
    from PIL import Image

    rows = ["split,image_uri,label"]
    for i in range(7):
        path = tmp_path / f"img{i}.png"
        Image.new("RGB", (4, 3), (i, 0, 0)).save(path)
        rows.append(f"{'train' if i < 5 else 'test'},{path},{i % 2}")
    (tmp_path / "table.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    tfr.convert(tmp_path / "table.csv", out, num_shards=2, progress=False)
    train = tfr.load(out, "train")
    assert len(train) == 5 and len(train.batch(2)) == 3 == len(list(train.batch(2)))
    assert len(tfr.load(out, "test")) == 2


def test_to_tf_carries_the_length(written):
    ds = _records(written).shuffle(30, seed=2).batch(16)
    tf_ds = ds.to_tf()
    assert len(tf_ds) == len(ds) == 7
    assert int(tf_ds.cardinality()) == 7
    ours = [b["id"].tolist() for b in ds.iterate(epoch=0)]
    assert [b["id"].numpy().tolist() for b in tf_ds] == ours
    assert int(_records(written).repeat().to_tf().cardinality()) == tf.data.INFINITE_CARDINALITY
    unknown = (
        _records(written)
        .filter(lambda e: True)
        .to_tf(output_signature={"id": tf.TensorSpec([], tf.int64)})
    )
    assert int(unknown.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError):
        len(unknown)


def test_torch_dataset_length_is_the_rank_s_share(written):
    ds = _records(written).batch(10)
    assert len(ds.to_torch()) == 11
    ranks = [ds.to_torch(rank=r, world_size=3) for r in range(3)]
    delivered = [sum(1 for _ in DataLoader(r, batch_size=None)) for r in ranks]
    assert [len(r) for r in ranks] == delivered
    loader = DataLoader(ds.to_torch(), batch_size=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PyTorch warns when a length is exceeded
        assert len(loader) == 11 == len(list(loader))
    with pytest.raises(TypeError):
        len(_records(written).filter(lambda e: True).to_torch())
