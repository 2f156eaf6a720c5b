"""``tfr.SparseFeature`` and ``tfr.RaggedFeature`` against ``tf.io.SparseFeature`` and
``tf.io.RaggedFeature``, on the inputs of TensorFlow's own parsing tests (parsing_ops_test:
the SparseFeature, 3-D SparseFeature, reused-index, RaggedFeature, nested RaggedFeature and
all-feature-types cases), built with ``tf.train`` and compared with what ``tf.io`` returns."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr
from hypothesis import given, settings
from hypothesis import strategies as st

R = tf.io.RaggedFeature


def example(**features: tf.train.Feature) -> bytes:
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def floats(*v: float) -> tf.train.Feature:
    return tf.train.Feature(float_list=tf.train.FloatList(value=v))


def ints(*v: int) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=v))


def strings(*v: bytes) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=v))


EMPTY = tf.train.Feature()


def same(ours, theirs) -> None:
    """Our parsed feature equals TensorFlow's, part for part."""
    if isinstance(theirs, tf.SparseTensor):
        assert isinstance(ours, tfr.Sparse)
        np.testing.assert_array_equal(
            ours.indices.reshape(-1, theirs.indices.shape[1]), theirs.indices.numpy()
        )
        np.testing.assert_array_equal(ours.values, theirs.values.numpy())
        assert list(ours.dense_shape) == theirs.dense_shape.numpy().tolist()
    elif isinstance(theirs, tf.RaggedTensor):
        assert isinstance(ours, tfr.Ragged)
        assert ours.to_list() == theirs.to_list()
        assert ours.flat_values.dtype == theirs.flat_values.dtype.as_numpy_dtype
        ragged_dims = [s.numpy() for s in theirs.nested_row_splits]
        if len(ragged_dims) == ours.ragged_rank:
            for a, b in zip(ours.nested_row_splits, ragged_dims, strict=True):
                np.testing.assert_array_equal(a, b)
                assert a.dtype == b.dtype
    elif isinstance(ours, tfr.Ragged):
        # Dimensions of a UniformRowLength come back as ragged ones whose rows are all
        # one length; TensorFlow makes a dense tensor of them where it can.
        assert ours.to_list() == theirs.numpy().tolist()
    else:
        np.testing.assert_array_equal(ours, theirs.numpy())


def compare(records: list[bytes], tf_features: dict, single: bool = True) -> None:
    """Parses ``records`` with the tf.io specs, by TensorFlow and by us (given the very same
    spec objects), batched and one by one."""
    theirs = tf.io.parse_example(records, tf_features)
    ours = tfr.parse_examples(records, tf_features)
    assert set(ours) == set(theirs)
    for key in theirs:
        same(ours[key], theirs[key])
    if single:
        for record in records:
            theirs = tf.io.parse_single_example(record, tf_features)
            ours = tfr.parse_example(record, tf_features)
            for key in theirs:
                same(ours[key], theirs[key])


def test_sparse_feature():
    records = [
        example(val=floats(3, 4), idx=ints(5, 10)),
        example(val=floats(), idx=ints()),
        example(val=EMPTY),
        example(val=floats(1, 2, -1), idx=ints(0, 9, 3)),  # unsorted
    ]
    compare(records, {"sp": tf.io.SparseFeature(["idx"], "val", tf.float32, [13])})


def test_sparse_features_sharing_an_index_key():
    records = [
        example(val1=floats(3, 4), val2=floats(5, 6), idx=ints(5, 10)),
        example(val1=floats(), idx=ints()),
    ]
    compare(
        records,
        {
            "sp1": tf.io.SparseFeature("idx", "val1", tf.float32, 13),
            "sp2": tf.io.SparseFeature("idx", "val2", tf.float32, size=7, already_sorted=True),
        },
    )


def test_3d_sparse_feature():
    records = [
        example(val=floats(3, 4), idx0=ints(5, 10), idx1=ints(0, 2)),
        example(val=floats(), idx0=ints(), idx1=ints()),
        example(val=EMPTY),
        example(val=floats(1, 2, -1), idx0=ints(0, 9, 3), idx1=ints(1, 0, 2)),
    ]
    compare(
        records,
        {"sp": tf.io.SparseFeature(["idx0", "idx1"], "val", tf.float32, [13, 3])},
    )


def test_sparse_feature_of_strings_with_every_other_kind():
    record = example(
        c=floats(3, 4),
        d=floats(0.0, 1.0),
        val=strings(b"a", b"b"),
        idx=ints(0, 3),
        st_a=floats(3.0, 4.0),
    )
    features = {
        "st_a": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True),
        "sp": tf.io.SparseFeature(["idx"], "val", tf.string, [13]),
        "a": tf.io.FixedLenFeature((1, 3), tf.int64, default_value=[1, 2, 3]),
        "c": tf.io.FixedLenFeature(2, tf.float32),
    }
    compare([record], features)


