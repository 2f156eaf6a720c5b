r"""``tf.io.decode_raw`` without TensorFlow: bytes read as arrays of numbers.

>>> tfr.decode_raw(np.array([1.5, -2.0], "<f4").tobytes(), "float32")
array([ 1.5, -2. ], dtype=float32)
"""

from __future__ import annotations

import dataclasses
import operator
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from .tensors import bfloat16_dtype

__all__ = ["decode_raw"]

# The out_type TensorFlow's DecodeRaw takes, by NumPy name, with the name its messages use.
_TF_NAMES = {
    "float16": "half",
    "bfloat16": "bfloat16",
    "float32": "float",
    "float64": "double",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "complex64": "complex64",
    "complex128": "complex128",
    "bool": "bool",
}
_ALIASES = {"half": "float16", "float": "float32", "double": "float64"}
_ACCEPTED = (
    "half (float16), bfloat16, float (float32), double (float64), int8, int16, int32, "
    "int64, uint8, uint16, complex64, complex128 or bool"
)
# int and float are int64/float64 to NumPy but int32/float32 to TensorFlow.
_AMBIGUOUS = {int: "int", float: "float", "int": "int"}
_HOST_LITTLE = sys.byteorder == "little"
_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
_SEEN: dict[Any, np.dtype] = {}  # the dtypes given so far, resolved
_str_len = np.strings.str_len if hasattr(np, "strings") else np.char.str_len


def decode_raw(
    values: Any, dtype: Any, little_endian: bool = True, fixed_length: int | None = None
) -> Any:
    r"""Reads each bytes value as an array of ``dtype``, as ``tf.io.decode_raw`` does.

    ``values``: one bytes-like value (→ 1-D array), a list, tuple or object/``S`` array of
    them of any shape (→ ``shape + [n]``; every value the same length), or a
    :class:`~tfrecordkit.Ragged` such as a parsed ``VarLen("bytes")`` (→ the same rows, each
    value decoded, as ``tf.ragged.map_flat_values(tf.io.decode_raw, ...)``). ``dtype``:
    a NumPy dtype, a name (``"float"``, ``"double"``, ``"half"``, ``"bfloat16"``...) or a
    ``tf.DType``, among those DecodeRaw takes. ``fixed_length`` truncates or zero-pads every
    value to that many bytes first. The result is a new, writeable array. Raises
    ``ValueError`` where TensorFlow rejects the input or dtype, ``TypeError`` for values
    that are not bytes, ``ImportError`` for bfloat16 without ``ml_dtypes``.

    >>> tfr.decode_raw([b"\x00\x01", b"\x00\x02\x00\x03"], "uint16", little_endian=False,
    ...            fixed_length=4)
    array([[1, 0],
           [2, 3]], dtype=uint16)
    >>> records = [tfr.encode_example({"v": [b"\x01\x00", b"\x02\x00"]}),
    ...            tfr.encode_example({"v": [b"\x03\x00"]})]
    >>> tfr.decode_raw(tfr.parse_examples(records, {"v": tfr.VarLen("bytes")})["v"],
    ...            np.int16).to_list()
    [[[1], [2]], [[3]]]
    """
    out_type = _out_dtype(dtype)
    if fixed_length is not None:
        fixed_length = operator.index(fixed_length)
        size = out_type.itemsize
        if fixed_length % size:
            raise ValueError(
                f"fixed_length ({fixed_length}) must be a multiple of the size of out_type ({size})"
            )
        if fixed_length <= 0:
            raise ValueError(f"fixed_length ({fixed_length}) must be greater than zero.")
        if fixed_length >= 2**31:
            # DecodeRaw's fixed_length is an int32.
            raise ValueError(f"fixed_length ({fixed_length}) must be less than 2**31")
    return _decode(values, out_type, bool(little_endian), fixed_length)


def _out_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype DecodeRaw's ``out_type`` ``dtype`` stands for, or ``ValueError``."""
    try:
        return _SEEN[dtype]
    except (KeyError, TypeError):
        pass
    found = _resolve(dtype)
    if len(_SEEN) < 64 and found.name != "bfloat16":  # bfloat16 asks for ml_dtypes each time
        _SEEN[dtype] = found
    return found


