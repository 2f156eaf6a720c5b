"""Encoding and decoding ``tf.train.Example`` and ``tf.train.SequenceExample``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from . import _core

__all__ = [
    "decode_example",
    "encode_examples",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
]

FeatureValue = Any
"""A scalar (bool, int, float, bytes, str, NumPy scalar), a list of them, or an ndarray."""


def encode_example(features: Mapping[str, FeatureValue]) -> bytes:
    """Serializes a mapping of name → value as a ``tf.train.Example``.

    Values are coerced as TensorFlow documents: bool and integers → ``int64_list``;
    floats → ``float_list`` (float32); bytes and str (UTF-8) → ``bytes_list``. A value may
    be a scalar, a list, or an ndarray (flattened row-major). An empty list stores a
    feature with no list set, which parsing treats as missing.

    >>> record = encode_example({"label": 1, "score": 0.5, "name": "cat"})
    >>> decode_example(record)["label"]
    array([1])
    """
    return _core.encode_example(features)


def decode_example(data: bytes) -> dict[str, Any]:
    """Decodes a serialized ``tf.train.Example``.

    ``int64_list`` becomes an ``np.int64`` array, ``float_list`` an ``np.float32`` array,
    ``bytes_list`` a ``list[bytes]`` (and a feature with no list an empty list). Raises
    :class:`~tfrecordkit.errors.ExampleDecodeError` on malformed bytes.
    """
    return _core.decode_example(data)


def encode_sequence_example(
    context: Mapping[str, FeatureValue],
    feature_lists: Mapping[str, Iterable[FeatureValue]],
) -> bytes:
    """Serializes a ``tf.train.SequenceExample``.

    ``context`` is coerced as in :func:`encode_example`; each value of ``feature_lists``
    is a sequence of per-step values (one ``Feature`` per step), or a 2-D array whose rows
    are the steps.

    >>> data = encode_sequence_example({"id": b"a"}, {"tokens": [[1, 2], [3]]})
    >>> ctx, lists = decode_sequence_example(data)
    >>> [t.tolist() for t in lists["tokens"]]
    [[1, 2], [3]]
    """
    lists = {
        k: (list(v) if isinstance(v, np.ndarray) else v) for k, v in feature_lists.items()
    }
    return _core.encode_sequence_example(context, lists)


def decode_sequence_example(
    data: bytes,
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Decodes a serialized ``tf.train.SequenceExample`` into ``(context, feature_lists)``.

    Values are decoded as in :func:`decode_example`; each feature list is a list of steps.
    """
    context, lists = _core.decode_sequence_example(data)
    return context, lists


def _column(name: str, col: Any) -> Any:
    """One table column as the extension wants it: a 2-D int64/float32 array
    ``[rows, values per row]``, a 2-D uint8 array of fixed-width bytes values, or a list
    of bytes (one value per row)."""
    if isinstance(col, (list, tuple)) and col and isinstance(col[0], (bytes, str)):
        values = list(col)
    else:
        arr = np.asarray(col)
        if arr.ndim == 0:
            raise ValueError(f"column {name!r} is a scalar; columns need one entry per row")
        kind = arr.dtype.kind
        if kind in "biuf":
            dtype = np.float32 if kind == "f" else np.int64
            if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
                raise OverflowError(f"column {name!r} has values beyond the int64 range")
            width = int(np.prod(arr.shape[1:], dtype=np.int64))
            return np.ascontiguousarray(arr.reshape(len(arr), width), dtype=dtype)
        if kind == "S" and arr.ndim == 1 and arr.dtype.itemsize:
            # Fixed-width bytes travel as rows of uint8, without a Python object per value.
            return np.ascontiguousarray(arr).view(np.uint8).reshape(len(arr), -1)
        if kind not in "SUO" or arr.ndim != 1:
            raise TypeError(
                f"column {name!r}: expected numbers (one value or a fixed-size array per row) "
                f"or one bytes/str value per row, not a {arr.dtype} array of shape {arr.shape}"
            )
        values = arr.tolist()
    out = []
    for v in values:
        if isinstance(v, str):
            v = v.encode()
        elif not isinstance(v, bytes):
            raise TypeError(
                f"column {name!r} mixes bytes/str with {type(v).__name__}; "
                "encode rows of mixed or variable-length values with encode_example"
            )
        out.append(v)
    return out


def table_columns(columns: Mapping[str, Any]) -> tuple[list[str], list[Any]]:
    """Names and normalized columns of a mapping or DataFrame (anything with ``.items()``)."""
    names: list[str] = []
    cols: list[Any] = []
    for name, col in columns.items():
        if not isinstance(name, str):
            raise TypeError(f"column names must be str, not {type(name).__name__}")
        names.append(name)
        cols.append(_column(name, col))
    return names, cols


def encode_examples(columns: Mapping[str, Any]) -> list[bytes]:
    """Encodes a table (a dict of columns, or a DataFrame) as one Example per row.

    Numeric columns hold one value per row (1-D) or a fixed-size array per row (2-D and
    up, flattened); bytes/str columns one value per row. Encoding runs in native code with
    no Python object per row.

    >>> records = encode_examples({"label": np.array([1, 2]), "name": ["a", "b"]})
    >>> decode_example(records[1])["name"]
    [b'b']
    """
    names, cols = table_columns(columns)
    return _core.encode_columns(names, cols)