def test_sparse_counts_that_do_not_match_are_refused_as_tensorflow_refuses_them():
    record = example(idx=ints(3, 1), val=floats(1.0))
    features = {"s": tf.io.SparseFeature("idx", "val", tf.float32, 10)}
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tf.io.parse_example([record], features)
    with pytest.raises(tfr.SchemaError, match='index key "idx" has 2 values') as info:
        tfr.parse_examples([example(idx=ints(), val=floats()), record], features)
    assert (info.value.key, info.value.record_index) == ("s", 1)


RAGGED_RECORDS = [
    example(  # [[3], [4, 5, 6]]
        rt_values=floats(3, 4, 5, 6),
        rt_splits=ints(0, 1, 4),
        rt_lengths=ints(1, 3),
        rt_starts=ints(0, 1),
        rt_limits=ints(1, 4),
        rt_rowids=ints(0, 1, 1, 1),
    ),
    example(  # []
        rt_values=floats(),
        rt_splits=ints(0),
        rt_lengths=ints(),
        rt_starts=ints(),
        rt_limits=ints(),
        rt_rowids=ints(),
    ),
    example(  # [], with features that hold nothing
        rt_values=EMPTY,
        rt_splits=ints(0),
        rt_lengths=EMPTY,
        rt_starts=EMPTY,
        rt_limits=EMPTY,
        rt_rowids=EMPTY,
    ),
    example(  # [[1, 2, -1], [], [8, 9], [5]]
        rt_values=floats(1, 2, -1, 8, 9, 5),
        rt_splits=ints(0, 3, 3, 5, 6),
        rt_lengths=ints(3, 0, 2, 1),
        rt_starts=ints(0, 3, 3, 5),
        rt_limits=ints(3, 3, 5, 6),
        rt_rowids=ints(0, 0, 0, 2, 2, 3),
    ),
]


@pytest.mark.parametrize("splits_dtype", [tf.int32, tf.int64])
def test_ragged_feature_with_every_partition_kind(splits_dtype):
    def rt(*partitions):
        return R(tf.float32, "rt_values", partitions, row_splits_dtype=splits_dtype)

    compare(
        RAGGED_RECORDS,
        {
            "rt1": rt(R.RowSplits("rt_splits")),
            "rt2": rt(R.RowLengths("rt_lengths")),
            "rt3": rt(R.RowStarts("rt_starts")),
            "rt4": rt(R.RowLimits("rt_limits")),
            "rt5": rt(R.ValueRowIds("rt_rowids")),
            "uniform1": rt(R.UniformRowLength(2)),
            "uniform2": rt(R.UniformRowLength(2), R.RowSplits("rt_splits")),
            "plain": rt(),
            "rt_values": R(tf.float32, row_splits_dtype=splits_dtype),
        },
    )


def test_nested_ragged_feature_with_three_partitions():
    records = [
        example(
            rt_values=floats(1, 2, 3, 4, 5, 6, 7),
            lengths_axis2=ints(1, 2, 0, 1),
            lengths_axis3=ints(1, 2, 1, 3),
            splits_axis3=ints(0, 1, 3, 4, 7),
        ),
        example(
            rt_values=floats(1, 2, 3, 4, 5, 6, 7, 8),
            lengths_axis2=ints(2, 3),
            lengths_axis3=ints(3, 1, 1, 1, 2),
            splits_axis3=ints(0, 3, 4, 5, 6, 8),
        ),
    ]
    partitions = [
        R.UniformRowLength(2),
        R.RowLengths("lengths_axis2"),
        R.RowSplits("splits_axis3"),
    ]
    compare(records, {"rt1": R(tf.float32, "rt_values", partitions)})
    compare(records, {"rt2": R(tf.float32, "rt_values", [R.RowLengths("lengths_axis3")])})


def test_misaligned_partitions_are_refused_as_tensorflow_refuses_them_when_validating():
    spec = R(tf.float32, "rt_values", [R.RowLengths("rt_lengths")], validate=True)
    short = [example(rt_values=floats(1, 2, 3), rt_lengths=ints(2, 2))]
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tf.io.parse_example(short, {"rt": spec})
    with pytest.raises(tfr.SchemaError, match="do not add up"):
        tfr.parse_examples(short, {"rt": spec})

    # Each record is checked on its own: here the batch's totals agree (5 lengths, 5
    # values), but neither record's partition fits its values. (TensorFlow's own test of
    # this case expects an error too; the TensorFlow installed here checks totals only.)
    misaligned = [
        example(rt_values=floats(), rt_lengths=ints(5)),
        example(rt_values=floats(1, 2, 3, 4, 5), rt_lengths=ints()),
    ]
    with pytest.raises(tfr.SchemaError, match="do not add up") as info:
        tfr.parse_examples(misaligned, {"rt": spec})
    assert (info.value.key, info.value.record_index) == ("rt", 0)


