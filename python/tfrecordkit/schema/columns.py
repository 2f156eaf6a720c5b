"""Tables (dicts of columns, pandas DataFrames, Arrow tables) as columns the native encoder
reads without a Python object per row.

Columns map to features by dtype: integers and bools → int64, floats → float32, bytes and
str → bytes; 2-D and higher arrays and columns of lists → lists of values per row. Nulls
(``None``, pandas NA, Arrow nulls) leave the feature out of that row.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from .. import _core
from ..io.paths import quote
from .features import FixedLen, FixedLenSequence, Schema, Spec, VarLen

__all__ = ["Table", "as_table"]

_NUMERIC = {"int64": np.int64, "float32": np.float32}


@dataclass
class Column:
    """One column as the extension reads it (see ``crates/python/src/table.rs``)."""

    # 1-D int64/float32 array, 2-D uint8 array (fixed-width bytes), 2-D uint32 array
    # (fixed-width text as code points), list[bytes], or (uint8 data, int64 value
    # offsets): bytes packed as Arrow lays them out.
    values: Any
    width: int  # values per row when offsets is None
    offsets: np.ndarray | None  # int64 row boundaries, len rows + 1
    mask: np.ndarray | None  # uint8, 0 = null
    dtype: str  # "int64", "float32" or "bytes"
    shape: tuple[int, ...] | None  # per-row shape of a fixed-size column

    def spec(self) -> Spec:
        if self.offsets is None and self.mask is None and self.shape is not None:
            return FixedLen(self.shape, self.dtype)
        return VarLen(self.dtype)

    def native(self) -> tuple[Any, int, np.ndarray | None, np.ndarray | None]:
        return (self.values, self.width, self.offsets, self.mask)


@dataclass
class Table:
    names: list[str]
    columns: list[Column]
    rows: int

    def native(self) -> _core.Table:
        """The columns, checked once, as the native writers borrow them."""
        return _core.Table(self.names, [c.native() for c in self.columns], self.rows)

    def schema(self) -> Schema:
        return Schema({n: c.spec() for n, c in zip(self.names, self.columns, strict=True)})


def _is_null(v: Any, nan: bool) -> bool:
    """Whether ``v`` is a missing value: None, pandas' NA and NaT, and NaN where ``nan``."""
    if v is None:
        return True
    if nan and isinstance(v, float) and math.isnan(v):
        return True
    # pandas' missing values exist only once pandas is imported.
    pd = sys.modules.get("pandas")
    return pd is not None and (v is pd.NA or v is pd.NaT)


def _to_bytes(name: str, v: Any) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        try:
            return v.encode()
        except UnicodeEncodeError as err:
            why = f"{err.reason}, in column {name!r}"
            raise UnicodeEncodeError(err.encoding, err.object, err.start, err.end, why) from None
    if isinstance(v, (bytearray, memoryview, np.bytes_)):
        return bytes(v)
    raise TypeError(
        f"column {name!r} mixes bytes/str with {type(v).__name__}; "
        "encode rows of mixed values with encode_example"
    )


def _numeric(name: str, arr: np.ndarray) -> tuple[np.ndarray, str]:
    kind = arr.dtype.kind
    if kind in "biu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise OverflowError(f"column {name!r} has values beyond the int64 range")
        return np.ascontiguousarray(arr, dtype=np.int64).ravel(), "int64"
    if kind == "f":
        # An Example's floats are float32: past its range a value is infinite, as
        # TensorFlow's FloatList stores it (and encode_example), without NumPy's warning.
        with np.errstate(over="ignore"):
            return np.ascontiguousarray(arr, dtype=np.float32).ravel(), "float32"
    raise TypeError(f"column {name!r}: unsupported dtype {arr.dtype}")