def _resolve(dtype: Any) -> np.dtype:
    if dtype is None or isinstance(dtype, bool):
        raise ValueError(f"decode_raw cannot decode to {dtype!r}: dtype is one of {_ACCEPTED}")
    if isinstance(dtype, (str, type)) and dtype in _AMBIGUOUS:
        name = _AMBIGUOUS[dtype]
        raise ValueError(
            f"dtype {name} is ambiguous (NumPy's {name}64, TensorFlow's {name}32): "
            f"give the width, e.g. {name}32"
        )
    # A tf.DType by its name, without importing TensorFlow.
    name = dtype.name if hasattr(dtype, "as_numpy_dtype") else dtype
    if isinstance(name, str):
        name = _ALIASES.get(name, name)
        if name == "bfloat16":
            return bfloat16_dtype()
        if name in _TF_NAMES:
            return np.dtype(name)
    try:
        found = np.dtype(name)
    except (TypeError, ValueError):
        found = None
    if found is not None and found.name in _TF_NAMES:
        if not found.isnative:
            raise ValueError(
                f"dtype {found.str!r} names a byte order: give a native dtype and the "
                "data's byte order as little_endian"
            )
        return found
    raise ValueError(f"decode_raw cannot decode to {dtype!r}: dtype is one of {_ACCEPTED}")


def _decode(values: Any, out_type: np.dtype, little: bool, fixed: int | None) -> Any:
    # A Ragged (a parsed VarLen or RaggedFeature): its values decoded, its rows kept.
    # (By its shape: this module imports no other of the package.)
    if hasattr(values, "row_splits") and dataclasses.is_dataclass(values):
        ragged: Any = values
        return dataclasses.replace(ragged, values=_decode(ragged.values, out_type, little, fixed))
    if isinstance(values, (bytes, bytearray, memoryview, str)):
        return _from_items([values], (), out_type, little, fixed)
    if isinstance(values, (list, tuple)) and not (values and isinstance(values[0], (list, tuple))):
        return _from_items(values, (len(values),), out_type, little, fixed)
    array = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
    if array.dtype.kind == "S":
        return _from_fixed_width(array, out_type, little, fixed)
    if array.dtype.kind == "U":
        items = [s.encode("utf-8") for s in array.ravel().tolist()]
    elif array.dtype == object:
        items = array.ravel().tolist()
    else:
        raise TypeError(f"decode_raw reads bytes values, not an array of {array.dtype}")
    return _from_items(items, array.shape, out_type, little, fixed)


def _as_bytes(value: Any) -> bytes | bytearray:
    if isinstance(value, (bytes, bytearray)):
        return value
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"decode_raw reads bytes values, not {type(value).__name__}")


