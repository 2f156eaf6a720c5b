"""Feature specifications, schemas, and batch parsing into NumPy."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .. import _core
from ..errors import SchemaError, type_phrase
from .values import Ragged, Sparse

__all__ = [
    "FixedLen",
    "FixedLenSequence",
    "Ragged",
    "RaggedFeature",
    "Schema",
    "Sparse",
    "SparseFeature",
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
            raise SchemaError(f"shape {shape!r}: dimensions are ints (or None), not {d!r}")
    return tuple(dims)


def _flat_default(default: Any, dtype: str) -> tuple[Any, ...] | None:
    if default is None:
        return None
    if dtype == "bytes":
        items = np.asarray(default, dtype=object).ravel().tolist()
        for v in items:
            if not isinstance(v, (str, bytes, bytearray, memoryview)):
                raise SchemaError(f"a bytes default holds bytes or str, not {type(v).__name__}")
        return tuple(v.encode() if isinstance(v, str) else bytes(v) for v in items)
    np_type = np.int64 if dtype == "int64" else np.float32
    if dtype == "int64" and np.asarray(default).dtype.kind in "fc":
        # As TensorFlow, which will not convert a float default to int64.
        raise SchemaError(f"an int64 default holds ints, not floats: {default!r:.40}")
    try:
        with np.errstate(over="raise"):
            return tuple(np.asarray(default, dtype=np_type).ravel().tolist())
    except (FloatingPointError, OverflowError):
        raise SchemaError(f"a default of {default!r:.40} is out of the {dtype} range") from None


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
            raise SchemaError(
                f"feature {key!r}: the first dimension of shape {self.shape} is unknown; "
                "use FixedLenSequence for a variable number of rows"
            )
        _known(key, "FixedLen", self.shape)
        n = math.prod(self.shape)
        if self.default is not None and len(self.default) not in (1, n):
            raise SchemaError(
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
            raise SchemaError(
                f"feature {key!r}: element shape {self.shape} has a zero dimension, so no "
                "value could fill an element"
            )
        if self.default is not None and len(self.default) != 1:
            raise SchemaError(
                f"feature {key!r}: a FixedLenSequence default is one padding value, not "
                f"{len(self.default)}"
            )


#: The most values a shape may hold per Example: what a serialized Example (under 2 GiB,
#: as protobuf allows) could hold at most. Larger shapes are refused when a schema is
#: built, so that no claim of a schema (a manifest's, say) sizes an allocation.
MAX_VALUES = 2**31 - 1


def _known(key: str, kind: str, shape: tuple[int | None, ...]) -> None:
    if None in shape:
        raise SchemaError(
            f"feature {key!r}: every dimension of a {kind} shape must be known, not {shape}",
            key=key,
        )
    if any(d < 0 for d in shape if d is not None):
        raise SchemaError(f"feature {key!r}: shape {shape} has a negative dimension", key=key)
    n = 1
    for d in shape:
        n *= d or 1
    if n > MAX_VALUES:
        raise SchemaError(
            f"feature {key!r}: shape {shape} holds {n:,} values per Example, more than the "
            f"{MAX_VALUES:,} an Example can hold",
            key=key,
        )


@dataclass(frozen=True)
class SparseFeature:
    """A sparse tensor kept in separate features, as ``tf.io.SparseFeature``: the indices
    of each value in ``index_key`` (one key per dimension) and the values in ``value_key``
    → :class:`Sparse` of dense shape ``[batch, *size]``.

    Entries are sorted by index within each Example unless ``already_sorted``. Each Example
    needs as many indices in every dimension as values, or parsing raises
    :class:`SchemaError`; indices are taken as they are, as ``tf.io`` takes them (an index
    outside ``size`` makes :meth:`Sparse.to_dense` raise).

    >>> spec = SparseFeature("idx", "val", "float32", size=10)
    >>> parsed = parse_example(encode_example({"idx": [3, 1], "val": [0.5, 2.0]}), {"s": spec})
    >>> parsed["s"].to_dense().tolist()
    [0.0, 2.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    """

    index_key: tuple[str, ...]
    value_key: str
    dtype: str
    size: tuple[int, ...]
    already_sorted: bool = False

    def __init__(
        self,
        index_key: str | Iterable[str],
        value_key: str,
        dtype: Any,
        size: int | Iterable[int],
        already_sorted: bool = False,
    ) -> None:
        keys = (index_key,) if isinstance(index_key, str) else tuple(index_key)
        object.__setattr__(self, "index_key", keys)
        object.__setattr__(self, "value_key", value_key)
        object.__setattr__(self, "dtype", _dtype_name(dtype))
        object.__setattr__(self, "size", _shape(size))
        object.__setattr__(self, "already_sorted", bool(already_sorted))

    def _check(self, key: str) -> None:
        if not self.index_key or not all(isinstance(k, str) and k for k in self.index_key):
            raise SchemaError(f"feature {key!r}: a SparseFeature needs index keys")
        if not isinstance(self.value_key, str) or not self.value_key:
            raise SchemaError(f"feature {key!r}: a SparseFeature needs a value key")
        if len(self.size) != len(self.index_key):
            raise SchemaError(
                f"feature {key!r}: {len(self.index_key)} index keys need as many sizes, "
                f"not {self.size}"
            )
        _known(key, "SparseFeature size", self.size)


class RowSplits(NamedTuple):
    """A ragged partition: the row splits of each Example's values, in feature ``key``."""

    key: str


class RowLengths(NamedTuple):
    """A ragged partition: the length of each row, in feature ``key``."""

    key: str


class RowStarts(NamedTuple):
    """A ragged partition: where each row starts, in feature ``key``."""

    key: str


class RowLimits(NamedTuple):
    """A ragged partition: where each row ends, in feature ``key``."""

    key: str


class ValueRowIds(NamedTuple):
    """A ragged partition: the row of each value, in feature ``key``."""

    key: str


class UniformRowLength(NamedTuple):
    """A ragged partition: rows of ``length`` values each."""

    length: int


Partition = RowSplits | RowLengths | RowStarts | RowLimits | ValueRowIds | UniformRowLength
_PARTITION_KINDS: dict[Any, str] = {
    RowSplits: "row_splits",
    RowLengths: "row_lengths",
    RowStarts: "row_starts",
    RowLimits: "row_limits",
    ValueRowIds: "value_rowids",
    UniformRowLength: "uniform_row_length",
}
_PARTITIONS: dict[str, Any] = {kind.__name__: kind for kind in _PARTITION_KINDS}


def _partition(p: Any) -> Partition:
    """One of ours, from ours or from ``tf.io.RaggedFeature.RowLengths(...)`` and the rest."""
    kind = _PARTITIONS.get(type(p).__name__)
    if kind is None:
        raise TypeError(f"a ragged partition is RaggedFeature.RowSplits(...) etc., not {p!r}")
    if kind is UniformRowLength:
        return UniformRowLength(int(p.length))
    return kind(p.key)


@dataclass(frozen=True)
class RaggedFeature:
    """A ragged tensor, as ``tf.io.RaggedFeature``: the values of ``value_key`` (the
    feature's own name when omitted), split into nested rows by ``partitions``, outermost
    first, each read from its own feature (or a ``UniformRowLength``) → :class:`Ragged`
    with one ragged dimension per partition after the batch.

    ``partitions`` are ``RaggedFeature.RowSplits(key)``, ``RowLengths(key)``,
    ``RowStarts(key)``, ``RowLimits(key)``, ``ValueRowIds(key)`` and
    ``UniformRowLength(n)``. Every Example's partitions are checked: ones that do not
    partition its values raise :class:`SchemaError`.

    >>> spec = RaggedFeature("int64", "v", partitions=[RaggedFeature.RowLengths("lens")])
    >>> record = encode_example({"v": [1, 2, 3], "lens": [2, 0, 1]})
    >>> parse_example(record, {"r": spec})["r"].to_list()
    [[1, 2], [], [3]]
    """

    RowSplits = RowSplits
    RowLengths = RowLengths
    RowStarts = RowStarts
    RowLimits = RowLimits
    ValueRowIds = ValueRowIds
    UniformRowLength = UniformRowLength

    dtype: str
    value_key: str | None = None
    partitions: tuple[Partition, ...] = ()
    row_splits_dtype: str = "int64"

    def __init__(
        self,
        dtype: Any,
        value_key: str | None = None,
        partitions: Iterable[Any] = (),
        row_splits_dtype: Any = "int64",
    ) -> None:
        object.__setattr__(self, "dtype", _dtype_name(dtype))
        object.__setattr__(self, "value_key", value_key)
        object.__setattr__(self, "partitions", tuple(_partition(p) for p in partitions))
        splits = getattr(row_splits_dtype, "name", row_splits_dtype)
        if splits not in ("int32", "int64"):
            raise SchemaError(f"row_splits_dtype must be int32 or int64, not {row_splits_dtype!r}")
        object.__setattr__(self, "row_splits_dtype", splits)

    def _check(self, key: str) -> None:
        if self.value_key is not None and (
            not isinstance(self.value_key, str) or not self.value_key
        ):
            raise SchemaError(f"feature {key!r}: value_key must be a non-empty string")
        for p in self.partitions:
            if isinstance(p, UniformRowLength):
                if not 0 < p.length <= MAX_VALUES:
                    raise SchemaError(
                        f"feature {key!r}: UniformRowLength must be in [1, {MAX_VALUES}]", key=key
                    )
            elif not isinstance(p.key, str) or not p.key:
                raise SchemaError(f"feature {key!r}: a partition's key is a non-empty string")


Spec = FixedLen | VarLen | FixedLenSequence | SparseFeature | RaggedFeature
_KINDS: dict[type, str] = {
    FixedLen: "fixed",
    VarLen: "var",
    FixedLenSequence: "sequence",
    SparseFeature: "sparse",
    RaggedFeature: "ragged",
}
_COMPOSITE = (SparseFeature, RaggedFeature)


def _from_tf_spec(spec: Any) -> Spec:
    """Accepts tf.io.FixedLenFeature / VarLenFeature / FixedLenSequenceFeature."""
    name = type(spec).__name__
    if name == "FixedLenFeature":
        return FixedLen(spec.shape, spec.dtype, spec.default_value)
    if name == "VarLenFeature":
        return VarLen(spec.dtype)
    if name == "FixedLenSequenceFeature":
        return FixedLenSequence(spec.shape, spec.dtype, spec.allow_missing, spec.default_value)
    if name == "SparseFeature":
        return SparseFeature(
            spec.index_key, spec.value_key, spec.dtype, spec.size, spec.already_sorted
        )
    if name == "RaggedFeature":
        return RaggedFeature(spec.dtype, spec.value_key, spec.partitions, spec.row_splits_dtype)
    raise TypeError(
        "a schema maps names to FixedLen, VarLen, FixedLenSequence, SparseFeature or "
        f"RaggedFeature, not {name}"
    )


def _spec_to_dict(spec: Spec) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": _KINDS[type(spec)], "dtype": spec.dtype}
    if isinstance(spec, SparseFeature):
        out |= {
            "index_key": list(spec.index_key),
            "value_key": spec.value_key,
            "size": list(spec.size),
            "already_sorted": spec.already_sorted,
        }
        return out
    if isinstance(spec, RaggedFeature):
        parts = [{"kind": type(p).__name__, **p._asdict()} for p in spec.partitions]
        out |= {
            "value_key": spec.value_key,
            "partitions": parts,
            "row_splits_dtype": spec.row_splits_dtype,
        }
        return out
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
    if kind == "sparse":
        return SparseFeature(
            d["index_key"], d["value_key"], d["dtype"], d["size"], d.get("already_sorted", False)
        )
    if kind == "ragged":
        parts = [
            _PARTITIONS[p["kind"]](**{k: v for k, v in p.items() if k != "kind"})
            for p in d.get("partitions", [])
        ]
        return RaggedFeature(
            d["dtype"], d.get("value_key"), parts, d.get("row_splits_dtype", "int64")
        )
    raise ValueError(f"unknown feature kind {kind!r}")


class Schema(Mapping[str, Spec]):
    """An ordered mapping of feature name → spec, compiled once for fast parsing.

    >>> schema = Schema({"label": FixedLen([], "int64"), "tokens": VarLen("int64")})
    >>> Schema.from_json(schema.to_json()) == schema
    True
    """

    def __init__(self, features: Mapping[str, Any]) -> None:
        if not isinstance(features, Mapping):
            raise TypeError(
                "a schema is a mapping of feature names to specs ({'x': FixedLen([], "
                f"'int64')}}), not {type(features).__name__}"
            )
        specs: dict[str, Spec] = {}
        for key, spec in features.items():
            if not isinstance(key, str):
                raise TypeError(f"feature names must be str, not {type(key).__name__}")
            spec = spec if isinstance(spec, tuple(_KINDS)) else _from_tf_spec(spec)
            if not isinstance(spec, VarLen):
                spec._check(key)
            specs[key] = spec
        self._specs = specs
        self._columns = _columns(specs)
        # Every feature is its own parsed column: outputs need no assembly.
        self._plain = not any(isinstance(spec, _COMPOSITE) for spec in specs.values())
        self._compiled: _core.CompiledSchema | None = None
        #: The feature lists' schema, when this is the context of SequenceExamples.
        self.sequence: Schema | None = None

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

    def __getstate__(self) -> dict[str, Any]:
        # The native parser is rebuilt where the schema lands (another process, say).
        return {**self.__dict__, "_compiled": None}

    def compiled(
        self, *, unpadded: bool = False, nullable: Collection[str] = ()
    ) -> _core.CompiledSchema:
        """The native schema: the columns parsed from each Example (one per feature, and
        one per key a ``SparseFeature`` or ``RaggedFeature`` reads), and how each feature
        is made from them, so that one native call parses and lays out a batch. With
        ``unpadded``, each ``FixedLenSequence`` comes out as a ``VarLen`` does (values and
        row splits), checked as ever but not padded, as Arrow's lists want it. The
        ``FixedLen`` and ``VarLen`` features ``nullable`` names (none with a default) are
        null where an Example lacks them (a ``FixedLen`` one also where its list is
        empty, its values zeros there): the third part of each is ``(row_splits or None,
        valid)``, ``valid`` a bool array of the rows that hold a value. :meth:`outputs`
        makes a nullable ``FixedLen`` a ``numpy.ma.MaskedArray``; a nullable ``VarLen``
        has no NumPy form (Arrow's lists can be null: see ``read_arrow``)."""
        if unpadded or nullable:
            return self._compile(unpadded, sorted(nullable))
        if self._compiled is None:
            self._compiled = self._compile()
        return self._compiled

    def _compile(
        self, unpadded: bool = False, nullable: Sequence[str] = ()
    ) -> _core.CompiledSchema:
        features = None if self._plain else list(self._specs.items())
        columns = list(self._columns.items())
        return _core.CompiledSchema(columns, features, unpadded, list(nullable))

    def column_keys(self) -> list[str]:
        """The keys of the parsed columns, in the order :meth:`compiled` parses them."""
        return list(self._columns)

    def outputs(self, parsed: list[Any]) -> dict[str, Any]:
        """The features of a parsed batch, as the native parse of :meth:`compiled` gives
        them (one entry per feature): arrays, :class:`Ragged` and :class:`Sparse`."""
        return self.compiled().outputs(parsed)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Each feature's spec as plain data, which :meth:`from_dict` reads back."""
        return {k: _spec_to_dict(v) for k, v in self._specs.items()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, Any]]) -> Schema:
        """A schema from its JSON form (:meth:`to_dict`); anything malformed is a
        :class:`SchemaError` naming the feature."""
        if not isinstance(d, Mapping):
            raise SchemaError(f"a schema is a JSON object, not {type(d).__name__}")
        specs: dict[str, Spec] = {}
        for key, spec in d.items():
            if not isinstance(key, str):
                raise SchemaError(f"feature names are strings, not {type(key).__name__}")
            try:
                specs[key] = _spec_from_dict(spec)
            except SchemaError as err:
                if err.key is not None:
                    raise
                raise SchemaError(f"feature {key!r}: {err.message}", key=key) from None
            except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as err:
                why = str(err) if type(err) is ValueError else f"{type(err).__name__}: {err}"
                raise SchemaError(
                    f"feature {key!r}: not a feature spec ({why[:200]})", key=key
                ) from None
        return cls(specs)

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON (``kwargs`` go to ``json.dumps``), as ``schema.json``
        files hold it; :meth:`from_json` reads it back."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text: str | bytes) -> Schema:
        """A schema from :meth:`to_json`'s text; text that is not JSON is a
        :class:`SchemaError`."""
        try:
            d = json.loads(text)
        except (ValueError, RecursionError) as err:
            raise SchemaError(f"a schema is JSON, and this is not ({type(err).__name__})") from None
        return cls.from_dict(d)


