"""Shared fixtures for the TensorFlow compatibility suite.

TensorFlow is the oracle: every helper here produces or interprets data with TensorFlow's
own writers and parsers, so the tests compare tfrecordkit with what TensorFlow does, never
with hand-written expectations.

Helpers are exposed as fixtures (this directory has no ``__init__.py``, so test modules do
not import from here).
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr

# ---------------------------------------------------------------------------------------------
# TFRecord files through TensorFlow
# ---------------------------------------------------------------------------------------------

_TF_COMPRESSION = {None: "", "gzip": "GZIP", "zlib": "ZLIB"}


def _tf_write(
    path: os.PathLike[str] | str, payloads: Iterable[bytes], compression: str | None = None
) -> str:
    """Writes ``payloads`` with ``tf.io.TFRecordWriter``; ``compression`` None/"gzip"/"zlib"."""
    path = os.fspath(path)
    options = tf.io.TFRecordOptions(compression_type=_TF_COMPRESSION[compression])
    with tf.io.TFRecordWriter(path, options) as writer:
        for payload in payloads:
            writer.write(payload)
    return path


def _tf_read(
    path: os.PathLike[str] | str | Sequence[str], compression: str | None = None
) -> list[bytes]:
    """Reads every record with ``tf.data.TFRecordDataset``."""
    paths = [os.fspath(p) for p in path] if isinstance(path, (list, tuple)) else os.fspath(path)
    ds = tf.data.TFRecordDataset(paths, compression_type=_TF_COMPRESSION[compression])
    return [bytes(r) for r in ds.as_numpy_iterator()]


@pytest.fixture(scope="package")
def tf_write() -> Callable[..., str]:
    return _tf_write


@pytest.fixture(scope="package")
def tf_read() -> Callable[..., list[bytes]]:
    return _tf_read


# ---------------------------------------------------------------------------------------------
# Building Examples with TensorFlow's own protos
# ---------------------------------------------------------------------------------------------


def _tf_feature(kind: str | None, values: Iterable[Any]) -> tf.train.Feature:
    """A ``tf.train.Feature`` of ``kind`` ("int64" / "float32" / "bytes" / None for no list)."""
    if kind is None:
        return tf.train.Feature()
    values = list(values)
    if kind == "int64":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))
    if kind == "float32":
        return tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))
    if kind == "bytes":
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes(v) for v in values]))
    raise ValueError(kind)


def _tf_example(features: Mapping[str, tuple[str | None, Iterable[Any]]]) -> tf.train.Example:
    """``{name: (kind, values)}`` → ``tf.train.Example`` built by TensorFlow's protos."""
    return tf.train.Example(
        features=tf.train.Features(feature={k: _tf_feature(*kv) for k, kv in features.items()})
    )


def _tfr_value(kind: str | None, values: Iterable[Any]) -> Any:
    """The same typed values as input for ``tfr.encode_example`` (an empty kind-less list
    for ``None``; typed empty ndarrays for empty typed lists)."""
    values = list(values)
    if kind is None:
        return []
    if kind == "bytes" and not values:
        return np.zeros(0, dtype="S1")
    if kind == "int64":
        return np.asarray(values, dtype=np.int64)
    if kind == "float32":
        return np.asarray(values, dtype=np.float32)
    return [bytes(v) for v in values]


@pytest.fixture(scope="package")
def tf_feature() -> Callable[..., tf.train.Feature]:
    return _tf_feature


@pytest.fixture(scope="package")
def tf_example() -> Callable[..., tf.train.Example]:
    return _tf_example


@pytest.fixture(scope="package")
def tfr_value() -> Callable[..., Any]:
    return _tfr_value


# ---------------------------------------------------------------------------------------------
# Comparing parses
# ---------------------------------------------------------------------------------------------


def _spec_dtype(spec: Any) -> str:
    return {tf.int64: "int64", tf.float32: "float32", tf.string: "bytes"}[spec.dtype]


def _assert_values_identical(got: np.ndarray, expected: np.ndarray, dtype: str, what: str) -> None:
    """Value-for-value identity, bit-exact for floats (NaN payloads and -0.0 included)."""
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != TF {expected.shape}"
    if dtype == "int64":
        assert got.dtype == np.int64, f"{what}: dtype {got.dtype}, TF gives int64"
        np.testing.assert_array_equal(got, expected, err_msg=what)
    elif dtype == "float32":
        assert got.dtype == np.float32, f"{what}: dtype {got.dtype}, TF gives float32"
        np.testing.assert_array_equal(
            got.view(np.uint32), expected.astype(np.float32).view(np.uint32), err_msg=what
        )
    else:
        assert got.dtype == object, f"{what}: dtype {got.dtype}, TF gives object (bytes)"
        got_list = got.ravel().tolist()
        assert all(type(v) is bytes for v in got_list), f"{what}: non-bytes values"
        assert got_list == expected.ravel().tolist(), what


