"""The stages after a user ``map`` that run in Python: a ``map`` on threads, ``cache``,
``prefetch``, parsing and image decoding, and how the engine's ``batch`` stacks elements
(:func:`collate`). The other stages after a ``map`` run in the engine
(``_core.ElementPipeline``).

Elements travel through these stages as ``(key, element)`` pairs: ``key`` identifies the
record an element came from (its file, pass and position, as the native engine names it;
an array of them for a batch), so that ``decode_image`` after a ``map`` draws the same
augmentation for a record as it does in the native engine. Seeds are mixed with the
engine's own mixer, :func:`tfrecordkit._core.mix_seed`.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .. import _core
from ..errors import DataLossError
from ..image import ImageOptions, decode_seeded
from ..io.records import RecordWriter, read_records
from ..schema.features import Ragged, Schema, parse_examples
from ..schema.sequence import _row, parse_sequence_example
from . import cache_format as _elements

Pair = tuple[Any, Any]

AUTOTUNE = -1
# Records per native call: the engine's units when the plan does not batch, and the
# chunks Python parses.
UNIT = 256


def cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class CacheStore:
    """The cache of one ``cache()`` stage, shared by every iteration of the pipeline: the
    native engine's record cache, or the elements of the first pass of Python stages. In a
    file, either is a TFRecord file: records, or elements as :mod:`.cache_format` writes them
    (data only: a file planted at ``filename`` can fail to load, never run code)."""

    def __init__(self, filename: str | None) -> None:
        self.filename = filename
        self.native = _core.PipelineCache(filename)
        self.elements: list[Pair] | None = None

    def __repr__(self) -> str:
        return f"cache({self.filename!r})"

    def share(self, suffix: str) -> CacheStore:
        """A cache of its own for one consumer's share of the pipeline."""
        return CacheStore(None if self.filename is None else f"{self.filename}{suffix}")

    def replay(self, it: Iterator[Pair]) -> Iterator[Pair]:
        if self.elements is not None:
            return iter(self.elements)
        if self.filename is not None and os.path.exists(self.filename):
            return _read_elements(self.filename)
        return self._fill(it)

    def _fill(self, it: Iterator[Pair]) -> Iterator[Pair]:
        if self.filename is None:
            kept: list[Pair] = []
            for x in it:
                kept.append(x)
                yield x
            self.elements = kept
            return
        # The file takes its name once the pass is complete; a pass left early, or an
        # element the format cannot hold, leaves nothing behind.
        with RecordWriter(self.filename) as w:
            for x in it:
                w.write(_elements.encode_pair(*x))
                yield x


def _read_elements(path: str) -> Iterator[Pair]:
    for i, record in enumerate(read_records(path, compression=None)):
        try:
            yield _elements.decode(record)
        except ValueError as err:
            raise DataLossError(
                f"not a cache file of pipeline elements: {err}", path=path, record_index=i
            ) from None


def ordered_map(
    fn: Callable[[Any], Any], items: Iterable[Any], workers: int
) -> Iterator[tuple[Any, Any]]:
    """``(item, fn(item))`` in order, ``fn`` running on ``workers`` threads with at most
    ``2 * workers`` items in flight, so that memory stays flat however many items come."""
    with ThreadPoolExecutor(workers, thread_name_prefix="tfrecordkit-map") as pool:
        pending: deque[tuple[Any, Any]] = deque()
        for item in items:
            pending.append((item, pool.submit(fn, item)))
            if len(pending) >= 2 * workers:
                item, done = pending.popleft()
                yield item, done.result()
        while pending:
            item, done = pending.popleft()
            yield item, done.result()


#: How long one task of a parallel ``map`` should run: long enough that handing it to a
#: thread costs little beside it, short enough to keep every thread busy.
TASK_SECONDS = 0.002


def chunked_map(fn: Callable[[Any], Any], items: Iterator[Any], workers: int) -> Iterator[Any]:
    """``fn(item)`` for each item, in order, on ``workers`` threads. Items go to the threads
    in chunks sized to take about :data:`TASK_SECONDS` each (one item at first, then as
    many as the time ``fn`` has taken says), with at most ``2 * workers`` chunks in flight:
    a cheap ``fn`` is not drowned by the cost of handing items over, and memory stays
    flat however many items come."""

    def run(chunk: list[Any]) -> tuple[list[Any], float]:
        start = time.perf_counter()
        out = [fn(x) for x in chunk]
        return out, (time.perf_counter() - start) / len(chunk)

    size = 1
    with ThreadPoolExecutor(workers, thread_name_prefix="tfrecordkit-map") as pool:
        pending: deque[Any] = deque()
        while True:
            chunk = list(itertools.islice(items, size))
            if chunk:
                pending.append(pool.submit(run, chunk))
            if pending and (not chunk or len(pending) >= 2 * workers):
                out, per_item = pending.popleft().result()
                size = max(1, min(1024, int(TASK_SECONDS / max(per_item, 1e-9))))
                yield from out
            elif not chunk:
                return


