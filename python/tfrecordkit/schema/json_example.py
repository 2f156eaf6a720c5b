"""``tf.train.Example`` in protobuf's JSON mapping, as ``tf.io.decode_json_example`` reads
it and ``google.protobuf.json_format.MessageToJson`` writes it, with no protobuf library:
JSON text is checked field by field and serialized with :func:`encode_example`, records
are read with :func:`decode_example`."""

from __future__ import annotations

import base64
import json as _json
import math
import re
import struct
from collections.abc import Callable, Iterator
from itertools import count
from typing import Any

import numpy as np

from ..errors import ExampleDecodeError, SchemaError
from .example import decode_example, encode_example, foreign
from .features import VarLen, parse_example

__all__ = ["decode_json_example", "encode_json_example"]

#: A Feature's fields, by JSON name and by proto name, to the list kind each sets.
_KINDS = {
    "bytesList": "bytes",
    "bytes_list": "bytes",
    "floatList": "float",
    "float_list": "float",
    "int64List": "int64",
    "int64_list": "int64",
}
_JSON_NAME = {"bytes": "bytesList", "float": "floatList", "int64": "int64List"}
_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
#: Numbers written as JSON strings (ASCII digits only; no spaces, hex or "inf").
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]*")
_URL_SAFE = str.maketrans("-_", "+/")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: The largest integer a JSON number with a fraction or exponent (a double) is taken for.
_EXACT_DOUBLE = 2**53
#: Doubles at or above this value become infinity as float32 (halfway from FLT_MAX to 2**128).
_FLOAT32_OVERFLOW = 2.0**128 - 2.0**103


def decode_json_example(json: Any) -> Any:
    """Serializes ``tf.train.Example`` JSON text (str or UTF-8 bytes), in protobuf's JSON
    mapping, as ``tf.io.decode_json_example`` does; a list (or nested lists) of texts gives
    a list of records, an ndarray an object ndarray of the same shape.

    Field names may be lowerCamelCase (``int64List``) or as in the proto (``int64_list``);
    int64 values JSON integers or strings; floats numbers or strings, with ``"NaN"``,
    ``"Infinity"`` and ``"-Infinity"``; bytes standard or URL-safe base64, padded or not;
    ``null`` leaves a field unset. Anything else raises
    :class:`~tfrecordkit.errors.ExampleDecodeError` naming the feature, and in a batch the
    text's index (``record_index``, counted row-major).

    >>> text = '{"features": {"feature": {"label": {"int64List": {"value": ["7"]}}}}}'
    >>> tfr.decode_example(decode_json_example(text))
    {'label': array([7])}
    >>> [len(r) for r in decode_json_example(["{}", '{"features": {}}'])]
    [0, 2]
    """
    return _apply(_decode_one, json, _TEXT, "decode_json_example takes JSON text (str or bytes)")


def encode_json_example(serialized: Any, indent: int | None = None) -> Any:
    """The JSON text of a serialized ``tf.train.Example``, as
    ``json_format.MessageToJson(tf.train.Example.FromString(serialized), indent=indent)``
    writes it: lowerCamelCase names, int64 values as strings, bytes as padded base64,
    floats as the shortest numbers that read back as the same float32 (``"NaN"``,
    ``"Infinity"``, ``"-Infinity"`` as strings), and empty lists and messages as ``{}``.
    A list or ndarray of records gives a list or object ndarray of texts.

    Raises :class:`~tfrecordkit.errors.ExampleDecodeError` for malformed bytes, and for a
    record holding no features whose first field is not an Example's (another message).

    >>> record = tfr.encode_example({"label": [7, 8], "weight": 0.1})
    >>> print(encode_json_example(record))
    {"features": {"feature": {"label": {"int64List": {"value": ["7", "8"]}},
    "weight": {"floatList": {"value": [0.1]}}}}}
    >>> decode_json_example(encode_json_example(record)) == record
    True
    """
    return _apply(
        lambda record: _encode_one(record, indent),
        serialized,
        _RECORD,
        "encode_json_example takes serialized Examples (bytes)",
    )


# ---------------------------------------------------------------- batches


_RECORD = (bytes, bytearray, memoryview)
_TEXT = (str, *_RECORD)


def _apply(one: Callable[[Any], Any], items: Any, types: tuple[type, ...], what: str) -> Any:
    """``one`` of ``items``, or of each of a list (nested lists kept) or ndarray, in its
    shape; an error names the item's row-major index as ``record_index``."""
    if isinstance(items, np.ndarray):
        out = np.empty(items.shape, dtype=object)
        flat = out.reshape(-1)
        for i, item in enumerate(items.reshape(-1)):
            flat[i] = _at(one, item, i, types, what)
        return out
    if isinstance(items, (list, tuple)):
        return _nested(one, items, count(), types, what)
    return _at(one, items, None, types, what)