def _fixed(name: str, arr: np.ndarray, mask: np.ndarray | None = None) -> Column:
    """A NumPy array with one row per entry of its first axis."""
    if arr.ndim == 0:
        raise ValueError(f"column {name!r} is a scalar; columns need one entry per row")
    kind = arr.dtype.kind
    shape = tuple(arr.shape[1:])
    width = int(np.prod(shape, dtype=np.int64))
    if kind in "biuf":
        values, dtype = _numeric(name, arr)
        return Column(values, width, None, mask, dtype, shape)
    if kind == "S" and arr.ndim == 1 and arr.dtype.itemsize:
        # Fixed-width bytes travel as rows of uint8, without a Python object per value.
        rows = np.ascontiguousarray(arr).view(np.uint8).reshape(len(arr), arr.dtype.itemsize)
        return Column(rows, 1, None, mask, "bytes", ())
    if kind == "U" and arr.ndim == 1 and arr.dtype.itemsize and arr.dtype.isnative:
        # Fixed-width text travels as rows of UCS-4 code points, encoded to UTF-8 natively.
        width = arr.dtype.itemsize // 4
        rows = np.ascontiguousarray(arr).view(np.uint32).reshape(len(arr), width)
        return Column(rows, 1, None, mask, "bytes", ())
    if kind in "SU" and arr.ndim == 1:
        return Column([_to_bytes(name, v) for v in arr.tolist()], 1, None, mask, "bytes", ())
    if kind == "O" and arr.ndim == 1:
        return _objects(name, arr.tolist())
    raise TypeError(
        f"column {name!r}: expected numbers, bytes/str, or lists of them, "
        f"not a {arr.dtype} array of shape {arr.shape}"
    )


def _objects(name: str, items: Sequence[Any], nan_is_null: bool = False) -> Column:
    """A column of Python objects: scalars, bytes/str, or lists per row; None is null. A
    NaN among numbers is a value, unless ``nan_is_null`` (a pandas column, as pandas means
    it); among str or bytes it can only mark a missing value, and is null."""
    first = next((v for v in items if not _is_null(v, nan=True)), None)
    scalars = isinstance(first, (str, bytes, int, float))
    nan_is_null = nan_is_null or isinstance(first, (str, bytes, bytearray, np.bytes_))
    if scalars or isinstance(first, (list, tuple)):
        arrow = _arrow_array(items, scalars, nan_is_null)
        if arrow is not None:
            return _arrow_column(name, arrow)
    nulls = [_is_null(v, nan_is_null) for v in items]
    mask = None if not any(nulls) else np.array([not x for x in nulls], dtype=np.uint8)
    present = [v for v, null in zip(items, nulls, strict=True) if not null]
    if not present:
        # Nothing but nulls: an int64 column that leaves every row's feature out.
        return Column(np.zeros(len(items), np.int64), 1, None, mask, "int64", None)
    first = present[0]
    if isinstance(first, (bytes, str, bytearray, np.bytes_)):
        values = [b"" if null else _to_bytes(name, v) for v, null in zip(items, nulls, strict=True)]
        return Column(values, 1, None, mask, "bytes", () if mask is None else None)
    if isinstance(first, (list, tuple, np.ndarray)):
        return _lists(name, items, nulls, mask)
    filled = [0 if null else v for v, null in zip(items, nulls, strict=True)]
    try:
        arr = np.asarray(filled)
    except (TypeError, ValueError) as err:
        raise TypeError(f"column {name!r}: cannot store these values: {err}") from None
    _refuse_ints_beyond_int64(name, filled, arr)
    if arr.dtype.kind not in "biuf":
        numbers = (bool, int, float, np.bool_, np.integer, np.floating)
        odd = next(v for v in present if not isinstance(v, numbers))
        what = f"{type(odd).__name__} values such as {quote(repr(odd), 40)}"
        if isinstance(first, numbers):
            raise TypeError(f"column {name!r} mixes numbers with {what}")
        raise TypeError(
            f"column {name!r} holds {what}, which no feature holds: features hold numbers "
            "(int64, float32) or bytes and str; convert the column first"
        )
    col = _fixed(name, arr, mask)
    col.shape = () if mask is None else None
    return col