#: How long ``map(num_parallel_calls=AUTOTUNE)`` tries each way, and how long it then
#: keeps to the faster one before trying again.
PROBE_SECONDS = 0.05
KEEP_SECONDS = 2.0
#: The time per item below which a map runs serially: handing items to threads costs
#: about this much.
PARALLEL_ITEM_SECONDS = 20e-6


class _Timed:
    """Items handed out until a deadline, checked before each item is taken (none is lost
    at a deadline); ``exhausted`` once the items ran out."""

    def __init__(self, items: Iterator[Any]) -> None:
        self.items, self.exhausted = items, False

    def until(self, deadline: float) -> Iterator[Any]:
        while time.perf_counter() < deadline:
            try:
                yield next(self.items)
            except StopIteration:
                self.exhausted = True
                return


def autotuned_map(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    workers: int,
    close: Callable[[], Any] | None = None,
) -> Iterator[Any]:
    """``fn(item)`` for each item, in order, serially or on ``workers`` threads, whichever
    delivers more a second. Each round runs serially for :data:`PROBE_SECONDS`, timing
    ``fn``; when it takes long enough per item for threads to pay
    (:data:`PARALLEL_ITEM_SECONDS`), it then runs on the threads as long, and the faster
    way is kept for :data:`KEEP_SECONDS`. A cheap function, or one that holds the GIL,
    runs serially (threads would only add their cost); one that spends its time in NumPy,
    I/O or native code runs in parallel. ``close`` is called when the map ends or is
    closed."""
    items = iter(items)
    clock = time.perf_counter

    def threads(span: float) -> Iterator[Any]:
        source = _Timed(items)
        yield from chunked_map(fn, source.until(clock() + span), workers)
        if source.exhausted:
            raise _Exhausted

    try:
        while True:
            # Serially, timing fn itself (not what comes before or after it).
            start, spent, n = clock(), 0.0, 0
            while clock() < start + PROBE_SECONDS:
                chunk = list(itertools.islice(items, 64))
                for x in chunk:
                    t = clock()
                    y = fn(x)
                    spent += clock() - t
                    yield y
                n += len(chunk)
                if len(chunk) < 64:
                    return
            serial = n / max(clock() - start, 1e-9)
            parallel = False
            if spent / max(n, 1) >= PARALLEL_ITEM_SECONDS:
                start, n = clock(), 0
                for y in threads(PROBE_SECONDS):
                    n += 1
                    yield y
                parallel = n / max(clock() - start, 1e-9) > serial
            if parallel:
                yield from threads(KEEP_SECONDS)
                continue
            end = clock() + KEEP_SECONDS
            while clock() < end:
                chunk = list(itertools.islice(items, 1024))
                yield from map(fn, chunk)
                if len(chunk) < 1024:
                    return
    except _Exhausted:
        return
    finally:
        if close is not None:
            close()


class _Exhausted(Exception):
    """The items of an autotuned map ran out while threads were mapping them."""


def parallel_map(
    units: Iterator[list[Any]], fn: Callable[[Any], Any], parallel: int
) -> Iterator[Any]:
    """``map`` with ``num_parallel_calls`` over the elements of ``units`` (lists of them):
    on threads, or as :func:`autotuned_map` picks. Closing it closes ``units``."""
    items = itertools.chain.from_iterable(units)
    close = getattr(units, "close", None)
    if parallel == AUTOTUNE:
        # Returned as it is: a generator between it and the consumer would cost a step
        # per element, which a cheap fn run serially would feel.
        return autotuned_map(fn, items, cpus(), close)
    return _closing(chunked_map(fn, items, parallel), close)


def _closing(it: Iterator[Any], close: Callable[[], Any] | None) -> Iterator[Any]:
    try:
        yield from it
    finally:
        if close is not None:
            close()


def units_of(it: Iterator[Any], size: int = UNIT) -> Iterator[list[Any]]:
    """The items of ``it`` in lists of ``size``."""
    return iter(lambda: list(itertools.islice(it, size)), [])


def collate(elements: list[Any], keys: list[Any] | None) -> Pair:
    """One batch of elements as ``batch`` makes it after a user function (the engine calls
    this): the keys of its records (``None`` where not kept) and the stacked elements."""
    flat = None
    if keys is not None and all(k is not None for k in keys):
        if all(isinstance(k, int) for k in keys):
            flat = np.array(keys, dtype=np.uint64)
        else:
            flat = np.concatenate([np.atleast_1d(np.asarray(k, dtype=np.uint64)) for k in keys])
    return flat, stack(elements)


