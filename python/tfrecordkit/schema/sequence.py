"""SequenceExamples parsed with schemas, as ``tf.io.parse_sequence_example`` parses them:
the context with an Example schema, the feature lists with a sequence schema of
``FixedLenSequence``, ``VarLen`` and ``RaggedFeature`` specs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .. import _core
from .features import (
    FixedLenSequence,
    RaggedFeature,
    Schema,
    Spec,
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
    if not context_schema and not sequence_schema:
        raise ValueError("give a context_schema, a sequence_schema or both, with features")
    records = records if isinstance(records, list) else list(records)
    context = parse_examples(records, context_schema) if context_schema else {}
    if not sequence_schema:
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


def compiled_lists(schema: Schema) -> _core.ListSchema:
    """The native form of a sequence schema: the feature lists it reads, and how the core
    lays each out."""
    return _core.ListSchema(list(schema.items()))


def _feature_lists(
    schema: Schema, records: list[Any]
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    return list_outputs(schema, _core.parse_sequence_lists(records, compiled_lists(schema)))


def list_outputs(schema: Schema, laid: list[Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The feature lists of ``schema`` as the core lays them out for a batch (one entry
    per list): a ``FixedLenSequence`` padded, with its steps per record in ``lengths``;
    a ``VarLen`` and a ``RaggedFeature`` as :class:`Ragged` records of steps."""
    out: dict[str, Any] = {}
    lengths: dict[str, np.ndarray] = {}
    for (key, spec), item in zip(schema.items(), laid, strict=True):
        if isinstance(spec, FixedLenSequence):
            out[key], lengths[key] = item
        elif isinstance(spec, VarLen):
            values, steps, step_values = item
            out[key] = Ragged(Ragged(values, step_values), steps)
        else:
            values, steps, levels = item
            for splits in reversed(levels):
                values = Ragged(values, splits.astype(spec.row_splits_dtype, copy=False))
            out[key] = Ragged(values, steps.astype(spec.row_splits_dtype, copy=False))
    return out, lengths


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