def _columns(specs: Mapping[str, Spec]) -> dict[str, Spec]:
    """The columns to parse for ``specs``: each plain feature, and a ``VarLen`` for each key
    a composite feature reads. A key read twice must be read the same way."""
    columns: dict[str, Spec] = {}
    owner: dict[str, str] = {}

    def add(key: str, spec: Spec, by: str) -> None:
        have = columns.get(key)
        if have is not None and have != spec:
            raise SchemaError(
                f"feature {by!r} reads {key!r} as {spec}, but {owner[key]!r} reads it as {have}"
            )
        columns[key] = spec
        owner.setdefault(key, by)

    for key, spec in specs.items():
        if isinstance(spec, SparseFeature):
            for index_key in spec.index_key:
                add(index_key, VarLen("int64"), key)
            add(spec.value_key, VarLen(spec.dtype), key)
        elif isinstance(spec, RaggedFeature):
            add(spec.value_key or key, VarLen(spec.dtype), key)
            for p in spec.partitions:
                if not isinstance(p, UniformRowLength):
                    add(p.key, VarLen("int64"), key)
        else:
            add(key, spec, key)
    return columns


def _as_schema(schema: Schema | Mapping[str, Any]) -> Schema:
    return schema if isinstance(schema, Schema) else Schema(schema)


