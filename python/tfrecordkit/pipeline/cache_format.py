"""Pipeline elements as bytes, for ``cache(filename)`` after a ``map``: one TFRecord record
per element, in a format that holds data only (never pickle: a cache file may have been
planted, and loading it must not run code).

A record is ``MAGIC``, a 4-byte little-endian header length, a JSON header describing the
element's tree, then the raw buffers the header points at. The tree holds dicts (str keys),
tuples, lists, NumPy arrays (numeric, bool or of bytes / str objects) and scalars, bytes,
str, int, float, bool, None, :class:`Ragged` and :class:`Sparse`: what parsed Examples and
most ``map`` functions produce. Anything else is refused when written, naming its type.

>>> decode(encode((7, {"x": np.arange(3)})))
(7, {'x': array([0, 1, 2])})
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from ..schema.values import Ragged, Sparse

MAGIC = b"tfrecordkit.element/1\n"
#: Array kinds a buffer may hold: bool, signed and unsigned ints, floats, complex.
_KINDS = frozenset("biufc")
_SUPPORTED = (
    "dicts with str keys, tuples, lists, NumPy arrays and scalars (numeric, bool, bytes, "
    "str), bytes, str, int, float, bool, None, Ragged and Sparse"
)


class ElementError(TypeError):
    """An element that the cache file format cannot hold."""


def encode(element: Any) -> bytes:
    """One element as a record; :class:`ElementError` for what the format cannot hold."""
    return _record(lambda buffers: _encode(element, buffers, "the element"))


def encode_pair(key: Any, element: Any) -> bytes:
    """A pipeline's ``(key, element)`` pair as a record, decoded as a tuple."""
    return _record(
        lambda buffers: {
            "t": "tuple",
            "v": [_encode(key, buffers, "a record key"), _encode(element, buffers, "an element")],
        }
    )


def _record(tree_of: Any) -> bytes:
    buffers: list[bytes] = []
    tree = tree_of(buffers)
    header = json.dumps({"tree": tree, "sizes": [len(b) for b in buffers]}).encode()
    return b"".join([MAGIC, struct.pack("<I", len(header)), header, *buffers])


def decode(record: bytes) -> Any:
    """The element of a record :func:`encode` made; ``ValueError`` for any other bytes."""
    view = memoryview(record)
    if bytes(view[: len(MAGIC)]) != MAGIC or len(view) < len(MAGIC) + 4:
        raise ValueError("not a cached element")
    (size,) = struct.unpack_from("<I", view, len(MAGIC))
    start = len(MAGIC) + 4
    if size > len(view) - start:
        raise ValueError("the header runs past the record")
    try:
        header = json.loads(bytes(view[start : start + size]))
    except (ValueError, RecursionError):
        raise ValueError("the header is not JSON") from None
    if not isinstance(header, dict) or not isinstance(header.get("sizes"), list):
        raise ValueError("the header has no buffer sizes")
    sizes = header["sizes"]
    if not all(isinstance(n, int) and n >= 0 for n in sizes):
        raise ValueError("buffer sizes are counts")
    at = start + size
    if at + sum(sizes) != len(view):
        raise ValueError("the buffers do not fill the record")
    buffers = []
    for n in sizes:
        buffers.append(view[at : at + n])
        at += n
    try:
        return _decode(header.get("tree"), buffers)
    except (KeyError, TypeError, IndexError, RecursionError) as err:
        raise ValueError(f"a malformed element ({type(err).__name__})") from None


def _buffer(data: bytes, buffers: list[bytes]) -> int:
    buffers.append(data)
    return len(buffers) - 1