def _arrow_array(items: Sequence[Any], scalars: bool, nan_is_null: bool) -> Any | None:
    """Python values as one Arrow array, built without a Python object per value: all str,
    all bytes or all numbers (``scalars``; None and pandas' NA as nulls, and NaN where
    ``nan_is_null``), or lists of numbers, bools, str or bytes (None as a null row). None
    when pyarrow is not installed or the values are anything else, which the per-value
    path then takes."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    try:
        # A NaN in a list is a value; only a pandas column of scalars takes NaN as a null.
        arrow = pa.array(items, from_pandas=scalars and nan_is_null)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    t = arrow.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        t = t.value_type
    elif not scalars:
        return None
    plain = (
        pa.types.is_string,
        pa.types.is_binary,
        pa.types.is_large_string,
        pa.types.is_large_binary,
        pa.types.is_integer,
        pa.types.is_floating,
        pa.types.is_boolean,
    )
    if any(is_type(t) for is_type in plain) and not pa.types.is_float16(t):
        return arrow
    return None


def _lists(name: str, items: Sequence[Any], nulls: list[bool], mask: np.ndarray | None) -> Column:
    rows = [() if null else v for v, null in zip(items, nulls, strict=True)]
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = [x for r in rows for x in (r.tolist() if isinstance(r, np.ndarray) else r)]
    if flat and isinstance(flat[0], (bytes, str, bytearray, np.bytes_)):
        return Column([_to_bytes(name, x) for x in flat], 0, offsets, mask, "bytes", None)
    try:
        arr = np.asarray(flat) if flat else np.zeros(0, dtype=np.int64)
    except ValueError:  # lists of lists of different lengths
        _refuse_nested(name, rows)
    _refuse_ints_beyond_int64(name, flat, arr)
    if arr.ndim != 1:
        _refuse_nested(name, rows)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"column {name!r}: list items must be numbers or bytes/str")
    values, dtype = _numeric(name, arr)
    return Column(values, 0, offsets, mask, dtype, None)


def _refuse_nested(name: str, rows: list[Any]) -> NoReturn:
    """Raises for the first row that holds lists in its list."""
    row = next(
        i
        for i, r in enumerate(rows)
        if (isinstance(r, np.ndarray) and r.ndim > 1)
        or any(isinstance(x, (list, tuple, np.ndarray)) for x in r)
    )
    raise TypeError(
        f"column {name!r}: row {row} holds lists in its list; a feature holds one flat "
        "list of values per row (a column given as one NumPy array of shape [rows, ...] "
        "is flattened row by row)"
    )


def _refuse_ints_beyond_int64(name: str, values: list[Any], arr: np.ndarray) -> None:
    """Python ints that NumPy could only hold as floats or objects (one beyond the int64
    range among them) are refused, as ``encode_example`` refuses them, rather than
    rounded to floats."""
    integers = (int, np.integer)
    if arr.dtype.kind in "fO" and values and all(isinstance(v, integers) for v in values):
        raise OverflowError(f"column {name!r} has integers beyond the int64 range")


def _arrow_column(name: str, arr: Any) -> Column:
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):  # categories: their values, as pandas' are
        arr = arr.dictionary_decode()
    mask = None
    if arr.null_count:
        mask = np.logical_not(arr.is_null().to_numpy(zero_copy_only=False)).astype(np.uint8)
    t = arr.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = arr.offsets.to_numpy().astype(np.int64)
        offsets = offsets - offsets[0]
        inner = _arrow_column(name, arr.flatten())
        if inner.offsets is not None or inner.mask is not None:
            raise TypeError(f"column {name!r}: nested lists and null list items are not supported")
        return Column(inner.values, 0, offsets, mask, inner.dtype, None)
    if pa.types.is_fixed_size_list(t):
        inner = _arrow_column(name, arr.flatten())
        if inner.offsets is not None or inner.mask is not None:
            raise TypeError(f"column {name!r}: variable or null items in a fixed-size list")
        shape = (t.list_size, *(inner.shape or ()))
        return Column(inner.values, t.list_size * inner.width, None, mask, inner.dtype, shape)
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return Column(_packed(arr, np.int32), 1, None, mask, "bytes", ())
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return Column(_packed(arr, np.int64), 1, None, mask, "bytes", ())
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        if pa.types.is_boolean(t):
            arr = arr.cast(pa.int8())
        np_values = arr.fill_null(0).to_numpy(zero_copy_only=False)
        values, dtype = _numeric(name, np_values)
        return Column(values, 1, None, mask, dtype, ())
    raise TypeError(f"column {name!r}: unsupported Arrow type {t}")


def _packed(arr: Any, offset_type: type) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow binary or string array's values as the native encoder reads them, without
    a Python object per value: its data buffer (not copied) and its value offsets."""
    _, offsets, data = arr.buffers()
    if offsets is None or len(arr) == 0:
        return np.zeros(0, np.uint8), np.zeros(1, np.int64)
    ends = np.frombuffer(offsets, dtype=offset_type)[arr.offset : arr.offset + len(arr) + 1]
    values = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, dtype=np.uint8)
    return values, ends.astype(np.int64)