def _nested(
    one: Callable[[Any], Any], items: Any, index: Iterator[int], types: tuple[type, ...], what: str
) -> list[Any]:
    return [
        _nested(one, item, index, types, what)
        if isinstance(item, (list, tuple))
        else _at(one, item, next(index), types, what)
        for item in items
    ]


def _at(
    one: Callable[[Any], Any], item: Any, i: int | None, types: tuple[type, ...], what: str
) -> Any:
    if not isinstance(item, types):
        where = "" if i is None else f" (item {i})"
        raise TypeError(f"{what}, not {type(item).__name__}{where}")
    try:
        return one(item)
    except ExampleDecodeError as err:
        if i is not None:
            err.record_index = i
        raise


# ---------------------------------------------------------------- JSON -> Example


class _Twice:
    """A JSON object that names one field twice (protobuf's JSON parser refuses it)."""

    def __init__(self, name: str) -> None:
        self.name = name


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Twice:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            return _Twice(name)
        seen.add(name)
    raise AssertionError("unreachable")  # pragma: no cover


def _constant(name: str) -> Any:
    raise ValueError(f'{name} is no JSON value (a float field takes the string "{name}")')


def _integer(text: str) -> int | float:
    """A JSON integer; ``-0`` as -0.0, so that a float field keeps its sign."""
    return -0.0 if text == "-0" else int(text)


def _fail(message: str, key: str | None = None) -> ExampleDecodeError:
    return ExampleDecodeError(message, key=key)


def _load(text: str | bytes | bytearray | memoryview) -> Any:
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as err:
            raise _fail(f"the JSON text is not UTF-8: {err}") from None
    try:
        return _json.loads(
            text, object_pairs_hook=_object, parse_constant=_constant, parse_int=_integer
        )
    except RecursionError:
        raise _fail("not valid JSON: nested too deeply") from None
    except ValueError as err:  # JSONDecodeError, NaN literals, integers too long to read
        raise _fail(f"not valid JSON: {err}") from None


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _show(value: Any) -> str:
    """``value`` as JSON on one line, cut short when long."""
    text = _json.dumps(value) if not isinstance(value, (dict, _Twice)) else "{...}"
    return text if len(text) <= 40 else text[:37] + "..."


def _name(key: str) -> str:
    """A feature name, quoted, on one line."""
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return _json.dumps(key)
    return _json.dumps(key, ensure_ascii=False)


def _message(value: Any, where: str, fields: Any, key: str | None = None) -> dict[str, Any]:
    """``value`` as a JSON object of the message ``where``, with no field but ``fields``."""
    if isinstance(value, _Twice):
        raise _fail(f'{where} sets the field "{value.name}" twice', key)
    if not isinstance(value, dict):
        raise _fail(f"{where} is a JSON object, not {_describe(value)}", key)
    for name in value:
        if name not in fields:
            known = ", ".join(f'"{f}"' for f in fields if "_" not in f)
            raise _fail(f'{where} has no field "{name}" (it has {known})', key)
    return value


def _decode_one(text: str | bytes | bytearray | memoryview) -> bytes:
    doc = _load(text)
    if doc is None:
        raise _fail("an Example is a JSON object, not null")
    features = _message(doc, "Example", ("features",)).get("features")
    if features is None:
        return b""  # no features field: the empty record
    feature = _message(features, "features", ("feature",)).get("feature")
    if isinstance(feature, _Twice):
        raise _fail(f"features.feature has the feature {_name(feature.name)} twice", feature.name)
    if feature is not None and not isinstance(feature, dict):
        raise _fail(f"features.feature is a JSON object, not {_describe(feature)}")
    out = {}
    for key, value in (feature or {}).items():
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            raise _fail(f"feature {_name(key)}: the name is not valid UTF-8", key) from None
        out[key] = _feature(key, value)
    return encode_example(out)


def _feature(key: str, value: Any) -> Any:
    """A Feature's value for :func:`encode_example`: a typed array (empty ones included,
    so the kind is set), or ``[]`` for a Feature with no list."""
    where = f"feature {_name(key)}"
    if value is None:
        return []
    fields = _message(value, where, _KINDS, key)
    lists = [(name, v) for name, v in fields.items() if v is not None]
    if len(lists) > 1:
        both = " and ".join(name for name, _ in lists)
        raise _fail(f"{where} sets both {both}: a Feature holds one list", key)
    if not lists:
        return []
    name, body = lists[0]
    values = _message(body, f"{where}: {name}", ("value",), key).get("value")
    if values is None:
        values = []
    if not isinstance(values, list):
        raise _fail(f"{where}: {name}.value is a JSON array, not {_describe(values)}", key)
    kind = _KINDS[name]
    convert = {"int64": _int64, "float": _float, "bytes": _bytes}[kind]
    out = []
    for i, v in enumerate(values):
        try:
            out.append(convert(v))
        except ValueError as err:
            raise _fail(f"{where}: {name}.value[{i}]: {_show(v)} {err}", key) from None
    if kind == "bytes":
        return out if out else np.array([], dtype=object)
    return np.array(out, dtype=np.int64 if kind == "int64" else np.float32)


