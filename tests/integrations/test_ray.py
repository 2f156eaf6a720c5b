"""Ray Data on a real local Ray cluster: tfr.ray.read against ray.data.read_tfrecords, and
tfr.ray.Sink writing our sharded layout and manifest."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import ray
import tfrecordkit as tfr

N = 600


pytestmark = pytest.mark.usefixtures("ray_cluster")


def rows(n: int = N) -> list[dict]:
    return [
        {
            "id": i,
            "score": np.float32(i) / 8,
            "vec": np.arange(3, dtype=np.float32) + i,
            "name": f"name-{i}".encode(),
            "tags": list(range(i % 4 + 2)),
        }
        for i in range(n)
    ]


@pytest.fixture
def shards(tmp_path):
    manifest = tfr.write_dataset(rows(), str(tmp_path / "in" / "train"), num_shards=3)
    return manifest


def by_id(table_rows: list[dict]) -> list[dict]:
    return sorted(table_rows, key=lambda r: r["id"])


def plain(row: dict) -> dict:
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in row.items()}


def test_read_gives_the_rows_ray_read_tfrecords_gives(shards):
    ours = tfr.ray.read(shards.files)
    assert ours.count() == N
    theirs = ray.data.read_tfrecords(shards.files)
    got = [plain(r) for r in by_id(ours.take_all())]
    want = [plain(r) for r in by_id(theirs.take_all())]
    # ray.data.read_tfrecords types each row's features by their lengths (a list of one
    # as a scalar): here every feature has one length class, so it can type the columns.
    assert got == want
    assert got[5] == {
        "id": 5,
        "score": 0.625,
        "vec": [5.0, 6.0, 7.0],
        "name": b"name-5",
        "tags": [0, 1, 2],
    }


def test_read_types_columns_and_splits_files_among_tasks(shards):
    ds = tfr.ray.read(shards.files[0].rsplit("-", 3)[0] + "-*", columns=["id", "name", "tags"])
    assert ds.schema().base_schema == pa.schema(
        [("id", pa.int64()), ("name", pa.large_binary()), ("tags", pa.large_list(pa.int64()))]
    )
    assert sorted(r["id"] for r in ds.take_all()) == list(range(N))
    strings = tfr.ray.read(shards.files, columns=["name"], strings=True)
    assert strings.schema().base_schema.field("name").type == pa.large_string()
    assert sorted(r["name"] for r in strings.take_all())[:2] == ["name-0", "name-1"]
    # Each task reads a group of whole files.
    tasks = tfr.ray.read(shards.files, override_num_blocks=2).materialize()
    assert tasks.num_blocks() == 2
    assert sorted(r["id"] for r in tasks.take_all()) == list(range(N))


def test_read_ends_blocks_at_batch_bytes(tmp_path):
    from tfrecordkit.integrations.ray import _read_files

    path = str(tmp_path / "images.tfrecord")
    with tfr.RecordWriter(path) as w:
        for i in range(30):
            w.write(tfr.encode_example({"i": i, "img": bytes([i]) * 100_000}))
    ds = tfr.ray.read(path, batch_bytes=250_000)
    assert sorted(r["i"] for r in ds.take_all()) == list(range(30))
    # What each read task yields: blocks whose records hold about batch_bytes.
    schema = tfr.infer_schema(path)
    blocks = _read_files([path], schema, 65_536, 250_000, False, "auto", None, None, {})
    assert [b.num_rows for b in blocks] == [3] * 10


def test_read_refuses_unknown_columns_and_names_missing_files(tmp_path, shards):
    with pytest.raises(KeyError, match="nope"):
        tfr.ray.read(shards.files, columns=["nope"])
    with pytest.raises(FileNotFoundError):
        tfr.ray.read(str(tmp_path / "none-*.tfrecord"))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"columns": "name"}, TypeError, "columns is a list of names"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"batch_bytes": -1}, ValueError, "batch_bytes"),
        ({"on_error": "ignore"}, ValueError, "on_error must be"),
        ({"resnyc": True}, TypeError, "unexpected keyword argument 'resnyc'"),
        ({"nullable": ["nope"]}, KeyError, "nullable names 'nope'"),
    ],
)
def test_read_refuses_bad_arguments_before_any_task_runs(shards, kwargs, error, message):
    with pytest.raises(error, match=message):
        tfr.ray.read(shards.files, **kwargs)


def test_read_takes_a_directory_and_skips_damage_when_asked(tmp_path, shards):
    directory = os.path.dirname(shards.files[0])
    assert sorted(r["id"] for r in tfr.ray.read(directory).take_all()) == list(range(N))
    raw = bytearray(Path(shards.files[0]).read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "bad.tfrecord").write_bytes(bytes(raw))
    skipped = tfr.ray.read(str(tmp_path / "bad"), on_error="skip", resync=True)
    bad = str(tmp_path / "bad" / "bad.tfrecord")
    want = sum(1 for _ in tfr.read_records(bad, on_error="skip", resync=True))
    assert 0 < skipped.count() == want
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "_SUCCESS").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="no data files in the directory"):
        tfr.ray.read(str(tmp_path / "empty"))


def test_read_gives_nulls_for_missing_features_when_asked(tmp_path):
    path = str(tmp_path / "n.tfrecord")
    with tfr.RecordWriter(path) as w:
        rows = [{"id": k, **({"age": k} if k % 2 else {})} for k in range(6)]
        w.write_many(tfr.encode_example(r) for r in rows)
    rows = sorted(tfr.ray.read(path, nullable=True).take_all(), key=lambda r: r["id"])
    assert [r["age"] for r in rows] == [None, 1, None, 3, None, 5]
    assert tfr.ray.read(path).schema().types[1] == pa.large_list(pa.int64())


def test_sink_refuses_a_row_count_that_cannot_be():
    with pytest.raises(ValueError, match="rows_per_shard"):
        tfr.ray.Sink("out/train", rows_per_shard=-1)


def test_sink_writes_the_sharded_layout_and_manifest(tmp_path, shards):
    ds = tfr.ray.read(shards.files).repartition(4)
    sink = tfr.ray.Sink(tmp_path / "out" / "copy")
    ds.write_datasink(sink)
    manifest = tfr.Manifest.load(str(tmp_path / "out" / "copy"))
    assert manifest.records == N and len(manifest.shards) == 4
    assert [os.path.basename(f) for f in manifest.files] == [
        f"copy-{i:05d}-of-00004.tfrecord" for i in range(4)
    ]
    assert sink.manifest is not None and sink.manifest.records == N
    assert set(manifest.schema) == {"id", "score", "vec", "name", "tags"}
    assert all(r.ok for r in tfr.verify(manifest.files))
    # Every shard has its sidecar, and nothing else is left in the directory.
    assert sorted(os.listdir(tmp_path / "out")) == sorted(
        [os.path.basename(f) for f in manifest.files]
        + [os.path.basename(f) + ".idx" for f in manifest.files]
        + ["copy.manifest.json"]
    )
    back = by_id(tfr.read_table(manifest.files, manifest.schema).to_pylist())
    assert back == [plain(r) for r in rows()]


def test_sink_output_reads_in_tensorflow(tmp_path):
    import tensorflow as tf

    ds = ray.data.from_items([{"id": i, "x": [float(i), 0.5]} for i in range(50)])
    ds.write_datasink(tfr.ray.Sink(tmp_path / "tf" / "part"))
    files = tfr.Manifest.load(str(tmp_path / "tf" / "part")).files
    spec = {"id": tf.io.FixedLenFeature([], tf.int64), "x": tf.io.FixedLenFeature([2], tf.float32)}
    got = sorted(
        (int(e["id"]), e["x"].numpy().tolist())
        for e in tf.data.TFRecordDataset(files).map(lambda r: tf.io.parse_single_example(r, spec))
    )
    assert got == [(i, [float(i), 0.5]) for i in range(50)]


def test_sink_never_replaces_a_dataset_without_overwrite(tmp_path, shards):
    prefix = tmp_path / "out" / "train"
    first = tfr.write_dataset({"id": np.arange(10)}, str(prefix), num_shards=2)
    before = {f: Path(f).read_bytes() for f in first.files}
    ds = ray.data.from_items([{"id": i} for i in range(20)])
    with pytest.raises(FileExistsError, match="already exists"):
        ds.write_datasink(tfr.ray.Sink(prefix))
    assert {f: Path(f).read_bytes() for f in first.files} == before
    ds.repartition(1).write_datasink(tfr.ray.Sink(prefix, overwrite=True))
    manifest = tfr.Manifest.load(str(prefix))
    assert manifest.records == 20 and len(manifest.shards) == 1
    assert not any(os.path.exists(f) for f in first.files if f not in manifest.files)


def test_a_failed_write_leaves_nothing(tmp_path):
    def explode(batch):
        if (batch["id"] == 77).any():
            raise RuntimeError("bad batch")
        return batch

    ds = ray.data.range(200, override_num_blocks=4).map_batches(explode)
    with pytest.raises(Exception, match="bad batch"):
        ds.write_datasink(tfr.ray.Sink(tmp_path / "out" / "train"))
    assert os.listdir(tmp_path) == []  # nor the directory it made


def test_read_takes_sequence_examples(tmp_path):
    path = str(tmp_path / "clips.tfrecord")
    with tfr.RecordWriter(path) as w:
        for i in range(40):
            steps = [[i, s] for s in range(i % 3 + 1)]
            w.write(tfr.encode_sequence_example({"id": i}, {"tokens": steps}))
    ds = tfr.ray.read(path)
    got = by_id(ds.take_all())
    assert got == by_id(tfr.read_table(path).to_pylist())
    assert got[4] == {"id": 4, "tokens": [[4, 0], [4, 1]]}
    only = tfr.ray.read(
        path,
        {"id": tfr.FixedLen([], "int64")},
        sequence_schema={"tokens": tfr.VarLen("int64")},
        columns=["tokens"],
    )
    assert sorted(len(r["tokens"]) for r in only.take_all())[-1] == 3
