"""TFRecords of Examples as Apache Arrow record batches, for Polars, DuckDB, pandas and
the rest of the Arrow world.

Parsed columns become Arrow arrays without copies where the layouts agree: int64 and
float32 columns are primitive arrays over the parsed buffers, ``VarLen`` row splits are
list offsets, and bytes columns come from the parser as Arrow's binary layout (values
back to back, and their offsets) rather than as Python objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ._paths import Paths, StorageOptions
from .records import _batches, _located, _open, infer_schema
from .schema import FixedLen, Schema, VarLen, _as_schema

__all__ = ["read_arrow", "read_table"]


def read_arrow(
    paths: Paths,
    schema: Schema | dict[str, Any] | None = None,
    *,
    batch_size: int = 65_536,
    columns: Sequence[str] | None = None,
    strings: bool = False,
    compression: str | None = "auto",
    storage_options: StorageOptions = None,
) -> Any:
    """The Examples of ``paths`` as a ``pyarrow.RecordBatchReader`` of up to
    ``batch_size`` rows per batch, streamed: one batch in memory at a time.

    ``schema`` (``FixedLen`` and ``VarLen`` features) is inferred from the first Examples
    when omitted; ``columns`` keeps some of its features. int64 and float32 become
    ``int64`` / ``float32``, bytes ``large_binary`` (``large_string`` with
    ``strings=True``), a ``FixedLen`` shape nested ``fixed_size_list``\\ s, and a
    ``VarLen`` a ``large_list``.

    >>> table = read_arrow("train-*.tfrecord").read_all()  # doctest: +SKIP
    >>> polars.from_arrow(table)  # doctest: +SKIP
    """
    import pyarrow as pa

    if schema is None:
        schema = infer_schema(paths, compression=compression, storage_options=storage_options)
    schema = _as_schema(schema)
    if columns is not None:
        missing = [c for c in columns if c not in schema]
        if missing:
            raise KeyError(f"columns {missing} are not in the schema {list(schema)}")
        schema = Schema({c: schema[c] for c in columns})
    for key, spec in schema.items():
        if not isinstance(spec, (FixedLen, VarLen)):
            raise TypeError(
                f"feature {key!r}: read_arrow takes FixedLen and VarLen features, "
                f"not {type(spec).__name__}"
            )
    arrow_schema = pa.schema([(k, arrow_type(pa, s, strings)) for k, s in schema.items()])
    compiled = schema.compiled()
    reader = _open(paths, compression, True, "raise", None, False, storage_options)

    def next_batch() -> Any:
        return reader.read_parsed(compiled, batch_size, True)

    def batches() -> Iterator[Any]:
        for parsed in _batches(next_batch, "raise", reader, None):
            arrays = _located(reader, lambda p: _arrays(pa, arrow_schema, p), parsed)
            yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)

    return pa.RecordBatchReader.from_batches(arrow_schema, batches())


def read_table(paths: Paths, schema: Schema | dict[str, Any] | None = None, **kwargs: Any) -> Any:
    """:func:`read_arrow`, read whole into a ``pyarrow.Table``."""
    return read_arrow(paths, schema, **kwargs).read_all()


def arrow_type(pa: Any, spec: FixedLen | VarLen, strings: bool) -> Any:
    """The Arrow type a FixedLen or VarLen feature becomes."""
    base = {"int64": pa.int64(), "float32": pa.float32()}.get(spec.dtype)
    if base is None:
        base = pa.large_string() if strings else pa.large_binary()
    if isinstance(spec, VarLen):
        return pa.large_list(base)
    for d in reversed(spec.shape):
        base = pa.list_(base, d)
    return base


def _values(pa: Any, values: Any, value_type: Any) -> Any:
    """An Arrow array over parsed values: primitive, or binary from (data, offsets)."""
    if isinstance(values, tuple):
        data, offsets = values
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        return pa.Array.from_buffers(value_type, len(offsets) - 1, buffers)
    return pa.array(values, type=value_type)


def _arrays(pa: Any, arrow_schema: Any, parsed: list[Any]) -> list[Any]:
    out = []
    for field, (values, _, splits) in zip(arrow_schema, parsed, strict=True):
        kind = field.type
        if splits is not None:
            inner = _values(pa, values, kind.value_type)
            out.append(pa.LargeListArray.from_arrays(pa.array(np.asarray(splits)), inner))
            continue
        leaf, dims = fixed_size_dims(pa, kind)
        out.append(nest_fixed_size(pa, _values(pa, values, leaf), dims))
    return out


def fixed_size_dims(pa: Any, kind: Any) -> tuple[Any, list[int]]:
    """The leaf type of a (nested) ``fixed_size_list`` type, and its sizes, outermost first."""
    dims = []
    while pa.types.is_fixed_size_list(kind):
        dims.append(kind.list_size)
        kind = kind.value_type
    return kind, dims


def nest_fixed_size(pa: Any, array: Any, dims: list[int]) -> Any:
    """``array`` of leaf values as nested ``fixed_size_list``\\ s of ``dims``."""
    for d in reversed(dims):
        array = pa.FixedSizeListArray.from_arrays(array, d)
    return array