def test_ragged_and_sparse_through_a_pipeline_and_to_tf(tmp_path):
    path = str(tmp_path / "composite.tfrecord")
    records = [*RAGGED_RECORDS, example(val=floats(7), idx=ints(2))] * 3
    with tfr.RecordWriter(path) as w:
        w.write_many(records)
    schema = {
        "rt": tfr.RaggedFeature(
            "float32", "rt_values", [tfr.RaggedFeature.RowLengths("rt_lengths")]
        ),
        "sp": tfr.SparseFeature("idx", "val", "float32", 4),
    }
    tf_schema = {
        "rt": R(tf.float32, "rt_values", [R.RowLengths("rt_lengths")], row_splits_dtype=tf.int64),
        "sp": tf.io.SparseFeature("idx", "val", tf.float32, 4),
    }
    batches = list(tfr.Dataset.from_files(path).parse(schema).batch(5))
    expected = [tf.io.parse_example(records[i : i + 5], tf_schema) for i in range(0, 15, 5)]
    assert len(batches) == len(expected)
    for ours, theirs in zip(batches, expected, strict=True):
        same(ours["rt"], theirs["rt"])
        same(ours["sp"], theirs["sp"])
    for ours, theirs in zip(tfr.read_examples(path, schema, 5), expected, strict=True):
        same(ours["rt"], theirs["rt"])

    as_tf = tfr.Dataset.from_files(path).parse(schema).batch(5).to_tf()
    first = next(iter(as_tf))
    assert isinstance(first["sp"], tf.SparseTensor) and isinstance(first["rt"], tf.RaggedTensor)
    assert (
        tf.sparse.to_dense(first["sp"]).numpy().tolist()
        == tf.sparse.to_dense(expected[0]["sp"]).numpy().tolist()
    )
    assert first["rt"].to_list() == expected[0]["rt"].to_list()

    unbatched = list(tfr.Dataset.from_files(path).parse(schema))
    assert unbatched[3]["rt"].to_list() == [[1, 2, -1], [], [8, 9], [5]]
    assert unbatched[4]["sp"].to_dense().tolist() == [0, 0, 7, 0]


def test_schema_json_keeps_the_new_kinds():
    schema = tfr.Schema(
        {
            "sp": tfr.SparseFeature(["a", "b"], "v", "int64", [3, 4], already_sorted=True),
            "rt": tfr.RaggedFeature(
                "bytes",
                "w",
                [tfr.RaggedFeature.UniformRowLength(2), tfr.RaggedFeature.ValueRowIds("ids")],
                row_splits_dtype="int32",
            ),
        }
    )
    assert tfr.Schema.from_json(schema.to_json()) == schema


def test_a_key_read_two_ways_is_refused():
    with pytest.raises(ValueError, match="reads 'v' as"):
        tfr.Schema({"v": tfr.FixedLen([], "int64"), "s": tfr.SparseFeature("i", "v", "int64", 3)})


ragged_lists = st.lists(
    st.lists(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4), max_size=4), max_size=5
)


@settings(max_examples=40, deadline=None)
@given(st.lists(ragged_lists, min_size=1, max_size=4))
def test_ragged_round_trip_agrees_with_tensorflow(batch):
    records = []
    for rows in batch:
        flat = [v for row in rows for inner in row for v in inner]
        records.append(
            example(
                v=ints(*flat),
                outer=ints(*[len(row) for row in rows]),
                inner=ints(*[len(inner) for row in rows for inner in row]),
            )
        )
    spec = R(tf.int64, "v", [R.RowLengths("outer"), R.RowLengths("inner")])
    ours = tfr.parse_examples(records, {"r": spec})["r"]
    assert ours.to_list() == batch
    assert ours.to_list() == tf.io.parse_example(records, {"r": spec})["r"].to_list()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(0, 5), st.integers(0, 3), st.floats(-1e6, 1e6, width=32)),
            max_size=6,
            # TensorFlow leaves the order of entries at one index unspecified.
            unique_by=lambda e: (e[0], e[1]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_sparse_round_trip_agrees_with_tensorflow(batch):
    records = [
        example(
            i=ints(*[e[0] for e in entries]),
            j=ints(*[e[1] for e in entries]),
            v=floats(*[e[2] for e in entries]),
        )
        for entries in batch
    ]
    spec = tf.io.SparseFeature(["i", "j"], "v", tf.float32, [6, 4])
    theirs = tf.io.parse_example(records, {"s": spec})["s"]
    ours = tfr.parse_examples(records, {"s": spec})["s"]
    same(ours, theirs)
