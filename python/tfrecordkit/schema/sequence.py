"""SequenceExamples parsed with schemas, as ``tf.io.parse_sequence_example`` parses them:
the context with an Example schema, the feature lists with a sequence schema of
``FixedLenSequence``, ``VarLen`` and ``RaggedFeature`` specs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .. import _core
from ..errors import SchemaError
from .features import (
    _PARTITION_KINDS,
    FixedLenSequence,
    RaggedFeature,
    Schema,
    Spec,
    UniformRowLength,
    VarLen,
    _as_schema,
    parse_examples,
)
from .guess import SchemaGuess
from .values import Ragged

__all__ = [
    "SequenceGuess",
    "as_sequence_schema",
    "parse_sequence_example",
    "parse_single_sequence_example",
]

_SEQUENCE_KINDS = (FixedLenSequence, VarLen, RaggedFeature)


def as_sequence_schema(features: Schema | Mapping[str, Any]) -> Schema:
    """``features`` as a schema of feature lists: ``FixedLenSequence`` (each step
    ``shape``-sized), ``VarLen`` and ``RaggedFeature`` specs, or their ``tf.io`` forms."""
    schema = _as_schema(features)
    for key, spec in schema.items():
        if not isinstance(spec, _SEQUENCE_KINDS):
            raise ValueError(
                f"feature list {key!r}: a sequence schema takes FixedLenSequence, VarLen or "
                f"RaggedFeature specs, not {type(spec).__name__}"
            )
    return schema


def parse_sequence_example(
    records: Iterable[bytes],
    context_schema: Schema | Mapping[str, Any] | None = None,
    sequence_schema: Schema | Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
    """Parses a batch of serialized ``SequenceExample``s in native calls, as
    ``tf.io.parse_sequence_example``: returns ``(context, feature_lists, lengths)``.

    The context is parsed as Examples are (:func:`parse_examples`). Each feature list gives:
    ``FixedLenSequence`` an array ``[batch, max_steps, *shape]`` padded with its default
    (zero or ``b""``), with its steps per Example in ``lengths``; ``VarLen`` a
    :class:`Ragged` of Examples of steps of values; ``RaggedFeature`` a :class:`Ragged`
    of Examples of steps, each step split by the partitions (read from feature lists too).

    >>> record = encode_sequence_example({"id": 7}, {"tokens": [[1, 2], [3, 4], [5, 6]]})
    >>> context, lists, lengths = parse_sequence_example(
    ...     [record], {"id": FixedLen([], "int64")},
    ...     {"tokens": FixedLenSequence([2], "int64")})
    >>> lists["tokens"].shape, lengths["tokens"].tolist()
    ((1, 3, 2), [3])
    """
    if context_schema is None and sequence_schema is None:
        raise ValueError("give a context_schema, a sequence_schema or both")
    records = records if isinstance(records, list) else list(records)
    context = {} if context_schema is None else parse_examples(records, context_schema)
    if sequence_schema is None:
        return context, {}, {}
    lists, lengths = _feature_lists(as_sequence_schema(sequence_schema), records)
    return context, lists, lengths


def parse_single_sequence_example(
    record: bytes,
    context_schema: Schema | Mapping[str, Any] | None = None,
    sequence_schema: Schema | Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Parses one ``SequenceExample``, as ``tf.io.parse_single_sequence_example``: returns
    ``(context, feature_lists)`` without the batch axis (a ``FixedLenSequence`` list is
    ``[steps, *shape]``)."""
    context, lists, lengths = parse_sequence_example([record], context_schema, sequence_schema)
    return _row(context, lists, lengths, 0)