def _pandas_column(name: str, series: Any) -> Column:
    import pandas as pd

    if isinstance(series.dtype, (pd.StringDtype, pd.ArrowDtype)):
        # Strings (pandas' default from 3.0) and Arrow-typed columns are Arrow arrays
        # already, or turn into one without a Python object per value.
        try:
            import pyarrow as pa
        except ImportError:  # pragma: no cover - strings stored as Python objects
            pass
        else:
            return _arrow_column(name, pa.array(series))
    na = series.isna().to_numpy()
    mask = None if not na.any() else np.logical_not(na).astype(np.uint8)
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        values = series.to_numpy()
        if mask is not None:
            values = np.where(na, 0, values)
        col = _fixed(name, values, mask)
        return col
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype):
        return _fixed(name, series.to_numpy(dtype=np.int64, na_value=0), mask)
    if pd.api.types.is_float_dtype(dtype):
        return _fixed(name, series.to_numpy(dtype=np.float64, na_value=0.0), mask)
    return _objects(name, series.tolist(), nan_is_null=True)


def _check_whole(name: str, values: np.ndarray) -> None:
    """Floats going into an int64 feature: whole numbers in its range, never truncated."""
    whole = np.isfinite(values) & (values == np.floor(values)) & (np.abs(values) < 2.0**63)
    if not whole.all():
        i = int(np.flatnonzero(~whole)[0])
        raise ValueError(
            f"column {name!r} holds {float(values[i])!r}, which is not an int64; the schema "
            "says int64"
        )


def _override(name: str, col: Column, spec: Spec) -> Column:
    """Applies an explicit schema entry's dtype (and shape) to an inferred column."""
    if spec.dtype != col.dtype:
        if spec.dtype == "bytes" or col.dtype == "bytes":
            raise TypeError(
                f"column {name!r} holds {col.dtype} values; the schema says {spec.dtype}"
            )
        if spec.dtype == "int64":
            _check_whole(name, col.values)
        col.values = np.ascontiguousarray(col.values, dtype=_NUMERIC[spec.dtype])
        col.dtype = spec.dtype
    if isinstance(spec, FixedLen):
        n = int(np.prod(spec.shape, dtype=np.int64))
        if col.offsets is not None or col.width != n:
            raise ValueError(f"column {name!r} does not have {n} values in every row")
        col.shape = spec.shape
    elif isinstance(spec, (VarLen, FixedLenSequence)):
        col.shape = None
    return col


def as_table(data: Any, schema: Mapping[str, Any] | None = None) -> Table:
    """Reads a dict of columns, a pandas DataFrame or an Arrow table/record batch."""
    module = type(data).__module__
    if module.startswith("pyarrow"):
        items = [(n, data.column(i)) for i, n in enumerate(data.column_names)]
        convert = _arrow_column
    elif module.startswith("pandas"):
        items = list(data.items())
        convert = _pandas_column
    elif isinstance(data, Mapping) or callable(getattr(data, "items", None)):
        items = list(data.items())

        def convert(name: str, col: Any) -> Column:
            # An Arrow, pandas or Polars column keeps its type and its nulls, as in a frame.
            kind = type(col).__module__
            if kind.startswith("pyarrow"):
                return _arrow_column(name, col)
            if kind.startswith("pandas"):
                return _pandas_column(name, col)
            if kind.startswith("polars"):
                return _arrow_column(name, col.to_arrow())
            if isinstance(col, np.ndarray):
                return _fixed(name, col)
            if isinstance(col, (list, tuple)):
                return _objects(name, col) if col else _fixed(name, np.zeros(0, np.int64))
            return _fixed(name, np.asarray(col))

    else:
        raise TypeError(
            f"expected a dict of columns, a DataFrame or an Arrow table, not {type(data).__name__}"
        )
    specs = Schema(schema) if schema is not None else None
    names: list[str] = []
    columns: list[Column] = []
    rows: int | None = None
    for name, raw in items:
        if not isinstance(name, str):
            raise TypeError(f"column names must be str, not {type(name).__name__}")
        if name in names:
            raise ValueError(f"column {name!r} appears twice: an Example has one feature of a name")
        col = convert(name, raw)
        n = len(raw) if not hasattr(raw, "shape") or raw.shape else 0
        if rows is None:
            rows = n
        elif n != rows:
            raise ValueError(f"column {name!r} has {n} rows but an earlier column has {rows}")
        if specs is not None and name in specs:
            col = _override(name, col, specs[name])
        names.append(name)
        columns.append(col)
    if specs is not None:
        missing = [k for k in specs if k not in names]
        if missing:
            raise ValueError(f"the schema names columns the data lacks: {missing}")
    if rows is None:  # no columns: a frame still has rows, each an empty Example
        rows = len(data) if module.startswith(("pandas", "pyarrow")) else 0
    return Table(names, columns, rows)