def parsing_schema(schema: Schema | Mapping[str, Any], who: str) -> Schema:
    """``schema`` as a :class:`Schema` to parse Examples with; one that names no features
    is refused, as ``tf.io.parse_example`` refuses it: ``who`` would parse nothing."""
    schema = _as_schema(schema)
    if not len(schema):
        raise ValueError(
            f"the schema names no features, so {who} would parse nothing: name the features "
            "to read (tfrecordkit.infer_schema(paths) guesses them)"
        )
    return schema


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
    schema = parsing_schema(schema, "parse_examples()")
    if isinstance(records, (bytes, bytearray, memoryview, str)):
        raise TypeError(
            f"records is one {type(records).__name__}: parse_examples takes a list of "
            "serialized Examples, parse_example one"
        )
    if not isinstance(records, (list, tuple)):
        records = list(records)
    try:
        parsed = _core.parse_examples(records, schema.compiled())
    except TypeError:
        kinds = (bytes, bytearray, memoryview)
        bad = next((i for i, r in enumerate(records) if not isinstance(r, kinds)), None)
        if bad is None:
            raise
        raise TypeError(
            f"record {bad} is {type_phrase(records[bad])}, not bytes: Examples are "
            "parsed from their serialized bytes"
        ) from None
    return schema.outputs(parsed)


def parse_example(record: bytes, schema: Schema | Mapping[str, Any]) -> dict[str, Any]:
    """Parses one serialized Example: as :func:`parse_examples` without the batch axis
    (a ``VarLen`` feature gives its values array)."""
    if isinstance(record, (list, tuple)):
        raise TypeError(
            f"the record is a {type(record).__name__}: parse_example parses one serialized "
            "Example, parse_examples a batch of them (as tf.io.parse_example does)"
        )
    if not isinstance(record, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"the record is {type_phrase(record)}, not bytes: an Example is parsed "
            "from its serialized bytes"
        )
    batch = parse_examples([record], parsing_schema(schema, "parse_example()"))
    return {
        k: (v[0] if isinstance(v, (Ragged, Sparse, np.ndarray)) else v) for k, v in batch.items()
    }
