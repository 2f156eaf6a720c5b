"""Tables written from columns (RecordWriter.write_examples) read back through TensorFlow."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_tensorflow_parses_tables_written_from_columns(tmp_path, compression):
    rng = np.random.default_rng(7)
    n = 2_500
    strings = np.array([b"cat", b"dog", b"chicken", b"horse", b"goat"])
    label = rng.integers(0, 5, n)
    cols = {
        "flag": rng.choice([False, True], n),
        "label": label,
        "name": strings[label],
        "score": rng.standard_normal(n),
        "embedding": rng.standard_normal((n, 4)).astype(np.float32),
        "big": rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, (n, 2)),
        "text": [f"zeile {i} ✓" for i in range(n)],
    }
    path = str(tmp_path / "table.tfrecord")
    with tfr.RecordWriter(path, compression) as w:
        assert w.write_examples(cols, chunk_rows=1000) == n

    spec = {
        "flag": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "name": tf.io.FixedLenFeature([], tf.string),
        "score": tf.io.FixedLenFeature([], tf.float32),
        "embedding": tf.io.FixedLenFeature([4], tf.float32),
        "big": tf.io.FixedLenFeature([2], tf.int64),
        "text": tf.io.FixedLenFeature([], tf.string),
    }
    ds = tf.data.TFRecordDataset(path, compression_type="GZIP" if compression else "")
    parsed = next(iter(ds.batch(n).map(lambda x: tf.io.parse_example(x, spec))))
    np.testing.assert_array_equal(parsed["flag"].numpy(), cols["flag"].astype(np.int64))
    np.testing.assert_array_equal(parsed["label"].numpy(), label)
    assert parsed["name"].numpy().tolist() == cols["name"].tolist()
    np.testing.assert_array_equal(parsed["score"].numpy(), cols["score"].astype(np.float32))
    np.testing.assert_array_equal(parsed["embedding"].numpy(), cols["embedding"])
    np.testing.assert_array_equal(parsed["big"].numpy(), cols["big"])
    assert [t.decode() for t in parsed["text"].numpy()] == cols["text"]

    # Each record is a tf.train.Example holding exactly the table's columns.
    first = next(tfr.read_records(path))
    example = tf.train.Example.FromString(first)
    assert set(example.features.feature) == set(cols)
    assert example.features.feature["text"].bytes_list.value == [cols["text"][0].encode()]


def test_tensorflow_reads_seekable_gzip_as_ordinary_gzip(tmp_path):
    records = [b"%06d" % i * (i % 40 + 1) for i in range(30_000)]
    path = str(tmp_path / "seekable.tfrecord.gz")
    with tfr.RecordWriter(path, "gzip", seekable=True, index=True) as w:
        w.write_many(records)
    members = (tmp_path / "seekable.tfrecord.gz.gzi").read_text().splitlines()
    assert len(members) > 2
    got = [r.numpy() for r in tf.data.TFRecordDataset(path, compression_type="GZIP")]
    assert got == records


def test_doubles_beyond_float32_are_stored_as_tensorflow_stores_them(tmp_path):
    import warnings

    values = np.array([1e300, -1e300, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = tfr.write_dataset({"x": values}, str(tmp_path / "t"), progress=False)
    ours = [tfr.decode_example(r)["x"].tolist() for r in tfr.read_records(m.files)]
    theirs = [list(tf.train.FloatList(value=[v]).value) for v in values]
    assert ours == theirs == [[np.inf], [-np.inf], [0.5]]