def _int64(v: Any) -> int:
    if isinstance(v, str):
        if _INTEGER.fullmatch(v):
            if len(v) > 4000:  # past what int() reads; far past int64 anyway
                raise ValueError("is out of the int64 range")
            n = int(v)
        elif _NUMBER.fullmatch(v):
            n = _integral(float(v))
        else:
            raise ValueError("is not an integer")
    elif isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("is not an integer (int64 values are JSON integers or strings)")
    else:
        n = v if isinstance(v, int) else _integral(v)
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise ValueError("is out of the int64 range")
    return n


def _integral(x: float) -> int:
    """A number written with a fraction or exponent, read as a double (as protobuf does):
    an integer only where the double holds it exactly (within 2**53)."""
    if not math.isfinite(x) or x != math.floor(x):
        raise ValueError("is not an integer")
    if abs(x) > _EXACT_DOUBLE:
        raise ValueError("is beyond 2**53 with a fraction or exponent: write it as a plain integer")
    return int(x)


def _float(v: Any) -> float:
    if isinstance(v, str):
        special = _SPECIAL_FLOATS.get(v)
        if special is not None:
            return special
        if not _NUMBER.fullmatch(v):
            raise ValueError('is not a number (nor "NaN", "Infinity" or "-Infinity")')
        x = float(v)
    elif isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("is not a number")
    else:
        try:
            x = float(v)
        except OverflowError:
            x = math.inf
    if not math.isfinite(x) or abs(x) >= _FLOAT32_OVERFLOW:
        raise ValueError("is out of the float32 range")
    return x


def _bytes(v: Any) -> bytes:
    if not isinstance(v, str):
        raise ValueError("is not a base64 string")
    body = v.rstrip("=")
    pad = len(v) - len(body)
    if not _BASE64.fullmatch(body) or len(body) % 4 == 1 or (pad and (pad > 2 or len(v) % 4)):
        raise ValueError("is not base64")
    return base64.b64decode(body.translate(_URL_SAFE) + "=" * (-len(body) % 4))


# ---------------------------------------------------------------- Example -> JSON


def _encode_one(record: bytes | bytearray | memoryview, indent: int | None) -> str:
    return _json.dumps(_example_json(bytes(record)), indent=indent)


def _example_json(record: bytes) -> dict[str, Any]:
    features = decode_example(record)
    if not features:
        if not record:
            return {}
        if record[0] == 0x0A:
            return {"features": {}}
        why = foreign(record) or (
            f"it starts with field {record[0] >> 3} (a SequenceExample's feature_lists?), "
            "which a tf.train.Example does not have"
        )
        raise ExampleDecodeError(f"not a tf.train.Example: {why}")
    untyped = [k for k, v in features.items() if isinstance(v, list) and not v]
    empty_bytes = _empty_bytes_lists(record, untyped) if untyped else set()
    out: dict[str, Any] = {}
    for key, value in features.items():
        if isinstance(value, np.ndarray):
            kind = "int64" if value.dtype == np.int64 else "float"
            items = _ints(value) if kind == "int64" else _floats(value)
        elif value or key in empty_bytes:
            kind, items = "bytes", [base64.b64encode(b).decode("ascii") for b in value]
        else:
            out[key] = {}
            continue
        out[key] = {_JSON_NAME[kind]: {"value": items} if items else {}}
    return {"features": {"feature": out}}


def _empty_bytes_lists(record: bytes, keys: list[str]) -> set[str]:
    """Which of ``keys`` (features decoded as ``[]``) hold an empty ``bytes_list`` rather
    than no list: parsing them as float32 refuses the first and takes the second."""
    found: set[str] = set()
    rest = list(keys)
    while rest:
        try:
            parse_example(record, {k: VarLen("float32") for k in rest})
        except SchemaError as err:
            if err.key not in rest:
                raise
            found.add(err.key)
            rest.remove(err.key)
        else:
            break
    return found


def _ints(values: np.ndarray) -> list[str]:
    return [str(v) for v in values.tolist()]


def _floats(values: np.ndarray) -> list[Any]:
    out: list[Any] = []
    for x in values.tolist():
        if math.isnan(x):
            out.append("NaN")
        elif math.isinf(x):
            out.append("Infinity" if x > 0 else "-Infinity")
        else:
            out.append(_shortest(x))
    return out


def _shortest(x: float) -> float:
    """The float with the fewest significant digits (6 at least) that is the float32
    ``x``, as protobuf's ``type_checkers.ToShortestFloat`` finds it."""
    precision = 6
    while True:
        rounded = float(f"{x:.{precision}g}")
        if struct.unpack("<f", struct.pack("<f", rounded))[0] == x:
            return rounded
        precision += 1
