"""Spec validation as ``tf.io`` does it: the same specs refused, each with a ValueError that
names the feature; keys the schema does not ask for skipped unread."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr

RECORD = tf.train.Example(
    features=tf.train.Features(
        feature={"x": tf.train.Feature(float_list=tf.train.FloatList(value=[1, 2, 3, 4]))}
    )
).SerializeToString()

REFUSED_BY_BOTH = [
    # (tf.io spec, tfrecordkit spec, what our message says)
    (
        tf.io.FixedLenFeature((None, 2), tf.float32),
        tfr.FixedLen((None, 2), "float32"),
        "the first dimension of shape (None, 2) is unknown",
    ),
    (
        tf.io.FixedLenFeature((2, None), tf.float32),
        tfr.FixedLen((2, None), "float32"),
        "every dimension of a FixedLen shape must be known, not (2, None)",
    ),
    (
        tf.io.FixedLenSequenceFeature((None,), tf.float32, allow_missing=True),
        tfr.FixedLenSequence((None,), "float32", allow_missing=True),
        "every dimension of a FixedLenSequence shape must be known",
    ),
    (
        tf.io.FixedLenFeature((4,), tf.float32, default_value=[1.0, 2.0]),
        tfr.FixedLen((4,), "float32", default=[1.0, 2.0]),
        "default has 2 values; shape (4,) needs 1 or 4",
    ),
    (
        tf.io.FixedLenSequenceFeature((), tf.float32, allow_missing=True, default_value=[1, 2]),
        tfr.FixedLenSequence((), "float32", allow_missing=True, default=[1.0, 2.0]),
        "a FixedLenSequence default is one padding value, not 2",
    ),
]


@pytest.mark.parametrize(("theirs", "ours", "says"), REFUSED_BY_BOTH)
def test_specs_tensorflow_refuses_are_refused_naming_the_feature(theirs, ours, says):
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tf.io.parse_example([RECORD], {"x": theirs})
    with pytest.raises(ValueError, match="feature 'x': ") as info:
        tfr.parse_examples([RECORD], {"x": ours})
    assert says in str(info.value)
    # The tf.io spec itself, handed to tfrecordkit, is refused the same way.
    with pytest.raises(ValueError, match="feature 'x': "):
        tfr.parse_examples([RECORD], {"x": theirs})


@pytest.mark.parametrize("shape", [(0,), (2, 0)])
def test_a_zero_dimension_in_a_sequence_element_is_refused(shape):
    # TensorFlow's parser stops the process on this spec (a floating-point exception), so it
    # is not run here; tfrecordkit refuses the spec.
    with pytest.raises(ValueError, match=r"feature 'x': element shape .* has a zero dimension"):
        tfr.parse_examples([RECORD], {"x": tfr.FixedLenSequence(shape, "float32")})


def test_a_zero_dimension_in_a_fixed_len_is_allowed_as_tensorflow_allows_it():
    empty = tf.train.Example(
        features=tf.train.Features(feature={"x": tf.train.Feature(float_list=tf.train.FloatList())})
    ).SerializeToString()
    theirs = tf.io.parse_example([empty], {"x": tf.io.FixedLenFeature((0,), tf.float32)})["x"]
    ours = tfr.parse_examples([empty], {"x": tfr.FixedLen((0,), "float32")})["x"]
    assert ours.shape == tuple(theirs.shape) == (1, 0)


@pytest.mark.parametrize("key", [b"\xff\xfe", b"o\xc3", b"\xc0\xaf"])
def test_unrequested_keys_are_skipped_even_when_not_utf8(key):
    wanted = tf.train.Feature(float_list=tf.train.FloatList(value=[5.0]))
    other = tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))
    good = tf.train.Example(
        features=tf.train.Features(feature={"x": wanted, "zz": other})
    ).SerializeToString()
    # Give the unrequested key invalid UTF-8 of the same length, as a file from elsewhere may.
    record = good.replace(b"\x0a\x02zz", b"\x0a\x02" + key)
    assert record != good
    spec = {"x": tf.io.FixedLenFeature([], tf.float32)}
    theirs = tf.io.parse_example([record], spec)["x"].numpy()
    ours = tfr.parse_examples([record], {"x": tfr.FixedLen([], "float32")})["x"]
    np.testing.assert_array_equal(ours, theirs)


def test_record_writer_refuses_a_compression_that_is_not_a_name(tmp_path):
    with pytest.raises(ValueError):
        tf.io.TFRecordWriter(str(tmp_path / "t.tfrecord"), 5)
    with pytest.raises(ValueError, match="compression must be"):
        tfr.RecordWriter(tmp_path / "o.tfrecord", 5)
    assert not list(tmp_path.glob("o.tfrecord*"))