def stack(elements: Sequence[Any]) -> Any:
    """Stacks elements into a batch as ``batch`` does: dicts and tuples key by key, arrays of
    one shape along a new first axis, 1-D arrays of different lengths as a :class:`Ragged`,
    bytes and str as an object array, anything else as a list."""
    first = elements[0]
    if isinstance(first, dict):
        return {k: stack([e[k] for e in elements]) for k in first}
    if isinstance(first, tuple):
        return tuple(stack(list(col)) for col in zip(*elements, strict=True))
    if isinstance(first, (bytes, str)):
        return object_array(elements)
    if isinstance(first, np.generic):
        # NumPy scalars: one array, without an array per element.
        try:
            scalars = np.array(elements)
        except ValueError:  # not all scalars
            scalars = None
        if scalars is not None and scalars.ndim == 1 and scalars.dtype != object:
            return scalars
    arrays = [np.asarray(e) for e in elements]
    if all(a.shape == arrays[0].shape for a in arrays):
        return np.stack(arrays)
    if all(a.ndim == 1 for a in arrays):
        splits = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in arrays], out=splits[1:])
        return Ragged(np.concatenate(arrays), splits)
    return list(elements)


def object_array(items: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


#: Elements handed from the prefetch thread to the consumer at once, at most, and how
#: long the thread gathers them (once it has the ``size`` asked for).
PREFETCH_CHUNK = 256
PREFETCH_SECONDS = 0.0005


def prefetch(it: Iterator[Any], size: int) -> Iterator[Any]:
    """Runs ``it`` on a background thread, ``size`` elements ahead. Elements cross to the
    consumer in chunks: ``size`` of them, or as many as come in
    :data:`PREFETCH_SECONDS` (up to :data:`PREFETCH_CHUNK`), whichever is more. Both
    threads need the GIL for Python work, so that cheap elements cost no thread handoff
    each; large ones, slow to make, still come ``size`` at a time."""
    least = max(1, size)
    q: queue.Queue[Any] = queue.Queue(1)
    done = object()
    stop = threading.Event()
    clock = time.perf_counter

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        chunk: list[Any] = []
        started = 0.0
        try:
            for x in it:
                if not chunk:
                    started = clock()
                chunk.append(x)
                n = len(chunk)
                if n >= least and (n >= PREFETCH_CHUNK or clock() - started >= PREFETCH_SECONDS):
                    if not put((chunk, None)):
                        return
                    chunk = []
            put((chunk, None))
            put((done, None))
        except BaseException as err:  # handed to the consumer, after what came before it
            put((chunk, None))
            put((done, err))

    thread = threading.Thread(target=produce, name="tfrecordkit-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            x, err = q.get()
            if x is done:
                if err is not None:
                    raise err
                return
            yield from x
    finally:
        stop.set()


def parse(it: Iterator[Pair], schema: Schema) -> Iterator[Pair]:
    while True:
        chunk = list(itertools.islice(it, UNIT))
        if not chunk:
            return
        columns = parse_examples([x for _, x in chunk], schema)
        for i, (key, _) in enumerate(chunk):
            yield key, {k: v[i] for k, v in columns.items()}


def parse_sequences(
    it: Iterator[Pair], context: Schema | None, sequence: Schema, batched: bool
) -> Iterator[Pair]:
    """SequenceExamples parsed a batch (or ``UNIT`` records) per native call; context and
    feature lists in one dict."""
    if batched:
        for key, records in it:
            ctx, lists, _ = parse_sequence_example(list(records), context, sequence)
            yield key, {**ctx, **lists}
        return
    while True:
        chunk = list(itertools.islice(it, UNIT))
        if not chunk:
            return
        ctx, lists, lengths = parse_sequence_example([x for _, x in chunk], context, sequence)
        for i, (key, _) in enumerate(chunk):
            own, steps = _row(ctx, lists, lengths, i)
            yield key, {**own, **steps}


def decode_images(
    it: Iterator[Pair], key: str, options: ImageOptions, epoch: int
) -> Iterator[Pair]:
    """``decode_image`` after Python stages: each element (or batch) in one native call,
    each record augmented with the seed the native engine gives it."""
    base = _core.mix_seed(options.seed_value(), epoch)
    for n, (origin, element) in enumerate(it):
        if not isinstance(element, dict) or key not in element:
            raise TypeError(f"decode_image({key!r}) needs dict elements with that key")
        value = element[key]
        single = isinstance(value, (bytes, bytearray, memoryview))
        images = [bytes(value)] if single else [bytes(v) for v in value]
        if origin is None:
            # Elements made by Python stages alone: numbered as they come.
            origins = [_core.mix_seed(n, i) for i in range(len(images))]
        else:
            origins = [int(k) for k in np.atleast_1d(np.asarray(origin, dtype=np.uint64))]
        if len(origins) != len(images):
            raise ValueError(
                f"decode_image({key!r}) got {len(images)} images for {len(origins)} records"
            )
        pixels = decode_seeded(options, images, [_core.mix_seed(base, o) for o in origins])
        yield origin, {**element, key: pixels[0] if single else pixels}
