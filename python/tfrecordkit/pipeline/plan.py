"""A :class:`~tfrecordkit.Dataset`'s plan: its typed stages, compiled once into the plan
the native engine runs over records, followed by the stages over the elements a user
``map`` or ``filter`` makes, which the engine's ``ElementPipeline`` runs (calling on
:mod:`.python_stages` for what is Python's).

The file-level and record-level stages the engine knows are its own typed objects
(``_core.Shuffle``, ``Shard``, ``Skip``, ``Take``, ``Repeat``); the rest are the frozen
dataclasses below. The engine reads a :class:`NativePlan` directly.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import _core
from ..errors import TFRecordError
from ..image import ImageOptions
from ..io.paths import URLOpener
from ..io.policy import policed
from ..schema.features import FixedLen, FixedLenSequence, RaggedFeature, Schema, SparseFeature
from ..schema.sequence import _row, list_columns, list_outputs
from . import python_stages as _stages

# The engine's threads that run Python functions (a map on threads, a prefetch after a
# map) leave Python before the interpreter is torn down.
atexit.register(_core.stop_threads)

NATIVE_OPS = (_core.Shuffle, _core.Shard, _core.Skip, _core.Take, _core.Repeat)


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


@dataclass(frozen=True)
class Prefetch:
    size: int


@dataclass(frozen=True)
class Cache:
    filename: str | None
    store: _stages.CacheStore = field(compare=False)


Op = Any  # one of the dataclasses above or of NATIVE_OPS


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
    # A split among consumers (DataLoader workers and ranks): (count, index, by_files).
    consumers: tuple[int, int, bool] | None = None
    # Opens the files that are URLs; None when all are local.
    opener: URLOpener | None = None
    # The record count of each file (None where unknown), known without reading it.
    counts: Callable[[], Sequence[int | None]] | None = field(default=None, compare=False)
    # The channels the dataset's metadata gives its image features (a TFDS Image's shape):
    # what decode_image makes without being told.
    image_channels: Mapping[str, int] | None = field(default=None, compare=False)


@dataclass
class Plan:
    """What the stages of a Dataset compile to."""

    file_ops: list[Op] = field(default_factory=list)
    interleave: Interleave = Interleave(1, 1, True, 0)
    record_ops: list[Op] = field(default_factory=list)
    schema: Schema | None = None
    # SequenceExamples parsed by the engine (instead of ``schema``).
    sequence: ParseSequence | None = None
    batch: Batch | None = None
    prefetch: int | None = None
    python_ops: list[Op] = field(default_factory=list)
    files_only: bool = False
    # Image features decoded natively after parsing.
    images: list[DecodeImage] = field(default_factory=list)


@dataclass(frozen=True)
class NativePlan:
    """The plan the native engine runs (``_core.Pipeline`` reads its attributes)."""

    files: list[str]
    compression: str | None
    verify: bool
    resync: bool
    max_record_bytes: int | None
    continue_on_error: bool
    file_ops: list[Any]
    interleave: Interleave
    record_ops: list[Any]
    # Records per output unit, and whether the last short one is dropped.
    unit: int
    drop_remainder: bool
    # Units left short by skipped records are filled up from the next ones.
    refill: bool
    schema: _core.CompiledSchema | None
    # With ``schema`` parsing SequenceExamples' context: the feature lists (key, dtype).
    feature_lists: list[tuple[str, str]] | None
    # (index of the feature in the schema, decoding, seed).
    images: list[tuple[int, _core.ImageSpec, int]]
    parse_workers: int
    prefetch: int
    epoch: int
    opener: Callable[[str], Any] | None


def compile_plan(files_level: bool, ops: tuple[Op, ...]) -> Plan:
    """Sorts ``ops`` into the engine's file and record stages and the Python stages after
    them; raises ``TypeError`` for a stage that cannot follow what comes before it."""
    plan = Plan(files_only=files_level)
    phase = "files" if files_level else "records"
    for op in ops:
        name = op_name(op)
        if phase == "files":
            if isinstance(op, NATIVE_OPS):
                plan.file_ops.append(op)
            elif isinstance(op, Interleave):
                plan.interleave = op
                plan.files_only = False
                phase = "records"
            elif isinstance(op, Prefetch):
                pass
            else:
                raise TypeError(
                    f"{name}() needs records, and this dataset holds file names: "
                    "call .interleave() first to read the files"
                )
        elif phase == "records":
            if isinstance(op, NATIVE_OPS):
                plan.record_ops.append(op)
            elif isinstance(op, Cache):
                plan.record_ops.append(op.store.native)
            elif isinstance(op, Parse) and not _parsed(plan):
                plan.schema = op.schema
            elif isinstance(op, ParseSequence) and not op.batched and not _parsed(plan):
                plan.sequence = op
            elif isinstance(op, (Parse, ParseSequence)):
                raise TypeError("the records are parsed already")
            elif isinstance(op, Batch):
                plan.batch = op
                phase = "batched"
            elif isinstance(op, DecodeImage) and plan.sequence is not None:
                plan.python_ops.append(op)
                phase = "python"
            elif isinstance(op, DecodeImage) and plan.schema is not None:
                _add_image(plan, op)
            elif isinstance(op, DecodeImage):
                raise TypeError("decode_image() needs parsed Examples: call .parse() first")
            elif isinstance(op, Prefetch):
                plan.prefetch = op.size
            elif isinstance(op, Interleave):
                raise TypeError("interleave() reads files; this dataset holds records")
            else:
                plan.python_ops.append(op)
                phase = "python"
        elif phase == "batched" and isinstance(op, Prefetch):
            plan.prefetch = op.size
        elif phase == "batched" and isinstance(op, ParseSequence) and op.batched:
            if _parsed(plan):
                raise TypeError("the records are parsed already")
            plan.sequence = op
        elif phase == "batched" and isinstance(op, DecodeImage) and plan.schema is not None:
            _add_image(plan, op)
        else:
            if isinstance(op, Interleave):
                raise TypeError("interleave() reads files; this dataset holds records")
            if isinstance(op, Parse) and (plan.schema is not None or phase == "batched"):
                raise TypeError("parse() needs unbatched, unparsed records")
            if isinstance(op, DecodeImage) and not _parsed(plan):
                raise TypeError("decode_image() needs parsed Examples: call .parse() first")
            plan.python_ops.append(op)
            phase = "python"
    return plan


def _parsed(plan: Plan) -> bool:
    return plan.schema is not None or plan.sequence is not None


def _add_image(plan: Plan, op: DecodeImage) -> None:
    assert plan.schema is not None
    key = op.key
    spec = plan.schema.get(key)
    if spec is None:
        raise ValueError(f"decode_image({key!r}): the schema has no feature {key!r}")
    if not isinstance(spec, FixedLen) or spec.dtype != "bytes" or list(spec.shape) != []:
        raise ValueError(
            f"decode_image({key!r}) needs a FixedLen([], 'bytes') feature, not {spec!r}"
        )
    if any(image.key == key for image in plan.images):
        raise TypeError(f"feature {key!r} is decoded already")
    plan.images.append(op)


#: ``cardinality`` of an endless pipeline, and of one whose length is not known without
#: reading it (tf.data's constants).
INFINITE = -1
UNKNOWN = -2


def cardinality(source: Source, ops: tuple[Op, ...]) -> int:
    """How many elements one epoch of ``ops`` over ``source`` yields, from the number of
    files and the record counts ``source.counts`` knows, never from the files' data:
    ``INFINITE`` or ``UNKNOWN`` where tf.data's ``cardinality()`` says so, and ``UNKNOWN``
    too where ``on_error`` may skip records. The engine counts (``_core.cardinality``)."""
    rest, split = list(ops), []
    file_ops: list[Op] = []
    if source.consumers is not None:
        count, index, by_files = source.consumers
        (file_ops if by_files else split).append(_core.Shard(count, index))
    files = len(source.files)
    if source.files_level:
        at = next((i for i, op in enumerate(rest) if isinstance(op, Interleave)), len(rest))
        file_ops += [op for op in rest[:at] if isinstance(op, NATIVE_OPS)]
        if at == len(rest):  # the file names
            return _core.cardinality(files, file_ops, [], read=False)
        rest = rest[at + 1 :]
    skips = source.on_error != "raise"
    return _core.cardinality(files, file_ops, [*split, *rest], source.counts, skips=skips)


def native_ops(source: Source, plan: Plan) -> tuple[list[Op], list[Op]]:
    """The file and record stages the engine runs, with this consumer's share first."""
    file_ops, record_ops = list(plan.file_ops), list(plan.record_ops)
    if source.consumers is not None:
        count, index, by_files = source.consumers
        (file_ops if by_files else record_ops).insert(0, _core.Shard(count, index))
    return file_ops, record_ops


