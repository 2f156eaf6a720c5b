"""tfr.Dataset against tf.data itself: the same files give the same order and values."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr

SCHEMA = tfr.Schema(
    {
        "id": tfr.FixedLen([], "int64"),
        "v": tfr.FixedLen([2], "float32"),
        "tokens": tfr.VarLen("int64"),
        "name": tfr.FixedLen([], "bytes"),
    }
)
TF_SPEC = {
    "id": tf.io.FixedLenFeature([], tf.int64),
    "v": tf.io.FixedLenFeature([2], tf.float32),
    "tokens": tf.io.VarLenFeature(tf.int64),
    "name": tf.io.FixedLenFeature([], tf.string),
}


@pytest.fixture
def tf_shards(tmp_path):
    """Shards written by TensorFlow's own writer, of uneven lengths."""
    counts = [9, 1, 0, 14, 5, 7, 3, 11]
    paths, next_id = [], 0
    for f, n in enumerate(counts):
        path = str(tmp_path / f"train-{f:05d}-of-{len(counts):05d}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for i in range(next_id, next_id + n):
                ex = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                            "v": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 3, -i])),
                            "tokens": tf.train.Feature(
                                int64_list=tf.train.Int64List(value=list(range(i % 5)))
                            ),
                            "name": tf.train.Feature(
                                bytes_list=tf.train.BytesList(value=[f"n{i}".encode()])
                            ),
                        }
                    )
                )
                w.write(ex.SerializeToString())
        next_id += n
        paths.append(path)
    return paths


@pytest.mark.parametrize("cycle, block", [(1, 1), (2, 1), (3, 2), (4, 4), (16, 1)])
@pytest.mark.parametrize("parallel", [None, tf.data.AUTOTUNE])
def test_interleave_order_equals_tf_data(tf_shards, cycle, block, parallel):
    theirs = (
        tf.data.Dataset.from_tensor_slices(tf_shards)
        .interleave(
            tf.data.TFRecordDataset,
            cycle_length=cycle,
            block_length=block,
            num_parallel_calls=parallel,
            deterministic=None if parallel is None else True,
        )
        .as_numpy_iterator()
    )
    ours = tfr.Dataset.list_files(tf_shards).interleave(cycle_length=cycle, block_length=block)
    assert list(ours) == list(theirs)


def test_file_shard_and_record_shard_equal_tf_data(tf_shards):
    files = tf.data.Dataset.from_tensor_slices(tf_shards)
    theirs = files.shard(3, 1).interleave(tf.data.TFRecordDataset, cycle_length=2).shard(2, 0)
    ours = tfr.Dataset.list_files(tf_shards).shard(3, 1).interleave(cycle_length=2).shard(2, 0)
    assert list(ours) == list(theirs.as_numpy_iterator())
    theirs = tf.data.TFRecordDataset(tf_shards).skip(4).take(30).repeat(2).batch(7)
    ours = tfr.Dataset.from_files(tf_shards).skip(4).take(30).repeat(2).batch(7)
    assert [list(b) for b in ours] == [list(b) for b in theirs.as_numpy_iterator()]


def test_parsed_batches_equal_tf_parse_example(tf_shards):
    theirs = (
        tf.data.Dataset.from_tensor_slices(tf_shards)
        .interleave(tf.data.TFRecordDataset, cycle_length=3, block_length=2)
        .batch(8)
        .map(lambda x: tf.io.parse_example(x, TF_SPEC))
    )
    ours = (
        tfr.Dataset.list_files(tf_shards)
        .interleave(cycle_length=3, block_length=2)
        .parse(SCHEMA)
        .batch(8)
    )
    pairs = list(zip(ours, theirs, strict=True))
    assert len(pairs) == 7
    for mine, want in pairs:
        np.testing.assert_array_equal(mine["id"], want["id"].numpy())
        np.testing.assert_array_equal(mine["v"], want["v"].numpy())
        assert mine["name"].tolist() == want["name"].numpy().tolist()
        dense = tf.sparse.to_dense(want["tokens"]).numpy()
        lengths = tf.math.bincount(
            tf.cast(want["tokens"].indices[:, 0], tf.int32), minlength=len(mine["id"])
        ).numpy()
        assert mine["tokens"].row_lengths().tolist() == lengths.tolist()
        assert mine["tokens"].to_dense().tolist() == dense.tolist()


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_to_tf_feeds_tf_data_with_a_signature(tf_shards, drop_remainder):
    ds = tfr.Dataset.list_files(tf_shards).interleave(cycle_length=2).parse(SCHEMA)
    batched = ds.batch(6, drop_remainder=drop_remainder).to_tf()
    spec = batched.element_spec
    assert spec["id"].shape.as_list() == [6 if drop_remainder else None]
    assert spec["v"].shape.as_list() == [6 if drop_remainder else None, 2]
    assert isinstance(spec["tokens"], tf.RaggedTensorSpec)
    batches = list(batched)
    ids = np.concatenate([b["id"].numpy() for b in batches])
    want = np.concatenate([b["id"] for b in ds.batch(6, drop_remainder=drop_remainder)])
    np.testing.assert_array_equal(ids, want)
    first = next(iter(ds.batch(6)))
    assert batches[0]["tokens"].to_list() == first["tokens"].to_list()
    assert batches[0]["name"].numpy().tolist() == first["name"].tolist()
    # The tf.data side composes as usual.
    total = batched.map(lambda b: tf.reduce_sum(b["id"])).reduce(np.int64(0), lambda a, b: a + b)
    assert int(total) == int(ids.sum())


def test_to_tf_unbatched_and_raw(tf_shards):
    examples = tfr.Dataset.from_files(tf_shards).parse(SCHEMA).to_tf()
    first = next(iter(examples))
    assert first["tokens"].shape.as_list() == [0] and int(first["id"]) == 0
    raw = tfr.Dataset.from_files(tf_shards).batch(4).to_tf()
    assert raw.element_spec.dtype == tf.string
    got = [r for b in raw for r in b.numpy().tolist()]
    assert got == list(tf.data.TFRecordDataset(tf_shards).as_numpy_iterator())
    with pytest.raises(ValueError, match="output_signature"):
        tfr.Dataset.from_files(tf_shards).map(len).to_tf()
    sized = tfr.Dataset.from_files(tf_shards).map(len).to_tf(tf.TensorSpec([], tf.int64))
    assert sum(int(x) for x in sized) == sum(
        len(r) for r in tf.data.TFRecordDataset(tf_shards).as_numpy_iterator()
    )
