"""Datasets written by ``write_dataset``, read back by TensorFlow.

TensorFlow is the oracle: ``tf.data.TFRecordDataset`` reads every shard the manifest lists
and ``tf.io.parse_example``, given the manifest's schema translated to ``tf.io`` features,
must give back the values of the input table.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import tensorflow as tf
import tfrecordkit as tfr

_TF_DTYPE = {"int64": tf.int64, "float32": tf.float32, "bytes": tf.string}
_TF_COMPRESSION = {None: "", "gzip": "GZIP", "zlib": "ZLIB"}


def _tf_features(schema: tfr.Schema) -> dict:
    out = {}
    for key, spec in schema.items():
        if isinstance(spec, tfr.FixedLen):
            out[key] = tf.io.FixedLenFeature(list(spec.shape), _TF_DTYPE[spec.dtype])
        elif isinstance(spec, tfr.VarLen):
            out[key] = tf.io.VarLenFeature(_TF_DTYPE[spec.dtype])
        else:  # pragma: no cover - write_dataset records no other kind
            raise AssertionError(f"unexpected spec {spec!r}")
    return out


def _tf_read_parse(manifest: tfr.Manifest) -> tuple[list[bytes], dict]:
    files = manifest.files
    assert all(os.path.exists(f) for f in files)
    dataset = tf.data.TFRecordDataset(files, compression_type=_TF_COMPRESSION[manifest.compression])
    records = [bytes(r) for r in dataset.as_numpy_iterator()]
    parsed = tf.io.parse_example(
        tf.constant(records, dtype=tf.string), _tf_features(manifest.schema)
    )
    return records, parsed


def _rows(tensor) -> list[list]:
    """A SparseTensor from VarLenFeature as a list of per-row value lists."""
    dense_rows = int(tensor.dense_shape[0])
    out: list[list] = [[] for _ in range(dense_rows)]
    for (r, _), v in zip(tensor.indices.numpy(), tensor.values.numpy(), strict=True):
        out[r].append(v)
    return out


def _frame(n: int = 257) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame(
        {
            "id": np.arange(n, dtype=np.int64) * 7 - 100,
            "small": rng.integers(-3, 3, n).astype(np.int16),
            "score": rng.standard_normal(n),
            "name": [f"row-{i}-é" * (i % 3) for i in range(n)],
            "emb": [rng.standard_normal(4).astype(np.float32) for _ in range(n)],
            "pair": [np.array([i, -i], dtype=np.int64) for i in range(n)],
        }
    )


@pytest.mark.parametrize("compression", [None, "gzip"])
@pytest.mark.parametrize("num_shards", [1, 4])
def test_tensorflow_reads_dataframe_dataset(tmp_path, compression, num_shards):
    df = _frame()
    m = tfr.write_dataset(
        df, tmp_path / "tf", num_shards=num_shards, compression=compression, progress=False
    )
    assert len(m.files) == num_shards
    records, parsed = _tf_read_parse(tfr.Manifest.load(tmp_path / "tf"))
    assert len(records) == len(df) == m.records
    # TensorFlow's records are ours, in shard order.
    assert records == list(tfr.read_records(m.files))

    np.testing.assert_array_equal(parsed["id"].numpy(), df["id"].to_numpy())
    np.testing.assert_array_equal(parsed["small"].numpy(), df["small"].to_numpy().astype(np.int64))
    np.testing.assert_array_equal(parsed["score"].numpy(), df["score"].to_numpy(np.float32))
    assert parsed["name"].numpy().tolist() == [s.encode() for s in df["name"]]
    emb = np.stack(df["emb"].to_list())
    pair = np.stack(df["pair"].to_list())
    for key, expected in (("emb", emb), ("pair", pair)):
        got = parsed[key]
        if isinstance(got, tf.SparseTensor):
            got = np.array(_rows(got))
        else:
            got = got.numpy()
        np.testing.assert_array_equal(got, expected, err_msg=key)


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_tensorflow_reads_fixed_shapes_and_nulls(tmp_path, compression):
    n = 60
    rng = np.random.default_rng(5)
    mat = rng.integers(-9, 9, (n, 2, 3))
    table = pa.table(
        {
            "vec": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.standard_normal(n * 3).astype(np.float32)), 3
            ),
            "maybe": pa.array([None if i % 4 == 0 else i for i in range(n)], pa.int64()),
            "tags": pa.array([["t"] * (i % 3) for i in range(n)], pa.list_(pa.string())),
        }
    )
    m = tfr.write_dataset(
        table, tmp_path / "fx", num_shards=3, compression=compression, progress=False
    )
    assert m.schema["vec"] == tfr.FixedLen([3], "float32")
    records, parsed = _tf_read_parse(m)
    assert len(records) == n
    np.testing.assert_array_equal(
        parsed["vec"].numpy(), np.asarray(table.column("vec").to_pylist(), np.float32)
    )
    assert _rows(parsed["maybe"]) == [[] if i % 4 == 0 else [i] for i in range(n)]
    assert _rows(parsed["tags"]) == [[b"t"] * (i % 3) for i in range(n)]

    m2 = tfr.write_dataset(
        {"mat": mat, "id": np.arange(n)},
        tmp_path / "mx",
        num_shards=2,
        compression=compression,
        progress=False,
    )
    assert m2.schema["mat"] == tfr.FixedLen([2, 3], "int64")
    _, parsed = _tf_read_parse(m2)
    np.testing.assert_array_equal(parsed["mat"].numpy(), mat)
    np.testing.assert_array_equal(parsed["id"].numpy(), np.arange(n))