def _encode(x: Any, buffers: list[bytes], where: str) -> Any:
    if x is None:
        return {"t": "none"}
    if isinstance(x, (bool, np.bool_)) and not isinstance(x, np.ndarray):
        return {"t": "bool", "v": bool(x)}
    if isinstance(x, int) and not isinstance(x, np.integer):
        return {"t": "int", "v": str(x)}
    if isinstance(x, float) and not isinstance(x, np.floating):
        return {"t": "float", "v": x.hex()}
    if isinstance(x, str):
        return {"t": "str", "v": x}
    if isinstance(x, (bytes, bytearray, memoryview)):
        return {"t": "bytes", "b": _buffer(bytes(x), buffers)}
    if isinstance(x, np.generic):
        return _encode_array(np.asarray(x), buffers, where) | {"scalar": True}
    if isinstance(x, np.ndarray):
        return _encode_array(x, buffers, where)
    if isinstance(x, Ragged):
        return {
            "t": "ragged",
            "values": _encode(x.values, buffers, where),
            "splits": _encode_array(np.asarray(x.row_splits), buffers, where),
        }
    if isinstance(x, Sparse):
        return {
            "t": "sparse",
            "indices": _encode_array(x.indices, buffers, where),
            "values": _encode_array(x.values, buffers, where),
            "shape": [int(d) for d in x.dense_shape],
        }
    if isinstance(x, dict):
        for k in x:
            if not isinstance(k, str):
                raise ElementError(f"{where} has a key of type {type(k).__name__}, not str")
        return {
            "t": "dict",
            "k": list(x),
            "v": [_encode(v, buffers, f"{where}[{k!r}]") for k, v in x.items()],
        }
    if isinstance(x, (tuple, list)):
        kind = "tuple" if isinstance(x, tuple) else "list"
        return {"t": kind, "v": [_encode(v, buffers, f"{where}[{i}]") for i, v in enumerate(x)]}
    raise ElementError(
        f"{where} is a {type(x).__module__}.{type(x).__qualname__}: a cache file holds "
        f"{_SUPPORTED}. Call cache() without a filename to keep such elements in memory"
    )


def _encode_array(a: np.ndarray, buffers: list[bytes], where: str) -> dict[str, Any]:
    shape = [int(d) for d in a.shape]
    if a.dtype.kind in _KINDS:
        dtype = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
        data = np.ascontiguousarray(a, dtype=dtype).tobytes()
        return {"t": "nd", "dtype": dtype.str, "shape": shape, "b": _buffer(data, buffers)}
    if a.dtype.kind in "OSU":
        items = [_encode(v, buffers, f"{where} item") for v in a.ravel().tolist()]
        return {"t": "ndo", "dtype": a.dtype.str, "shape": shape, "v": items}
    raise ElementError(f"{where} is an array of {a.dtype}: a cache file holds {_SUPPORTED}")


def _decode(t: Any, buffers: list[memoryview]) -> Any:
    kind = t["t"]
    if kind == "none":
        return None
    if kind == "bool":
        return bool(t["v"])
    if kind == "int":
        return int(str(t["v"]))
    if kind == "float":
        return float.fromhex(str(t["v"]))
    if kind == "str":
        return str(t["v"])
    if kind == "bytes":
        return bytes(buffers[t["b"]])
    if kind == "nd":
        return _decode_array(t, buffers)
    if kind == "ndo":
        shape = _shape(t["shape"])
        items = [_decode(v, buffers) for v in t["v"]]
        if len(items) != int(np.prod(shape, dtype=object)):
            raise ValueError("an object array's items do not fill its shape")
        dtype = np.dtype(str(t["dtype"]))
        if dtype.kind not in "OSU":
            raise ValueError(f"an object array of {dtype}")
        out = np.empty(len(items), dtype=dtype)
        out[:] = items
        return out.reshape(shape)
    if kind == "ragged":
        return Ragged(_decode(t["values"], buffers), _decode_array(t["splits"], buffers))
    if kind == "sparse":
        shape = tuple(_shape(t["shape"]))
        return Sparse(_decode_array(t["indices"], buffers), _decode(t["values"], buffers), shape)
    if kind == "dict":
        keys, values = t["k"], t["v"]
        if len(keys) != len(values) or not all(isinstance(k, str) for k in keys):
            raise ValueError("a dict's keys and values do not pair up")
        return {k: _decode(v, buffers) for k, v in zip(keys, values, strict=True)}
    if kind in ("tuple", "list"):
        items = [_decode(v, buffers) for v in t["v"]]
        return tuple(items) if kind == "tuple" else items
    raise ValueError(f"an unknown element kind {str(kind)[:32]!r}")


def _shape(shape: Any) -> list[int]:
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError("a shape is a list of counts")
    return shape


def _decode_array(t: Any, buffers: list[memoryview]) -> Any:
    if t["t"] != "nd":
        return _decode(t, buffers)
    dtype = np.dtype(str(t["dtype"]))
    if dtype.kind not in _KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"an array of {dtype}")
    shape = _shape(t["shape"])
    data = buffers[t["b"]]
    count = int(np.prod(shape, dtype=object))
    if count * dtype.itemsize != len(data):
        raise ValueError("an array's bytes do not fill its shape")
    out = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    return out[()] if t.get("scalar") else out
