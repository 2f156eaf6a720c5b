"""Feature specifications, schemas, and batch parsing into NumPy."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _core
from .errors import SchemaError

__all__ = [
    "FixedLen",
    "FixedLenSequence",
    "Ragged",
    "Schema",
    "SchemaGuess",
    "VarLen",
    "parse_example",
    "parse_examples",
]

_DTYPES = {
    "int64": "int64",
    "int": "int64",
    "bool": "int64",
    "float32": "float32",
    "float": "float32",
    "bytes": "bytes",
    "string": "bytes",
    "str": "bytes",
    "bytes_": "bytes",
    "object": "bytes",
}


def _dtype_name(dtype: Any) -> str:
    """Normalizes "int64" / np.int64 / tf.int64 / "string" / bytes ... to a dtype name."""
    if dtype in (bytes, str):
        return "bytes"
    if dtype in (int, bool):
        return "int64"
    if dtype is float:
        return "float32"
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if name is None:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    if isinstance(name, str) and name.lower() in _DTYPES:
        return _DTYPES[name.lower()]
    raise ValueError(f'unsupported dtype {dtype!r}: use "int64", "float32" or "bytes"')


def _shape(shape: Any) -> tuple[int | None, ...]:
    """A shape as a tuple of ints, with ``None`` for an unknown dimension (refused later,
    when the spec joins a schema and the error can name its feature)."""
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    dims: list[int | None] = []
    for d in shape:
        d = getattr(d, "value", d)  # a TF1 Dimension
        if d is None:
            dims.append(None)
        elif isinstance(d, (int, np.integer)) and not isinstance(d, bool):
            dims.append(int(d))
        else:
            raise ValueError(f"shape {shape!r}: dimensions are ints (or None), not {d!r}")
    return tuple(dims)


def _flat_default(default: Any, dtype: str) -> tuple[Any, ...] | None:
    if default is None:
        return None
    if dtype == "bytes":
        items = np.asarray(default, dtype=object).ravel().tolist()
        return tuple(v.encode() if isinstance(v, str) else bytes(v) for v in items)
    np_type = np.int64 if dtype == "int64" else np.float32
    return tuple(np.asarray(default, dtype=np_type).ravel().tolist())


@dataclass(frozen=True)
class FixedLen:
    """A feature with exactly ``prod(shape)`` values per Example → ``[batch, *shape]``.

    ``default`` (a scalar, or ``prod(shape)`` values) fills in when the feature is missing;
    without one a missing feature is a :class:`SchemaError`.
    """

    shape: tuple[int, ...]
    dtype: str
    default: tuple[Any, ...] | None = None

    def __init__(self, shape: Any, dtype: Any, default: Any = None) -> None:
        object.__setattr__(self, "shape", _shape(shape))
        object.__setattr__(self, "dtype", _dtype_name(dtype))
        object.__setattr__(self, "default", _flat_default(default, self.dtype))

    def _check(self, key: str) -> None:
        if self.shape and self.shape[0] is None:
            raise ValueError(
                f"feature {key!r}: the first dimension of shape {self.shape} is unknown; "
                "use FixedLenSequence for a variable number of rows"
            )
        _known(key, "FixedLen", self.shape)
        n = int(np.prod(self.shape, dtype=np.int64))
        if self.default is not None and len(self.default) not in (1, n):
            raise ValueError(
                f"feature {key!r}: default has {len(self.default)} values; shape "
                f"{self.shape} needs 1 or {n}"
            )


@dataclass(frozen=True)
class VarLen:
    """A feature with any number of values → :class:`Ragged` ``(values, row_splits)``."""

    dtype: str

    def __init__(self, dtype: Any) -> None:
        object.__setattr__(self, "dtype", _dtype_name(dtype))


@dataclass(frozen=True)
class FixedLenSequence:
    """Any number of ``shape``-sized elements → ``[batch, max_rows, *shape]``, padded.

    Padding uses ``default`` (one value; zero / ``b""`` when omitted). Without
    ``allow_missing`` a missing feature is a :class:`SchemaError`.
    """

    shape: tuple[int, ...]
    dtype: str
    allow_missing: bool = False
    default: tuple[Any, ...] | None = None

    def __init__(
        self, shape: Any, dtype: Any, allow_missing: bool = False, default: Any = None
    ) -> None:
        object.__setattr__(self, "shape", _shape(shape))
        object.__setattr__(self, "dtype", _dtype_name(dtype))
        object.__setattr__(self, "allow_missing", bool(allow_missing))
        object.__setattr__(self, "default", _flat_default(default, self.dtype))

    def _check(self, key: str) -> None:
        _known(key, "FixedLenSequence", self.shape)
        if 0 in self.shape:
            raise ValueError(
                f"feature {key!r}: element shape {self.shape} has a zero dimension, so no "
                "value could fill an element"
            )
        if self.default is not None and len(self.default) != 1:
            raise ValueError(
                f"feature {key!r}: a FixedLenSequence default is one padding value, not "
                f"{len(self.default)}"
            )


def _known(key: str, kind: str, shape: tuple[int | None, ...]) -> None:
    if None in shape:
        raise ValueError(
            f"feature {key!r}: every dimension of a {kind} shape must be known, not {shape}"
        )
    if any(d < 0 for d in shape if d is not None):
        raise ValueError(f"feature {key!r}: shape {shape} has a negative dimension")


Spec = FixedLen | VarLen | FixedLenSequence
_KINDS: dict[type, str] = {FixedLen: "fixed", VarLen: "var", FixedLenSequence: "sequence"}


def _from_tf_spec(spec: Any) -> Spec:
    """Accepts tf.io.FixedLenFeature / VarLenFeature / FixedLenSequenceFeature."""
    name = type(spec).__name__
    if name == "FixedLenFeature":
        return FixedLen(spec.shape, spec.dtype, spec.default_value)
    if name == "VarLenFeature":
        return VarLen(spec.dtype)
    if name == "FixedLenSequenceFeature":
        return FixedLenSequence(spec.shape, spec.dtype, spec.allow_missing, spec.default_value)
    raise TypeError(f"a schema maps names to FixedLen, VarLen or FixedLenSequence, not {name}")


def _spec_to_dict(spec: Spec) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": _KINDS[type(spec)], "dtype": spec.dtype}
    if not isinstance(spec, VarLen):
        out["shape"] = list(spec.shape)
        default: Any = spec.default
        if default is not None and spec.dtype == "bytes":
            default = {"base64": [base64.b64encode(v).decode() for v in default]}
        elif default is not None:
            default = list(default)
        out["default"] = default
    if isinstance(spec, FixedLenSequence):
        out["allow_missing"] = spec.allow_missing
    return out


def _spec_from_dict(d: Mapping[str, Any]) -> Spec:
    default = d.get("default")
    if isinstance(default, Mapping):
        default = [base64.b64decode(v) for v in default["base64"]]
    kind = d["kind"]
    if kind == "fixed":
        return FixedLen(d["shape"], d["dtype"], default)
    if kind == "var":
        return VarLen(d["dtype"])
    if kind == "sequence":
        return FixedLenSequence(d["shape"], d["dtype"], d.get("allow_missing", False), default)
    raise ValueError(f"unknown feature kind {kind!r}")


@dataclass(frozen=True, eq=False)
class Ragged:
    """Variable-length rows: row ``i`` is ``values[row_splits[i]:row_splits[i + 1]]``."""

    values: np.ndarray
    row_splits: np.ndarray
    _lengths: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_lengths", np.diff(self.row_splits))

    def __len__(self) -> int:
        return len(self.row_splits) - 1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ragged):
            return NotImplemented
        return bool(
            np.array_equal(self.row_splits, other.row_splits)
            and np.array_equal(self.values, other.values)
        )

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, i: int) -> np.ndarray:
        n = len(self)
        row = i + n if i < 0 else i
        if not 0 <= row < n:
            raise IndexError(f"row {i} out of range for {n} rows")
        i = row
        return self.values[self.row_splits[i] : self.row_splits[i + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[i] for i in range(len(self)))

    def row_lengths(self) -> np.ndarray:
        return self._lengths

    def to_list(self) -> list[list[Any]]:
        return [row.tolist() for row in self]

    def to_dense(self, default: Any = None) -> np.ndarray:
        """Pads rows to the longest with ``default`` (zero or ``b""`` when omitted)."""
        width = int(self._lengths.max()) if len(self) else 0
        if default is None:
            default = b"" if self.values.dtype == object else 0
        out = np.full((len(self), width), default, dtype=self.values.dtype)
        for i, row in enumerate(self):
            out[i, : len(row)] = row
        return out


class Schema(Mapping[str, Spec]):
    """An ordered mapping of feature name → spec, compiled once for fast parsing.

    >>> schema = Schema({"label": FixedLen([], "int64"), "tokens": VarLen("int64")})
    >>> Schema.from_json(schema.to_json()) == schema
    True
    """

    def __init__(self, features: Mapping[str, Any]) -> None:
        specs: dict[str, Spec] = {}
        for key, spec in features.items():
            if not isinstance(key, str):
                raise TypeError(f"feature names must be str, not {type(key).__name__}")
            spec = spec if isinstance(spec, tuple(_KINDS)) else _from_tf_spec(spec)
            if not isinstance(spec, VarLen):
                spec._check(key)
            specs[key] = spec
        self._specs = specs
        self._compiled: _core.CompiledSchema | None = None

    def __getitem__(self, key: str) -> Spec:
        return self._specs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._specs) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"Schema({self._specs!r})"

    def compiled(self) -> _core.CompiledSchema:
        if self._compiled is None:
            self._compiled = _core.CompiledSchema(
                [
                    (
                        key,
                        spec.dtype,
                        _KINDS[type(spec)],
                        list(getattr(spec, "shape", ())),
                        getattr(spec, "allow_missing", False),
                        None if isinstance(spec, VarLen) else _core_default(spec),
                    )
                    for key, spec in self._specs.items()
                ]
            )
        return self._compiled

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {k: _spec_to_dict(v) for k, v in self._specs.items()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, Any]]) -> Schema:
        return cls({k: _spec_from_dict(v) for k, v in d.items()})

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text: str) -> Schema:
        return cls.from_dict(json.loads(text))


def _core_default(spec: FixedLen | FixedLenSequence) -> list[Any] | None:
    return None if spec.default is None else list(spec.default)


def _as_schema(schema: Schema | Mapping[str, Any]) -> Schema:
    return schema if isinstance(schema, Schema) else Schema(schema)


def _assemble(values: np.ndarray, shape: list[int], splits: np.ndarray | None) -> Any:
    if splits is not None:
        return Ragged(values, splits)
    return values.reshape(shape)


def parse_examples(records: Iterable[bytes], schema: Schema | Mapping[str, Any]) -> dict[str, Any]:
    """Parses a batch of serialized Examples in one native call, as ``tf.io.parse_example``.

    ``FixedLen`` → ndarray ``[batch, *shape]``; ``VarLen`` → :class:`Ragged`;
    ``FixedLenSequence`` → ndarray ``[batch, max_rows, *shape]``. int64 and float32 give
    numeric arrays, bytes give object arrays of ``bytes``. Errors name the record's index
    in the batch and the feature key.

    >>> recs = [encode_example({"x": [1, 2]}), encode_example({"x": [3, 4]})]
    >>> parse_examples(recs, {"x": FixedLen([2], "int64")})["x"]
    array([[1, 2],
           [3, 4]])
    """
    schema = _as_schema(schema)
    if not isinstance(records, (list, tuple)):
        records = list(records)
    parsed = _core.parse_examples(records, schema.compiled())
    return {key: _assemble(*p) for key, p in zip(schema, parsed, strict=True)}


def parse_example(record: bytes, schema: Schema | Mapping[str, Any]) -> dict[str, Any]:
    """Parses one serialized Example: as :func:`parse_examples` without the batch axis
    (a ``VarLen`` feature gives its values array)."""
    batch = parse_examples([record], schema)
    return {k: (v[0] if isinstance(v, (Ragged, np.ndarray)) else v) for k, v in batch.items()}


class SchemaGuess:
    """Accumulates decoded Examples and guesses their schema: a feature present in every
    Example with the same number of values is ``FixedLen`` (shape ``[]`` for one value),
    anything else ``VarLen``."""

    def __init__(self) -> None:
        self.examples = 0
        self._kinds: dict[str, str] = {}
        self._counts: dict[str, set[int]] = {}
        self._present: dict[str, int] = {}

    def add(self, example: Mapping[str, Any]) -> None:
        """Takes one Example as :func:`decode_example` returns it."""
        self.examples += 1
        for key, values in example.items():
            if isinstance(values, np.ndarray):
                kind = "int64" if values.dtype == np.int64 else "float32"
            elif values:
                kind = "bytes"
            else:
                kind = self._kinds.get(key, "")
            if kind and self._kinds.setdefault(key, kind) != kind:
                raise SchemaError(
                    f"feature {key!r} is {self._kinds[key]} in some Examples and {kind} in others",
                    key=key,
                )
            self._counts.setdefault(key, set()).add(len(values))
            self._present[key] = self._present.get(key, 0) + 1

    def schema(self) -> Schema:
        specs: dict[str, Spec] = {}
        for key, kind in self._kinds.items():
            sizes = self._counts[key]
            if self._present[key] == self.examples and len(sizes) == 1:
                (size,) = sizes
                specs[key] = FixedLen([] if size == 1 else [size], kind)
            else:
                specs[key] = VarLen(kind)
        return Schema(specs)
