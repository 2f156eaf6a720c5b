"""How features lay out in Apache Arrow: the type each kind of feature becomes, and its
arrays, built from NumPy buffers (parsed columns, row splits) with no Python object per
row.

=====================================  ==================================================
feature                                Arrow type (``T``: int64, float32, large_binary or
                                       large_string)
=====================================  ==================================================
``FixedLen([])``                       ``T``
``FixedLen([a, b])``                   ``fixed_size_list<fixed_size_list<T, b>, a>``
``VarLen``                             ``large_list<T>``
``FixedLenSequence([a])``              ``large_list<fixed_size_list<T, a>>``: each row's
                                       own elements
``RaggedFeature`` with partitions      one ``large_list`` per ragged dimension, a
                                       ``fixed_size_list`` per ``UniformRowLength``
``SparseFeature`` of size ``[n]``      ``struct<indices: large_list<int64>,
                                       values: large_list<T>>``
``SparseFeature`` of size ``[n, m]``   ``struct<indices_0, indices_1: large_list<int64>,
                                       values: large_list<T>>``
feature lists (``steps=True``)         ``FixedLenSequence``: as above, one element per
                                       step; ``VarLen`` and ``RaggedFeature``: one more
                                       ``large_list`` for the steps
=====================================  ==================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import SchemaError
from .features import (
    FixedLen,
    FixedLenSequence,
    Partition,
    RaggedFeature,
    SparseFeature,
    Spec,
    UniformRowLength,
    VarLen,
)

__all__ = [
    "arrow_type",
    "list_array",
    "nest_fixed_size",
    "ragged_array",
    "sparse_array",
    "sparse_fields",
    "values_array",
    "with_strings",
    "is_text",
    "text_features",
    "Strings",
]


def leaf_type(pa: Any, dtype: str, strings: bool = False) -> Any:
    """The Arrow type of one value of ``dtype``."""
    if dtype == "int64":
        return pa.int64()
    if dtype == "float32":
        return pa.float32()
    return pa.large_string() if strings else pa.large_binary()


def sparse_fields(spec: SparseFeature) -> list[str]:
    """The struct fields of a ``SparseFeature``: ``indices`` (``indices_0``, ``indices_1``
    ... for several dimensions), then ``values``."""
    rank = len(spec.size)
    return [*(["indices"] if rank == 1 else [f"indices_{d}" for d in range(rank)]), "values"]


def arrow_type(
    pa: Any, spec: Spec, strings: bool = False, *, steps: bool = False, key: str = ""
) -> Any:
    """The Arrow type feature ``spec`` (named ``key``) becomes (a feature list's, with
    ``steps``); bytes are ``large_binary``, or ``large_string`` with ``strings``, at every
    level.

    >>> arrow_type(pa, RaggedFeature("int64"), steps=True)  # doctest: +SKIP
    LargeListType(large_list<item: large_list<item: int64>>)
    """
    leaf = leaf_type(pa, spec.dtype, strings)
    if isinstance(spec, (FixedLen, FixedLenSequence)) and 0 in spec.shape:
        raise SchemaError(
            f"feature {key!r}: Arrow has no fixed-size list of 0 for the shape {spec.shape}; "
            "read it as a VarLen"
        )
    if isinstance(spec, FixedLen):
        return _fixed_type(pa, leaf, spec.shape)
    if isinstance(spec, FixedLenSequence):
        return pa.large_list(_fixed_type(pa, leaf, spec.shape))
    if isinstance(spec, SparseFeature):
        *indices, values = sparse_fields(spec)
        lists = [(name, pa.large_list(pa.int64())) for name in indices]
        return pa.struct([*lists, (values, pa.large_list(leaf))])
    kind = leaf
    if isinstance(spec, RaggedFeature):
        for p in reversed(spec.partitions):
            if isinstance(p, UniformRowLength):
                kind = pa.list_(kind, p.length)
            else:
                kind = pa.large_list(kind)
    elif not isinstance(spec, VarLen):
        raise TypeError(f"no Arrow type for {type(spec).__name__}")
    kind = pa.large_list(kind)
    return pa.large_list(kind) if steps else kind


def _fixed_type(pa: Any, leaf: Any, shape: Sequence[int]) -> Any:
    for d in reversed(shape):
        leaf = pa.list_(leaf, d)
    return leaf


def nest_fixed_size(pa: Any, array: Any, dims: Sequence[int]) -> Any:
    """``array`` of leaf values as nested ``fixed_size_list``\\ s of ``dims``."""
    for d in reversed(dims):
        array = pa.FixedSizeListArray.from_arrays(array, d)
    return array


def values_array(pa: Any, values: Any) -> Any:
    """An Arrow array over parsed values: int64 / float32 over the NumPy buffer, bytes as
    ``large_binary`` from Arrow's binary layout ``(data, offsets)`` or from an object
    array."""
    if isinstance(values, tuple):
        data, offsets = values
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        return pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1, buffers)
    values = np.asarray(values)
    if values.dtype == object:
        return pa.array(values, type=pa.large_binary())
    return pa.array(values)


def list_array(pa: Any, offsets: Any, inner: Any) -> Any:
    """A ``large_list`` array of ``inner`` split by ``offsets`` (row splits), whose int64
    buffer becomes the offsets buffer as it is."""
    return pa.LargeListArray.from_arrays(pa.array(np.asarray(offsets, dtype=np.int64)), inner)


def ragged_array(
    pa: Any, leaf: Any, levels: Sequence[Any], partitions: Sequence[Partition] = ()
) -> Any:
    """Nested lists of ``leaf`` from row splits, outermost first: the last
    ``len(partitions)`` levels are a ``RaggedFeature``'s partitions (a
    ``UniformRowLength`` one becomes a ``fixed_size_list``), those before them plain
    ``large_list``\\ s (the batch, and the steps of a feature list)."""
    array = leaf
    outer = len(levels) - len(partitions)
    for p, splits in zip(reversed(partitions), reversed(levels[outer:]), strict=True):
        if isinstance(p, UniformRowLength):
            array = pa.FixedSizeListArray.from_arrays(array, p.length)
        else:
            array = list_array(pa, splits, array)
    for splits in reversed(levels[:outer]):
        array = list_array(pa, splits, array)
    return array


def sparse_array(
    pa: Any, spec: SparseFeature, row_splits: Any, indices: Sequence[Any], values: Any
) -> Any:
    """A ``SparseFeature``'s struct array: each Example's indices (one int64 array per
    dimension, entries in order) and ``values`` (an Arrow array), split by
    ``row_splits``."""
    lists = [list_array(pa, row_splits, pa.array(np.asarray(ix))) for ix in indices]
    lists.append(list_array(pa, row_splits, values))
    return pa.StructArray.from_arrays(lists, names=sparse_fields(spec))


Strings = bool | Sequence[str]
"""``strings=``: ``True`` for every bytes feature as text, or the names of those that are."""


def is_text(strings: Strings, key: str) -> bool:
    """Whether feature ``key`` is read as text under ``strings``."""
    return strings is True or (not isinstance(strings, bool) and key in strings)


def text_features(strings: Strings, names: Sequence[str]) -> None:
    """Checks that the features ``strings`` names are among ``names``."""
    if isinstance(strings, (str, bytes)):
        raise TypeError("strings= is True, False, or a list of feature names")
    if not isinstance(strings, bool):
        unknown = [k for k in strings if k not in names]
        if unknown:
            raise KeyError(f"strings= names {unknown}, which are not in the schema {list(names)}")


def with_strings(pa: Any, key: str, array: Any, kind: Any) -> Any:
    """``array`` (bytes as ``large_binary``) as type ``kind`` (bytes as ``large_string``),
    without copies; a value that is not UTF-8 raises :class:`SchemaError` naming the
    feature and its row."""
    if array.type == kind:
        return array
    try:
        return array.cast(kind)
    except pa.ArrowInvalid:
        for row, value in enumerate(array.to_pylist()):
            bad = _not_utf8(value)
            if bad is not None:
                shown = repr(bad[:24]) + (f"... ({len(bad):,} bytes)" if len(bad) > 24 else "")
                raise SchemaError(
                    f"feature {key!r} has a value that is not UTF-8 ({shown}); read it as "
                    "bytes: leave it out of strings= (a list of the text features)",
                    key=key,
                    record_index=row,
                ) from None
        raise


def _not_utf8(value: Any) -> bytes | None:
    """The first bytes in ``value`` (nested lists and dicts of them) that are not UTF-8."""
    if isinstance(value, bytes):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return value
        return None
    if isinstance(value, dict):
        value = list(value.values())
    for item in value if isinstance(value, list) else ():
        bad = _not_utf8(item)
        if bad is not None:
            return bad
    return None
