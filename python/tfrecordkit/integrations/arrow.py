"""TFRecords of Examples and SequenceExamples as Apache Arrow record batches, for Polars,
DuckDB, pandas and the rest of the Arrow world.

Parsed columns become Arrow arrays without copies where the layouts agree: int64 and
float32 columns are primitive arrays over the parsed buffers, row splits are list
offsets, and bytes columns come from the parser as Arrow's binary layout (values back to
back, and their offsets) rather than as Python objects. ``RaggedFeature`` and
``SparseFeature`` columns are laid out from the columns they read, never through Python
objects per row. :mod:`tfrecordkit.schema.arrow` lists the type of each kind of feature.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

import numpy as np

from .. import _core
from ..io.options import DEFAULT_BATCH_BYTES, ReadOptions, check_count
from ..io.paths import StorageOptions
from ..io.policy import OnError
from ..io.ranges import ReadPaths
from ..io.records import _batches, _located, _open
from ..io.reports import ReadReport
from ..schema.arrow import (
    Strings,
    arrow_type,
    is_text,
    list_array,
    nest_fixed_size,
    ragged_array,
    sparse_array,
    text_features,
    values_array,
    with_strings,
)
from ..schema.features import (
    FixedLen,
    FixedLenSequence,
    RaggedFeature,
    Schema,
    SparseFeature,
    VarLen,
    _as_schema,
)
from ..schema.reading import infer_schema
from ..schema.sequence import as_sequence_schema, compiled_lists

__all__ = ["read_arrow", "read_table"]


def read_arrow(
    paths: ReadPaths,
    schema: Schema | dict[str, Any] | None = None,
    *,
    batch_size: int = 65_536,
    columns: Sequence[str] | None = None,
    strings: Strings = False,
    sequence_schema: Schema | dict[str, Any] | None = None,
    compression: str | None = "auto",
    verify: bool = True,
    on_error: OnError = "raise",
    resync: bool = False,
    max_record_bytes: int | None = None,
    report: ReadReport | None = None,
    storage_options: StorageOptions = None,
    options: ReadOptions | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    nullable: bool | Sequence[str] = False,
) -> Any:
    """The Examples of ``paths`` as a ``pyarrow.RecordBatchReader`` of up to
    ``batch_size`` rows per batch, streamed: a batch in hand, the next one read on a thread
    of its own meanwhile. A batch also ends once its records hold ``batch_bytes`` (4 MiB by
    default), so that memory stays flat and reads fast when rows are large (images,
    audio): the row count is an upper bound. With bytes features in the schema, a batch
    also ends before a record over 1 MiB, whose value is then read straight into place.

    ``schema`` is inferred from the first Examples when omitted (with the feature lists of
    SequenceExamples); ``columns`` keeps some of its features. A schema of no features
    (or ``columns=[]``) gives batches of no columns, a row per record: their count, as a
    Spark ``count()`` wants it. int64 and float32 values
    stay ``int64`` / ``float32``, bytes become ``large_binary`` (``large_string`` with
    ``strings=True``, or for the features ``strings`` names: ``strings=["caption"]``
    keeps an ``image`` column binary) at every level, and features become:

    - ``FixedLen``: the value, or nested ``fixed_size_list``\\ s of its shape;
    - ``VarLen``: ``large_list``;
    - ``FixedLenSequence``: ``large_list`` of the row's own elements (``fixed_size_list``
      of the element shape), not padded;
    - ``RaggedFeature``: a ``large_list`` per ragged dimension (``fixed_size_list`` for a
      ``UniformRowLength``), as ``tf.RaggedTensor.to_list()`` nests them;
    - ``SparseFeature``: ``struct<indices: large_list<int64>, values: large_list<T>>``,
      each Example's entries sorted by index (``indices_0``, ``indices_1`` ... for several
      dimensions); the dense shape of every row is the feature's ``size``.

    ``nullable`` names features that an Example may lack, which are null where it does
    (``True``: every ``FixedLen`` feature without a ``default``, and every ``VarLen``
    one). A ``FixedLen`` one is null where its list is empty too, where TensorFlow would
    need a ``default``; any other number of values than its shape holds is a
    :class:`~tfrecordkit.SchemaError`. A ``VarLen`` one is null only where missing (an
    empty list is ``[]``), where TensorFlow reads an empty list. With ``nullable=True``
    and no schema, a feature of one value wherever present that some of the sampled
    Examples lack is a nullable scalar column rather than a list. Nullable columns
    written from Spark, pandas, Polars or Arrow (a null is written as a missing feature)
    read back this way: ``read_arrow(p, {"age": FixedLen([], "int64")},
    nullable=["age"])``. Reading a feature as nullable costs little: it is parsed as
    the others are, its nulls noted as it goes.

    With ``sequence_schema`` the records are ``SequenceExample``\\ s: ``schema`` (may be
    None) reads their context and ``sequence_schema`` their feature lists, one column per
    list: ``FixedLenSequence`` a ``large_list`` of steps, ``VarLen`` a ``large_list`` of
    steps of ``large_list``\\ s of values, ``RaggedFeature`` a ``large_list`` of steps,
    each as above. A missing feature list has no steps.

    Errors name the file, the record and the feature. The read options
    (``compression``, ``verify``, ``on_error``, ``resync``, ``max_record_bytes``,
    ``report``, ``storage_options``, or all of them as ``options``) are those of every
    reader (see :class:`~tfrecordkit.ReadOptions`): with ``on_error="skip"`` a damaged
    record is stepped over and the batches go on.

    >>> table = read_arrow("train-*.tfrecord").read_all()  # doctest: +SKIP
    >>> polars.from_arrow(table)  # doctest: +SKIP
    """
    import pyarrow as pa

    check_count("batch_size", batch_size)
    check_count("batch_bytes", batch_bytes)
    o = ReadOptions.given(options, locals())
    # Inferred from records read as the batches will be, counted once in the report.
    read = (paths, schema, sequence_schema, columns, strings, nullable)
    context, lists, arrow_schema, optional = columns_to_read(*read, o.replace(report=None))
    names = arrow_schema.names
    kinds = {f.name: f.type for f in arrow_schema}
    reader = _open(paths, o, ahead=True)
    if not names:
        # No features read: a batch is its number of records.
        def records() -> Any:
            return reader.read_batch(batch_size, batch_bytes)

        def rows(batch: list[bytes]) -> Any:
            return pa.record_batch([pa.nulls(len(batch))], names=["rows"]).select([])

        counted = (rows(batch) for batch in _batches(records, o, reader))
        return pa.RecordBatchReader.from_batches(arrow_schema, counted)
    next_batch, arrays = _readers(pa, reader, context, lists, batch_size, batch_bytes, optional)

    def batch(parsed: Any) -> Any:
        built = dict(zip([*context, *(lists or ())], arrays(parsed), strict=True))
        out = [with_strings(pa, k, built[k], kinds[k]) for k in names]
        return pa.RecordBatch.from_arrays(out, schema=arrow_schema)

    def batches() -> Iterator[Any]:
        for parsed in _batches(next_batch, o, reader):
            yield _located(reader, batch, parsed)

    return pa.RecordBatchReader.from_batches(arrow_schema, batches())


def columns_to_read(
    paths: ReadPaths,
    schema: Schema | dict[str, Any] | None,
    sequence_schema: Schema | dict[str, Any] | None,
    columns: Sequence[str] | None,
    strings: Strings,
    nullable: bool | Sequence[str],
    options: ReadOptions,
) -> tuple[Schema, Schema | None, Any, set[str]]:
    """:func:`arrow_columns` of ``schema``, inferred from ``paths`` (read with ``options``)
    when neither it nor ``sequence_schema`` is given, and the nullable features among them
    (see :func:`nullable_features`)."""
    if schema is None and sequence_schema is None:
        schema = infer_schema(paths, nullable=nullable is True, options=options)
        sequence_schema = schema.sequence
    context, lists, arrow_schema = arrow_columns(schema, sequence_schema, columns, strings)
    return context, lists, arrow_schema, nullable_features(context, nullable)


def arrow_columns(
    schema: Schema | dict[str, Any] | None,
    sequence_schema: Schema | dict[str, Any] | None,
    columns: Sequence[str] | None,
    strings: Strings,
) -> tuple[Schema, Schema | None, Any]:
    """The context features and feature lists :func:`read_arrow` reads (``columns`` of
    them, when given), and the ``pyarrow.Schema`` of its batches."""
    import pyarrow as pa

    context = Schema({}) if schema is None else _as_schema(schema)
    lists = None if sequence_schema is None else as_sequence_schema(sequence_schema)
    names = [*context, *(lists or ())]
    if lists is not None and set(context) & set(lists):
        both = sorted(set(context) & set(lists))
        raise ValueError(f"{both} name both context features and feature lists")
    if columns is not None:
        if isinstance(columns, str):
            raise TypeError(f"columns is a list of feature names, not the str {columns!r}")
        repeated = sorted({c for c in columns if list(columns).count(c) > 1})
        if repeated:
            raise ValueError(f"columns names {repeated} more than once; a table has one of each")
        missing = [c for c in columns if c not in names]
        if missing:
            raise KeyError(f"columns {missing} are not in the schema {names}")
        names = list(columns)
        context = Schema({c: context[c] for c in names if c in context})
        lists = None if lists is None else Schema({c: lists[c] for c in names if c in lists})
    text_features(strings, names)
    if not isinstance(strings, bool):
        specs = {**context, **(lists or {})}
        numbers = [k for k in strings if getattr(specs[k], "dtype", "bytes") != "bytes"]
        if numbers:
            raise ValueError(f"strings= names {numbers}, which are not bytes features")
    kinds = {k: arrow_type(pa, s, is_text(strings, k), key=k) for k, s in context.items()}
    for k, s in (lists or {}).items():
        kinds[k] = arrow_type(pa, s, is_text(strings, k), steps=True, key=k)
    return context, lists, pa.schema([(k, kinds[k]) for k in names])


def nullable_features(context: Schema, nullable: bool | Sequence[str]) -> set[str]:
    """The features of ``nullable`` (``True``: every ``FixedLen`` one without a default,
    and every ``VarLen`` one), each checked to be one of those among the features read."""
    if isinstance(nullable, bool):
        if not nullable:
            return set()
        return {k for k, s in context.items() if _can_be_null(s)}
    if isinstance(nullable, str):
        raise TypeError(f"nullable is a list of feature names, not the str {nullable!r}")
    out = set(nullable)
    for key in out:
        if key not in context:
            raise KeyError(f"nullable names {key!r}, which is not a feature read {list(context)}")
        if not isinstance(context[key], FixedLen | VarLen):
            kind = type(context[key]).__name__
            raise ValueError(f"nullable features are FixedLen or VarLen ones; {key!r} is a {kind}")
        if getattr(context[key], "default", None) is not None:
            raise ValueError(
                f"feature {key!r} has a default, which fills in where it is missing; "
                "a nullable feature is null there instead: give one or the other"
            )
    return out


def _can_be_null(spec: Any) -> bool:
    return isinstance(spec, VarLen) or (isinstance(spec, FixedLen) and spec.default is None)


def read_table(
    paths: ReadPaths, schema: Schema | dict[str, Any] | None = None, **kwargs: Any
) -> Any:
    """:func:`read_arrow`, read whole into a ``pyarrow.Table``."""
    return read_arrow(paths, schema, **kwargs).read_all()


def _readers(
    pa: Any,
    reader: _core.RecordReader,
    context: Schema,
    lists: Schema | None,
    batch_size: int,
    batch_bytes: int,
    optional: set[str],
) -> tuple[Callable[[], Any], Callable[[Any], list[Any]]]:
    """How to read a batch, and how to make its Arrow arrays (context, then lists).

    Examples, and the context and feature lists of SequenceExamples, are read and parsed
    in one native call, each ``FixedLenSequence`` checked but not padded, and each
    ``optional`` feature null where an Example lacks it."""
    compiled = context.compiled(unpadded=True, nullable=optional)
    wanted = None if lists is None else compiled_lists(lists)

    def read_parsed() -> Any:
        return reader.read_parsed(compiled, batch_size, True, wanted, batch_bytes)

    def examples(parsed: Any) -> list[Any]:
        return _example_arrays(pa, context, parsed, optional)

    if lists is None:
        return read_parsed, examples

    def both(parsed: Any) -> list[Any]:
        context_columns, list_columns_ = parsed
        out = examples(context_columns)
        return out + _list_arrays(pa, lists, list_columns_)

    return read_parsed, both


def _example_arrays(
    pa: Any, schema: Schema, parsed: list[Any], optional: Collection[str] = frozenset()
) -> list[Any]:
    """The Arrow arrays of ``schema``'s features from a batch's ``parsed`` features (as the
    native parse lays them out, bytes as ``(data, offsets)``; the ``optional`` ones with
    which rows hold a value)."""
    out = []
    for (key, spec), p in zip(schema.items(), parsed, strict=True):
        if key in optional:
            values, _, (splits, valid) = p
            leaf = values_array(pa, values)
            if isinstance(spec, VarLen):
                array = list_array(pa, splits, leaf)
            else:
                array = nest_fixed_size(pa, leaf, spec.shape)
            out.append(with_validity(pa, array, valid))
            continue
        if isinstance(spec, SparseFeature):
            indices, values, _, row_splits = p
            by_dimension = [indices[:, 1 + d] for d in range(len(spec.index_key))]
            out.append(sparse_array(pa, spec, row_splits, by_dimension, values_array(pa, values)))
        elif isinstance(spec, RaggedFeature):
            values, levels = p
            out.append(ragged_array(pa, values_array(pa, values), levels, spec.partitions))
        else:
            values, _, splits = p
            leaf = values_array(pa, values)
            if isinstance(spec, FixedLen):
                out.append(nest_fixed_size(pa, leaf, spec.shape))
            elif isinstance(spec, VarLen):
                out.append(list_array(pa, splits, leaf))
            else:
                offsets = _element_splits(spec, splits)
                out.append(list_array(pa, offsets, nest_fixed_size(pa, leaf, spec.shape)))
    return out


def with_validity(pa: Any, array: Any, valid: np.ndarray) -> Any:
    """``array`` null in the rows where ``valid`` (bool, one per row) is false; its own
    buffers and children kept as they are."""
    if valid.all():
        return array
    # The bitmap counts from the buffers' start, as the array's offset does.
    bits = np.concatenate([np.ones(array.offset, dtype=bool), valid])
    bitmap = pa.py_buffer(np.packbits(bits, bitorder="little"))
    own = array.buffers()[1 : array.type.num_buffers]
    lists = pa.types.is_fixed_size_list(array.type) or pa.types.is_large_list(array.type)
    children = [array.values] if lists else None
    nulls = len(valid) - int(np.count_nonzero(valid))
    return pa.Array.from_buffers(
        array.type, len(array), [bitmap, *own], nulls, array.offset, children
    )


def _element_splits(spec: FixedLenSequence, splits: np.ndarray) -> np.ndarray:
    """The row splits of a ``FixedLenSequence``'s elements, from those of its values (each
    row's count a multiple of the element's, as the parse checked)."""
    stride = int(np.prod(spec.shape, dtype=np.int64))
    return splits if stride == 1 else splits // stride


def _list_arrays(pa: Any, schema: Schema, laid: list[Any]) -> list[Any]:
    """The Arrow arrays of the feature lists of ``schema``, from a batch's lists as the
    core lays them out without padding (checked step by step)."""
    out = []
    for spec, item in zip(schema.values(), laid, strict=True):
        leaf = values_array(pa, item[0])
        if isinstance(spec, RaggedFeature):
            _, steps, levels = item
            out.append(ragged_array(pa, leaf, [steps, *levels], spec.partitions))
        elif isinstance(spec, FixedLenSequence):
            _, steps = item
            out.append(list_array(pa, steps, nest_fixed_size(pa, leaf, spec.shape)))
        else:
            _, steps, step_values = item
            out.append(list_array(pa, steps, list_array(pa, step_values, leaf)))
    return out