def file_names(source: Source, plan: Plan, epoch: int) -> Iterator[str]:
    """The file names a pipeline that never reads its files yields."""
    file_ops, _ = native_ops(source, plan)
    files = source.files
    return (files[i] for i in _core.FileOrder(len(files), file_ops, epoch))


def elements(source: Source, plan: Plan, epoch: int) -> Iterator[Any]:
    """One epoch of the pipeline's elements."""
    if plan.files_only:
        return file_names(source, plan, epoch)
    if not plan.python_ops:
        return _native(source, plan, epoch, tagged=False)
    # Only ``decode_image`` needs to know which records an element came from.
    tagged = any(isinstance(op, DecodeImage) for op in plan.python_ops)
    return _core.ElementPipeline(
        lambda e: _native(source, plan, e, tagged, chunks=True),
        [_engine_op(op) for op in plan.python_ops],
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


def native_plan(source: Source, plan: Plan, epoch: int) -> NativePlan:
    """The engine's plan for one epoch of ``plan`` over ``source``."""
    file_ops, record_ops = native_ops(source, plan)
    interleave = plan.interleave
    if source.consumers is not None and not source.consumers[2]:
        # Consumers splitting records must all see them in the same order.
        interleave = replace(interleave, deterministic=True)
    schema = plan.schema
    lists: list[tuple[str, str]] | None = None
    if plan.sequence is not None:
        # The engine parses the context with the schema, and the feature lists.
        schema = plan.sequence.context or Schema({})
        lists = list(list_columns(plan.sequence.sequence).items())
    batched = plan.batch is not None
    sequences = schema is not None and any(isinstance(s, FixedLenSequence) for s in schema.values())
    unit = plan.batch.size if plan.batch is not None else _stages.UNIT
    if not batched and (sequences or any(_own_shape(i.options) for i in plan.images)):
        # Sequence features are padded to their unit's longest, and images that keep their
        # own shape cannot share an array: one record per unit.
        unit = 1
    keys = schema.column_keys() if schema is not None else []
    images = [(keys.index(i.key), i.options.native(), i.options.seed_value()) for i in plan.images]
    # The consuming thread parses too; extra workers pay off past two cores. Image
    # decoding is heavy enough for a worker per core, leaving the consumer free, and
    # SequenceExamples for two even on two cores: their parse, not the consumer's layout
    # of their feature lists, is what a pipeline of them waits on (8% faster measured).
    cpus = _stages.cpus()
    least = min(cpus, 2) if lists else 0
    workers = cpus if images else min(max(cpus - 2, least), 4)
    return NativePlan(
        files=list(source.files),
        compression=source.compression,
        verify=source.verify,
        resync=source.resync,
        max_record_bytes=source.max_record_bytes,
        continue_on_error=source.on_error != "raise",
        file_ops=file_ops,
        interleave=interleave,
        record_ops=record_ops,
        unit=unit,
        drop_remainder=bool(plan.batch and plan.batch.drop_remainder),
        # Sequence batches are padded to their own longest row: they cannot be joined.
        refill=batched and not sequences and lists is None,
        schema=schema.compiled() if schema is not None else None,
        feature_lists=lists,
        images=images,
        parse_workers=workers,
        prefetch=plan.prefetch or 2,
        epoch=epoch & ((1 << 64) - 1),
        opener=source.opener,
    )


def _own_shape(options: ImageOptions) -> bool:
    return options.size is None or options.channels == 0


def _native(
    source: Source, plan: Plan, epoch: int, tagged: bool, chunks: bool = False
) -> Iterator[Any]:
    """The engine's output as elements (``(key, element)`` pairs when ``tagged``), or as
    lists of them, one per unit, when ``chunks``. The engine starts now, so that it reads
    ahead before the first element is asked for."""
    pipe = _core.Pipeline(native_plan(source, plan, epoch))
    units = _units_of(pipe, source, plan, tagged)
    return units if chunks else _flat(units)


def _flat(units: Generator[list[Any], None, None]) -> Iterator[Any]:
    """The elements of ``units``; closing this closes ``units`` (and stops the engine)."""
    try:
        for unit in units:
            yield from unit
    finally:
        units.close()


def _units_of(pipe: _core.Pipeline, source: Source, plan: Plan, tagged: bool) -> Iterator[Any]:
    """Each unit of the engine's output as a list of elements."""
    batched = plan.batch is not None
    try:
        units = policed(pipe.next, source.on_error, catch=TFRecordError, what="bad record")
        for keys, payload in units:
            if plan.sequence is not None:
                element: Any = _sequences(plan.sequence, payload, len(keys), batched)
            elif plan.schema is None:
                element = _stages.object_array(payload) if batched else payload
            else:
                element = plan.schema.outputs(payload)
            if batched:
                yield [(keys, element) if tagged else element]
                continue
            if plan.schema is not None:
                element = _core.rows(element, len(keys))
            yield list(zip(keys.tolist(), element, strict=True)) if tagged else element
    finally:
        pipe.close()


def _sequences(op: ParseSequence, payload: Any, n: int, batched: bool) -> Any:
    """A unit of SequenceExamples the engine parsed: one dict of the context and feature
    lists for a batch, or a list of them, one per record."""
    context_columns, list_columns_ = payload
    context = op.context.outputs(context_columns) if op.context is not None else {}
    wanted = list_columns(op.sequence)
    lists, lengths = list_outputs(op.sequence, dict(zip(wanted, list_columns_, strict=True)))
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


def element_spec(plan: Plan) -> Any:
    """What each element holds: an :class:`ElementSpec` for records, a dict of them for
    parsed Examples; ``None`` once ``map`` or ``filter`` may change the elements."""
    if plan.python_ops or plan.sequence is not None:
        return None
    batch = plan.batch
    lead: tuple[int | None, ...] = ()
    if batch is not None:
        lead = (batch.size if batch.drop_remainder else None,)
    if plan.schema is None:
        return ElementSpec(lead, "bytes")
    images = {i.key: i.options for i in plan.images}
    out = {}
    for key, spec in plan.schema.items():
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
