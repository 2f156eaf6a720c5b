"""A :class:`~tfrecordkit.Dataset`'s plan: its typed stages (the builders), compiled once
into the core's plan (``_core.Plan``). The core sorts them into what its engine runs over
records (reading, ordering, caching, parsing, batching, image decoding) and the stages
over the elements a user ``map`` or ``filter`` makes, which its ``ElementPipeline`` runs
(calling on :mod:`.python_stages` for what is Python's); it starts each run and counts
the elements of one.

The stages that order elements are the core's own typed objects (``_core.Shuffle``,
``Shard``, ``Skip``, ``Take``, ``Repeat``); the rest are the frozen dataclasses below.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from .. import _core
from ..errors import TFRecordError
from ..image import ImageOptions
from ..io.paths import URLOpener
from ..io.policy import policed
from ..schema.features import FixedLenSequence, RaggedFeature, Schema, SparseFeature
from ..schema.sequence import _row, compiled_lists, list_outputs
from . import python_stages as _stages

# The engine's threads that run Python functions (a map on threads, a prefetch after a
# map) leave Python before the interpreter is torn down.
atexit.register(_core.stop_threads)


@dataclass(frozen=True)
class Interleave:
    cycle_length: int
    block_length: int
    deterministic: bool
    # Files read at once; 0 for every open one.
    parallel_reads: int = 0


@dataclass(frozen=True)
class Parse:
    schema: Schema


@dataclass(frozen=True)
class ParseSequence:
    """Parses SequenceExamples: each record, or each batch of records when ``batched``
    (a ``batch`` right after the parse batches the records first, then parses them in one
    call, padding ``FixedLenSequence`` lists to the batch's longest)."""

    context: Schema | None
    sequence: Schema
    batched: bool = False

    def native(self) -> tuple[_core.CompiledSchema, _core.ListSchema]:
        """What the core parses: the context's schema and the feature lists'."""
        return (self.context or Schema({})).compiled(), compiled_lists(self.sequence)


@dataclass(frozen=True)
class DecodeImage:
    key: str
    options: ImageOptions


@dataclass(frozen=True)
class Map:
    fn: Callable[[Any], Any]
    num_parallel_calls: int | None


@dataclass(frozen=True)
class Filter:
    predicate: Callable[[Any], Any]


@dataclass(frozen=True)
class Batch:
    size: int
    drop_remainder: bool
    max_bytes: int | None = None


@dataclass(frozen=True)
class Prefetch:
    size: int


@dataclass(frozen=True)
class Cache:
    filename: str | None
    store: _stages.CacheStore = field(compare=False)


Op = Any  # one of the dataclasses above, or a Shuffle, Shard, Skip, Take or Repeat


def op_name(op: Op) -> str:
    """The ``Dataset`` method that made ``op``."""
    names = {"DecodeImage": "decode_image", "ParseSequence": "parse"}
    return names.get(type(op).__name__, type(op).__name__.lower())


@dataclass(frozen=True)
class Source:
    files: tuple[str, ...]
    files_level: bool
    compression: str | None
    verify: bool
    on_error: Any
    max_record_bytes: int | None
    resync: bool = False
    # A split among consumers (DataLoader workers and ranks): (count, index, level), the
    # level where it goes ("files", "records" or "elements", from ``_core.Plan.share``).
    consumers: tuple[int, int, str] | None = None
    # Opens the files that are URLs; None when all are local.
    opener: URLOpener | None = None
    # The record count of each file (None where unknown), known without reading it.
    counts: Callable[[], Sequence[int | None]] | None = field(default=None, compare=False)
    # The channels the dataset's metadata gives its image features (a TFDS Image's shape):
    # what decode_image makes without being told.
    image_channels: Mapping[str, int] | None = field(default=None, compare=False)


#: ``cardinality`` of an endless pipeline, and of one whose length is not known without
#: reading it (tf.data's constants).
INFINITE = -1
UNKNOWN = -2


def elements(source: Source, plan: _core.Plan, epoch: int) -> Iterator[Any]:
    """One epoch of the pipeline's elements."""
    epoch &= (1 << 64) - 1
    if plan.files_only:
        files = source.files
        return (files[i] for i in plan.file_order(source, epoch))
    python_ops = plan.element_ops
    if source.consumers is not None and source.consumers[2] == "elements":
        # The consumers split the elements after the last pick among them.
        count, index, _ = source.consumers
        _, _, at = plan.share(len(source.files), count)
        python_ops.insert(at, _core.Shard(count, index))
    if not python_ops:
        return _native(source, plan, epoch, tagged=False)
    # Only ``decode_image`` needs to know which records an element came from.
    tagged = any(isinstance(op, DecodeImage) for op in python_ops)
    return _core.ElementPipeline(
        lambda e: _native(source, plan, e, tagged, chunks=True),
        [_engine_op(op) for op in python_ops],
        epoch,
        tagged,
        _stages.collate,
        chunks=True,
        pairs=False,
    )


def _engine_op(op: Op) -> Any:
    """``op`` as the engine's element stages take it."""
    if isinstance(op, Parse):
        return _stages.parse(op.schema)
    if isinstance(op, ParseSequence):
        return _stages.parse_sequences(op.context, op.sequence, op.batched)
    if isinstance(op, DecodeImage):
        return _stages.decode_images(op.key, op.options)
    return op


def _native(
    source: Source, plan: _core.Plan, epoch: int, tagged: bool, chunks: bool = False
) -> Iterator[Any]:
    """The engine's output as elements (``(key, element)`` pairs when ``tagged``), or as
    lists of them, one per unit, when ``chunks``. The engine starts now, so that it reads
    ahead before the first element is asked for."""
    pipe = plan.start(source, epoch & ((1 << 64) - 1))
    return _units_of(pipe, source, plan, tagged, chunks)


def _units_of(
    pipe: _core.Pipeline, source: Source, plan: _core.Plan, tagged: bool, chunks: bool
) -> Iterator[Any]:
    """The engine's output: each unit as a list of elements when ``chunks``, else each
    element. Closing this stops the engine."""
    batched = plan.batch is not None
    schema, sequence = plan.schema, plan.sequence
    compiled = schema.compiled() if schema is not None else None
    # Parsed Examples come with their dict made natively, and their count in place of
    # their keys, unless the elements are tagged with their keys.
    dicts = compiled is not None and sequence is None and not tagged
    next_item = partial(pipe.next_dict, compiled) if dicts else pipe.next
    try:
        units = policed(next_item, source.on_error, catch=TFRecordError, what="bad record")
        for head, payload in units:
            n = head if dicts else len(head)
            if dicts:
                element: Any = payload
            elif sequence is not None:
                element = _sequences(sequence, payload, n, batched)
            elif compiled is None:
                element = _stages.object_array(payload) if batched else payload
            else:
                element = compiled.outputs(payload)
            if batched:
                element = (head, element) if tagged else element
                if chunks:
                    yield [element]
                else:
                    yield element
                continue
            if compiled is not None:
                element = _core.rows(element, n)
            elements = list(zip(head.tolist(), element, strict=True)) if tagged else element
            if chunks:
                yield elements
            else:
                yield from elements
    finally:
        pipe.close()


def _sequences(op: ParseSequence, payload: Any, n: int, batched: bool) -> Any:
    """A unit of SequenceExamples the engine parsed: one dict of the context and feature
    lists for a batch, or a list of them, one per record."""
    context_columns, laid = payload
    context = op.context.outputs(context_columns) if op.context is not None else {}
    lists, lengths = list_outputs(op.sequence, laid)
    if batched:
        return {**context, **lists}
    out = []
    for i in range(n):
        own, steps = _row(context, lists, lengths, i)
        out.append({**own, **steps})
    return out


@dataclass(frozen=True)
class ElementSpec:
    """The shape (``None`` where it varies) and dtype of one component of an element;
    ``ragged``: the number of ragged dimensions of a :class:`~tfrecordkit.Ragged` (a
    batched ``VarLen``, a ``RaggedFeature``), 0 for an array; ``sparse`` for a
    :class:`~tfrecordkit.Sparse`."""

    shape: tuple[int | None, ...]
    dtype: str
    ragged: int = 0
    sparse: bool = False
    row_splits_dtype: str = "int64"

    def __repr__(self) -> str:
        extra = f", ragged={self.ragged}" if self.ragged else ""
        if self.ragged and self.row_splits_dtype != "int64":
            extra += f", row_splits_dtype={self.row_splits_dtype!r}"
        extra += ", sparse=True" if self.sparse else ""
        return f"ElementSpec(shape={self.shape!r}, dtype={self.dtype!r}{extra})"


def element_spec(plan: _core.Plan) -> Any:
    """What each element holds: an :class:`ElementSpec` for records, a dict of them for
    parsed Examples; ``None`` once ``map`` or ``filter`` may change the elements."""
    if plan.element_ops or plan.sequence is not None:
        return None
    batch = plan.batch
    lead: tuple[int | None, ...] = ()
    if batch is not None:
        lead = (batch.size if batch.drop_remainder else None,)
    schema = plan.schema
    if schema is None:
        return ElementSpec(lead, "bytes")
    images = {i.key: i.options for i in plan.images}
    out = {}
    for key, spec in schema.items():
        if key in images:
            o = images[key]
            h, w = o.size or (None, None)
            out[key] = ElementSpec((*lead, h, w, o.channels or None), str(np.dtype(o.dtype)))
            continue
        if isinstance(spec, SparseFeature):
            out[key] = ElementSpec((*lead, *spec.size), spec.dtype, sparse=True)
            continue
        if isinstance(spec, RaggedFeature):
            rank = len(spec.partitions) + (batch is not None)
            dims = (*lead, *[None] * (len(spec.partitions) + 1))
            out[key] = ElementSpec(dims, spec.dtype, rank, row_splits_dtype=spec.row_splits_dtype)
            continue
        shape = tuple(getattr(spec, "shape", ()))
        if isinstance(spec, FixedLenSequence):
            out[key] = ElementSpec((*lead, None, *shape), spec.dtype)
        elif hasattr(spec, "shape"):
            out[key] = ElementSpec((*lead, *shape), spec.dtype)
        elif batch is None:
            out[key] = ElementSpec((None,), spec.dtype)
        else:
            out[key] = ElementSpec((*lead, None), spec.dtype, ragged=1)
    return out