def _from_items(
    items: Sequence[Any],
    shape: tuple[int, ...],
    out_type: np.dtype,
    little: bool,
    fixed: int | None,
) -> np.ndarray:
    """Decodes ``items`` (bytes-likes, flat) into an array of ``shape + [n]``."""
    count = len(items)
    size = out_type.itemsize
    if fixed is not None:
        if count == 0:
            return np.zeros((*shape, fixed // size), out_type)
        if set(map(type, items)) == {bytes}:
            # NumPy copies each value into its slot of fixed bytes, truncated or zero-padded.
            raw = np.empty((count, fixed), np.uint8)
            raw.view(f"S{fixed}")[:, 0] = items
            return _finish(raw, shape, fixed // size, out_type, little)
    data, lengths, uniform = _joined(items)
    width = lengths[0] if count else 0
    if fixed is not None:
        raw = np.frombuffer(data, np.uint8)
        if not uniform:
            raw = _pad_rows(raw, np.asarray(lengths, np.intp), fixed)
        elif width != fixed:
            rows = raw.reshape(count, width)
            raw = np.zeros((count, fixed), np.uint8)
            keep = min(width, fixed)
            raw[:, :keep] = rows[:, :keep]
        return _finish(raw, shape, fixed // size, out_type, little)
    if not uniform:
        _check_one_size(np.asarray(lengths), width)
    if width == 0:
        return np.zeros((*shape, 0), out_type)
    _check_multiple(width, out_type)
    return _finish(np.frombuffer(data, np.uint8), shape, width // size, out_type, little)


def _joined(items: Sequence[Any]) -> tuple[bytearray, list[int], bool]:
    """Every value back to back in one buffer of our own (one copy), each one's length, and
    whether they are all one length. str values are encoded, and memoryviews of wider items
    read as bytes, only when the join says it needs to."""
    try:
        data = bytearray().join(items)
        lengths = list(map(len, items))
    except TypeError:
        pass
    else:
        first = lengths[0] if lengths else 0
        if lengths.count(first) == len(lengths):
            if len(data) == first * len(lengths):
                return data, lengths, True
        elif len(data) == sum(lengths):
            return data, lengths, False
    items = [_as_bytes(v) for v in items]
    lengths = list(map(len, items))
    first = lengths[0] if lengths else 0
    return bytearray().join(items), lengths, lengths.count(first) == len(lengths)


def _from_fixed_width(
    array: np.ndarray, out_type: np.dtype, little: bool, fixed: int | None
) -> np.ndarray:
    """Decodes an ``S`` array: each value as NumPy reads it, trailing NUL bytes dropped (as
    ``tf.constant`` of it has them), straight from the array's buffer."""
    shape, count, itemsize = array.shape, array.size, array.dtype.itemsize
    size = out_type.itemsize
    rows = np.ascontiguousarray(array).reshape(count).view(np.uint8).reshape(count, itemsize)
    if fixed is not None:
        raw = np.zeros((count, fixed), np.uint8)
        keep = min(itemsize, fixed)
        raw[:, :keep] = rows[:, :keep]
        return _finish(raw, shape, fixed // size, out_type, little)
    lengths = _str_len(array).reshape(count)
    width = int(lengths[0]) if count else 0
    _check_one_size(lengths, width)
    if width == 0:
        return np.zeros((*shape, 0), out_type)
    _check_multiple(width, out_type)
    # A copy: rows may be the caller's own buffer.
    return _finish(rows[:, :width].copy(), shape, width // size, out_type, little)


def _check_one_size(lengths: np.ndarray, width: int) -> None:
    """TensorFlow's error for values of more than one length, naming the first other."""
    mismatched = np.flatnonzero(lengths != width)
    if len(mismatched):
        bad = int(mismatched[0])
        raise ValueError(
            "DecodeRaw requires input strings to all be the same size, but element "
            f"{bad} has size {width} != {int(lengths[bad])} (fixed_length pads or truncates them)"
        )


def _check_multiple(width: int, out_type: np.dtype) -> None:
    if width % out_type.itemsize:
        raise ValueError(
            f"Input to DecodeRaw has length {width} that is not a multiple of "
            f"{out_type.itemsize}, the size of {_TF_NAMES[out_type.name]}"
        )


def _pad_rows(data: np.ndarray, lengths: np.ndarray, fixed: int) -> np.ndarray:
    """Values of ``lengths`` back to back in ``data`` → rows of ``fixed`` bytes, each value
    truncated or zero-padded, in a few vectorized steps."""
    starts = np.cumsum(lengths) - lengths
    columns = np.arange(fixed)
    inside = columns < np.minimum(lengths, fixed)[:, None]
    out = np.zeros((len(lengths), fixed), np.uint8)
    out[inside] = data[(starts[:, None] + columns)[inside]]
    return out


def _finish(
    raw: np.ndarray, shape: tuple[int, ...], n: int, out_type: np.dtype, little: bool
) -> np.ndarray:
    """``raw``'s bytes (a writeable buffer of our own) as ``shape + [n]`` of ``out_type``."""
    out = raw.reshape(-1).view(out_type).reshape(*shape, n)
    if out_type.kind == "b":
        # Any nonzero byte is true; stored as 0/1, as NumPy's own booleans are.
        flags = out.view(np.uint8)
        np.minimum(flags, 1, out=flags)
    elif little != _HOST_LITTLE and out_type.itemsize > 1:
        # Complex values swap their real and imaginary parts each on its own.
        part = out_type.itemsize // 2 if out_type.kind == "c" else out_type.itemsize
        out.view(_UINT[part]).byteswap(inplace=True)
    return out