def _row(
    context: dict[str, Any], lists: dict[str, Any], lengths: dict[str, np.ndarray], i: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Example ``i`` of a parsed batch."""
    own = {k: v[i] for k, v in context.items()}
    steps = {k: (v[i][: lengths[k][i]] if k in lengths else v[i]) for k, v in lists.items()}
    return own, steps


def list_columns(schema: Schema) -> dict[str, str]:
    """The feature lists to read for ``schema``, each with its dtype."""
    columns: dict[str, str] = {}

    def add(key: str, dtype: str, by: str) -> None:
        if columns.setdefault(key, dtype) != dtype:
            raise ValueError(
                f"feature list {by!r} reads {key!r} as {dtype}, but it is read as "
                f"{columns[key]} too"
            )

    for key, spec in schema.items():
        if isinstance(spec, RaggedFeature):
            add(spec.value_key or key, spec.dtype, key)
            for p in spec.partitions:
                if not isinstance(p, UniformRowLength):
                    add(p.key, "int64", key)
        else:
            add(key, spec.dtype, key)
    return columns


def _feature_lists(
    schema: Schema, records: list[Any]
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    wanted = list_columns(schema)
    cols = dict(zip(wanted, _core.parse_feature_lists(records, list(wanted.items())), strict=True))
    return list_outputs(schema, cols)


def list_outputs(
    schema: Schema, cols: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The feature lists of ``schema`` (with the steps of each ``FixedLenSequence``), from
    the columns :func:`list_columns` names as the native parser reads them."""
    out: dict[str, Any] = {}
    lengths: dict[str, np.ndarray] = {}
    for key, spec in schema.items():
        if isinstance(spec, FixedLenSequence):
            out[key], lengths[key] = _dense_steps(key, spec, cols[key])
        elif isinstance(spec, VarLen):
            values, steps, step_values, _ = cols[key]
            out[key] = Ragged(Ragged(values, step_values), steps)
        else:
            out[key] = _ragged_steps(key, spec, cols)
    return out, lengths


def _record_of(steps: np.ndarray, step: int) -> int:
    return int(np.searchsorted(steps, step, side="right") - 1)


def _dense_steps(key: str, spec: FixedLenSequence, column: Any) -> tuple[np.ndarray, np.ndarray]:
    values, steps, step_values, present = column
    stride = int(np.prod(spec.shape, dtype=np.int64))
    counts = np.diff(step_values)
    bad = np.flatnonzero(counts != stride)
    if bad.size:
        step = int(bad[0])
        record = _record_of(steps, step)
        raise SchemaError(
            f"feature list {key!r} ({spec.dtype}): step {step - int(steps[record])} has "
            f"{int(counts[step])} values; expected {stride}",
            key=key,
            record_index=record,
        )
    if not spec.allow_missing and not present.all():
        raise SchemaError(
            f"feature list {key!r} ({spec.dtype}) is required but could not be found",
            key=key,
            record_index=int(np.argmin(present)),
        )
    n_steps = np.diff(steps)
    batch = len(n_steps)
    width = int(n_steps.max()) if batch else 0
    if spec.default is not None:
        pad = spec.default[0]
    else:
        pad = b"" if spec.dtype == "bytes" else 0
    if batch and (n_steps == width).all():
        return values.reshape(batch, width, *spec.shape), n_steps
    if values.dtype != object:
        padded = _core.pad_steps(key, values, steps, step_values, stride, pad)
        return padded.reshape(batch, width, *spec.shape), n_steps
    padding = batch * width * stride - len(values)
    if padding > _core.MAX_FILL:
        raise SchemaError(
            f"feature list {key!r}: padding to the longest record would fill in {padding} "
            f"values that no record holds, more than the {_core.MAX_FILL} a batch may; parse "
            "smaller batches",
            key=key,
        )
    out = np.full((batch, width, *spec.shape), pad, dtype=values.dtype)
    # The steps, record by record, fill each record's first rows: row-major order.
    out[np.arange(width) < n_steps[:, None]] = values.reshape(len(counts), *spec.shape)
    return out, n_steps


def _ragged_steps(key: str, spec: RaggedFeature, cols: dict[str, Any]) -> Ragged:
    values, steps, step_values, _ = cols[spec.value_key or key]
    parts = []
    for p in spec.partitions:
        if isinstance(p, UniformRowLength):
            parts.append((_PARTITION_KINDS[type(p)], None, p.length))
            continue
        part_values, part_steps, part_step_values, _ = cols[p.key]
        if not np.array_equal(part_steps, steps):
            record = int(np.argmax(part_steps != steps)) - 1
            raise SchemaError(
                f"feature list {key!r}: partition {p.key!r} has "
                f"{int(part_steps[record + 1] - part_steps[record])} steps but the values have "
                f"{int(steps[record + 1] - steps[record])}",
                key=key,
                record_index=record,
            )
        parts.append((_PARTITION_KINDS[type(p)], (part_values, part_step_values), 0))
    try:
        levels = _core.ragged_layout(key, step_values, parts)
    except SchemaError as err:
        # The layout's rows are steps: name the Example the step belongs to.
        if err.record_index is not None:
            err.record_index = _record_of(steps, err.record_index)
        raise
    out: Any = values
    for splits in reversed(levels):
        out = Ragged(out, splits.astype(spec.row_splits_dtype, copy=False))
    return Ragged(out, steps.astype(spec.row_splits_dtype, copy=False))


class SequenceGuess:
    """Accumulates decoded feature lists and guesses their schema: a list whose steps all
    hold one number of values is ``FixedLenSequence`` (with ``allow_missing``: an Example
    without the list has no steps), anything else ``VarLen``."""

    def __init__(self) -> None:
        self.examples = 0
        self.seen = False
        self._lists = SchemaGuess()

    def add(self, lists: Mapping[str, Any]) -> None:
        """Takes one SequenceExample's feature lists as :func:`decode_sequence_example`
        returns them."""
        self.examples += 1
        self.seen = self.seen or bool(lists)
        for key, steps in lists.items():
            for step in steps:
                self._lists.add({key: step})

    def schema(self) -> Schema:
        specs: dict[str, Spec] = {}
        guess = self._lists
        for key, kind in guess._kinds.items():
            sizes = guess._counts[key]
            if len(sizes) == 1 and 0 not in sizes:
                (size,) = sizes
                specs[key] = FixedLenSequence([] if size == 1 else [size], kind, allow_missing=True)
            else:
                specs[key] = VarLen(kind)
        return Schema(specs)
