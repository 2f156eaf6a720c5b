"""Encoding and decoding ``tf.train.Example`` and ``tf.train.SequenceExample``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .. import _core
from .columns import as_table

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
    be a scalar, a list, or an ndarray (flattened row-major). An empty ndarray stores an
    empty list of its dtype's kind; an empty Python list, which says no kind, stores a
    feature with no list set: the one form TensorFlow parses as empty for every dtype (an
    empty list of another kind fails its parser), which parsing treats as missing.

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
    are the steps. An empty step (``[]``) is an empty list of the kind the list's other
    steps have.

    >>> data = encode_sequence_example({"id": b"a"}, {"tokens": [[1, 2], [3]]})
    >>> ctx, lists = decode_sequence_example(data)
    >>> [t.tolist() for t in lists["tokens"]]
    [[1, 2], [3]]
    """
    lists = {
        k: _typed_steps(list(v) if isinstance(v, np.ndarray) else v)
        for k, v in feature_lists.items()
    }
    return _core.encode_sequence_example(context, lists)


def _typed_steps(steps: Any) -> Any:
    """``steps`` with each empty, untyped step (``[]``) made an empty list of the kind its
    other steps have: a feature list says its kind, and readers that look at each step's
    kind (vahidk's ``tfrecord``) need one set."""
    if not isinstance(steps, (list, tuple)):
        return steps
    kind = next((k for k in map(_kind, steps) if k is not None), None)
    return steps if kind is None else [typed_empty(s, kind) for s in steps]


def typed_empty(value: Any, kind: str | None) -> Any:
    """``value``, or, when it is an empty Python list and ``kind`` (``"int64"``,
    ``"float32"``, ``"bytes"``) is known, an empty array that encodes as an empty list of
    that kind rather than a feature with no list set."""
    if kind is None or not isinstance(value, (list, tuple)) or value:
        return value
    return np.array([], dtype={"int64": np.int64, "float32": np.float32}.get(kind, object))


def _kind(value: Any) -> str | None:
    """The list kind ``value`` encodes to (``"int64"``, ``"float32"``, ``"bytes"``), or
    None where an empty, untyped value says nothing."""
    if isinstance(value, np.ndarray):
        return {"i": "int64", "u": "int64", "b": "int64", "f": "float32"}.get(
            value.dtype.kind, "bytes"
        )
    if isinstance(value, (bytes, bytearray, str)):
        return "bytes"
    if isinstance(value, (bool, int, np.integer)):
        return "int64"
    if isinstance(value, (float, np.floating)):
        return "float32"
    if isinstance(value, (list, tuple)) and value:
        return _kind(value[0])
    return None


def decode_sequence_example(
    data: bytes,
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Decodes a serialized ``tf.train.SequenceExample`` into ``(context, feature_lists)``.

    Values are decoded as in :func:`decode_example`; each feature list is a list of steps.
    """
    context, lists = _core.decode_sequence_example(data)
    return context, lists


def foreign(record: bytes) -> str | None:
    """Why ``record`` is no ``Example`` / ``SequenceExample`` although it decodes as one
    (protobuf skips fields it does not know, so another message decodes to no features):
    ``None`` when it starts as they do (an empty one included)."""
    if not record or record[0] in (0x0A, 0x12):
        return None
    field, wire = record[0] >> 3, record[0] & 7
    why = f"it starts with field {field} (wire type {wire}), which a tf.train.Example does not have"
    if record[0] == 0x09:
        why += "; it looks like a TensorBoard event (a wall_time double comes first)"
    return why


def encode_examples(columns: Any, schema: Mapping[str, Any] | None = None) -> list[bytes]:
    """Encodes a table (a dict of columns, a pandas DataFrame or an Arrow table) as one
    Example per row.

    Integers and bools become int64 features, floats float32, bytes and str bytes; a 2-D
    (or higher) array or a column of lists gives a list of values per row; a null (None,
    pandas NA, an Arrow null) leaves the feature out of that row. ``schema`` overrides the
    dtypes inferred from the data. Encoding runs in native code with no Python object per
    row for NumPy and Arrow columns.

    >>> records = encode_examples({"label": np.array([1, 2]), "name": ["a", "b"]})
    >>> decode_example(records[1])["name"]
    [b'b']
    """
    table = as_table(columns, schema)
    return _core.encode_columns(table.native())