def _tf_parse(records: Sequence[bytes], tf_spec: Mapping[str, Any]) -> dict[str, Any]:
    return tf.io.parse_example(tf.constant(list(records), dtype=tf.string), dict(tf_spec))


def _assert_parse_matches(
    records: Sequence[bytes],
    tf_spec: Mapping[str, Any],
    schema: Any = None,
) -> dict[str, Any]:
    """``tfr.parse_examples(records, schema)`` equals ``tf.io.parse_example(records, tf_spec)``
    value for value. ``schema`` defaults to the TF spec itself. Returns tfrecordkit's result."""
    records = list(records)
    expected = _tf_parse(records, tf_spec)
    got = tfr.parse_examples(records, tf_spec if schema is None else schema)
    assert set(got) == set(tf_spec)
    n = len(records)
    for key, spec in tf_spec.items():
        dtype = _spec_dtype(spec)
        e, g = expected[key], got[key]
        if isinstance(spec, tf.io.VarLenFeature):
            assert isinstance(g, tfr.Ragged), f"{key}: VarLen gives {type(g).__name__}"
            indices = e.indices.numpy()
            rows = indices[:, 0]
            lengths = np.bincount(rows, minlength=n) if n else np.zeros(0, np.int64)
            splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            # TF lists each row's values in order at columns 0..len-1.
            cols = np.concatenate([np.arange(k) for k in lengths]) if n else np.zeros(0)
            np.testing.assert_array_equal(indices[:, 1], cols.astype(np.int64))
            assert np.asarray(g.row_splits).dtype.kind in "iu", f"{key}: row_splits dtype"
            np.testing.assert_array_equal(g.row_splits, splits, err_msg=f"{key}: row_splits")
            assert len(g) == n
            _assert_values_identical(g.values, e.values.numpy(), dtype, f"{key}: values")
            assert int(e.dense_shape.numpy()[0]) == n
        else:
            assert isinstance(g, np.ndarray), f"{key}: gives {type(g).__name__}"
            _assert_values_identical(g, e.numpy(), dtype, key)
    return got


@pytest.fixture(scope="package")
def tf_parse() -> Callable[..., dict[str, Any]]:
    return _tf_parse


@pytest.fixture(scope="package")
def assert_parse_matches() -> Callable[..., dict[str, Any]]:
    return _assert_parse_matches


@pytest.fixture(scope="package")
def assert_values_identical() -> Callable[..., None]:
    return _assert_values_identical


# ---------------------------------------------------------------------------------------------
# Random values
# ---------------------------------------------------------------------------------------------

_SPECIAL_FLOATS = np.array(
    [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        np.finfo(np.float32).max,
        -np.finfo(np.float32).max,
        np.finfo(np.float32).tiny,
        1e-45,  # smallest subnormal
        1.0,
        -1.5,
    ],
    dtype=np.float32,
)
_SPECIAL_INTS = np.array(
    [0, 1, -1, 127, 128, -128, 2**31 - 1, -(2**31), 2**32, 2**63 - 1, -(2**63)], dtype=np.int64
)
_UNICODE = ["", "a", "héllo", "ключ", "日本語", "🙂🙃", "\u0000nul", "a\u200bb"]


class RandomValues:
    """Random int64 / float32 / bytes values from a seeded numpy Generator."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def ints(self, n: int) -> np.ndarray:
        rng = self.rng
        out = rng.integers(-1000, 1000, size=n, dtype=np.int64)
        wide = rng.random(n) < 0.3
        out[wide] = rng.integers(
            -(2**63), 2**63 - 1, size=int(wide.sum()), dtype=np.int64, endpoint=True
        )
        special = rng.random(n) < 0.15
        out[special] = rng.choice(_SPECIAL_INTS, size=int(special.sum()))
        return out

    def floats(self, n: int) -> np.ndarray:
        rng = self.rng
        out = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, size=n)).astype(np.float32)
        special = rng.random(n) < 0.15
        out[special] = rng.choice(_SPECIAL_FLOATS, size=int(special.sum()))
        return out

    def one_bytes(self) -> bytes:
        rng = self.rng
        r = rng.random()
        if r < 0.4:
            return rng.bytes(int(rng.integers(0, 24)))
        if r < 0.8:
            return str(rng.choice(_UNICODE)).encode("utf-8") + rng.bytes(int(rng.integers(0, 3)))
        return b""

    def bytes_values(self, n: int) -> list[bytes]:
        return [self.one_bytes() for _ in range(n)]

    def values(self, kind: str, n: int) -> list[Any]:
        if kind == "int64":
            return self.ints(n).tolist()
        if kind == "float32":
            return list(self.floats(n))
        return self.bytes_values(n)


@pytest.fixture
def random_values() -> Callable[[int], RandomValues]:
    return RandomValues
