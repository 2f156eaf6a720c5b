"""The Python parts of the stages after a user ``map``: the engine
(``_core.ElementPipeline``) runs them all, calling these for what is Python's: how
``batch`` stacks elements (:func:`collate`), parsing and image decoding a chunk at a time
(:class:`Chunked`); ``cache`` keeps elements through a :class:`CacheStore`.

Elements carry a key where ``decode_image`` follows: the record an element came from
(its file, pass and position, as the native engine names it; an array of them for a
batch), so that ``decode_image`` after a ``map`` draws the same augmentation for a record
as it does in the native engine. Seeds are mixed with the engine's own mixer,
:func:`tfrecordkit._core.mix_seed`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from .. import _core
from ..errors import DataLossError, type_phrase
from ..image import ImageOptions, decode_seeded
from ..io.paths import is_url
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
    native engine's record cache, or the elements of the first complete pass after a user
    function, which the engine keeps through :meth:`keeper` and replays from
    :meth:`replay`. In a file, either is a TFRecord file: records, or elements as
    :mod:`.cache_format` writes them (data only: a file planted at ``filename`` can fail
    to load, never run code)."""

    def __init__(self, filename: str | None) -> None:
        if filename is not None and is_url(str(filename)):
            raise ValueError(
                f"a cache file is local, and {filename} is a URL: give a local path, or "
                "cache in memory (no filename)"
            )
        self.filename = filename
        self.native = _core.PipelineCache(filename)
        self.elements: list[Pair] | None = None

    def __repr__(self) -> str:
        return f"cache({self.filename!r})"

    def share(self, suffix: str) -> CacheStore:
        """A cache of its own for one consumer's share of the pipeline."""
        return CacheStore(None if self.filename is None else f"{self.filename}{suffix}")

    def replay(self) -> Iterator[Pair] | None:
        """The ``(key, element)`` pairs of a kept pass; ``None`` before one is kept."""
        if self.elements is not None:
            return iter(self.elements)
        if self.filename is not None and os.path.exists(self.filename):
            return _read_elements(self.filename)
        return None

    def keeper(self) -> _MemoryKeeper | _FileKeeper:
        """Keeps a pass: in memory, or in the file, which takes its name once the pass is
        complete (a pass left early, or an element the format cannot hold, leaves
        nothing behind)."""
        if self.filename is None:
            return _MemoryKeeper(self)
        return _FileKeeper(RecordWriter(self.filename))


class _MemoryKeeper:
    def __init__(self, store: CacheStore) -> None:
        self.store, self.kept = store, []

    def keep(self, key: Any, element: Any) -> None:
        self.kept.append((key, element))

    def finish(self) -> None:
        self.store.elements = self.kept

    def abort(self) -> None:
        self.kept = []


class _FileKeeper:
    def __init__(self, writer: RecordWriter) -> None:
        self.writer = writer

    def keep(self, key: Any, element: Any) -> None:
        self.writer.write(_elements.encode_pair(key, element))

    def finish(self) -> None:
        self.writer.close()

    def abort(self) -> None:
        self.writer.abort()


def _read_elements(path: str) -> Iterator[Pair]:
    for i, record in enumerate(read_records(path, compression=None)):
        try:
            yield _elements.decode(record)
        except ValueError as err:
            raise DataLossError(
                f"not a cache file of pipeline elements: {err}", path=path, record_index=i
            ) from None


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


def stack(elements: Sequence[Any], where: str = "") -> Any:
    """Stacks elements into a batch as ``batch`` does: dicts and tuples key by key, arrays of
    one shape along a new first axis, 1-D arrays of different lengths as a :class:`Ragged`,
    bytes and str as an object array, anything else as a list. Elements of different
    structures or types are refused, as tf.data refuses them, naming the first that
    differs from the batch's first (``where``: the component, in a nested element)."""
    first = elements[0]
    if isinstance(first, dict):
        # Dicts of one set of keys, their NumPy scalars and text stacked natively.
        if type(elements) is list:
            fast = _core.stack_dicts(elements, where, stack)
            if fast is not None:
                return fast
        keys = first.keys()

        def same_keys(e: Any) -> bool:
            return isinstance(e, dict) and e.keys() == keys

        # Of one size, and each with every key of the first: the same keys.
        try:
            sizes = set(map(len, elements))
            columns = {k: [e[k] for e in elements] for k in first}
        except (KeyError, TypeError, IndexError):
            _refuse(elements, where, same_keys)
        if sizes != {len(first)}:
            _refuse(elements, where, same_keys)
        return {k: stack(col, f"{where}[{k!r}]") for k, col in columns.items()}
    if isinstance(first, tuple):
        if set(map(type, elements)) != {type(first)} or set(map(len, elements)) != {len(first)}:
            _refuse(elements, where, lambda e: isinstance(e, tuple) and len(e) == len(first))
        return tuple(
            stack(list(col), f"{where}[{j}]") for j, col in enumerate(zip(*elements, strict=True))
        )
    if isinstance(first, (bytes, str)):

        def text(e: Any) -> bool:
            return isinstance(e, (bytes, str))

        # Exact types are checked at once; subclasses (NumPy's bytes_, str_) one by one.
        if not set(map(type, elements)) <= {bytes, str} and not all(map(text, elements)):
            _refuse(elements, where, text)
        return object_array(elements)
    if isinstance(first, np.generic):
        # NumPy scalars: one array, without an array per element.
        try:
            scalars = np.array(elements)
        except ValueError:  # not all scalars
            scalars = None
        if scalars is not None and scalars.ndim == 1 and scalars.dtype.kind in "biufc":
            return scalars

    def alike(e: Any) -> bool:
        return not isinstance(e, (dict, tuple, bytes, str)) and (e is None) == (first is None)

    if not all(map(alike, elements)):
        _refuse(elements, where, alike)
    arrays = [np.asarray(e) for e in elements]
    # Numbers and text do not stack into one array (NumPy would make text of the numbers).
    dtypes = {a.dtype.kind for a in arrays}
    if dtypes & set("biufc") and dtypes & set("US"):
        number = arrays[0].dtype.kind in "biufc"
        at = next(i for i, a in enumerate(arrays) if a.dtype.kind in ("US" if number else "biufc"))
        _unlike(
            where, at, f"of dtype {arrays[at].dtype}, where element 0 is of dtype {arrays[0].dtype}"
        )
    if all(a.shape == arrays[0].shape for a in arrays):
        return np.stack(arrays)
    if all(a.ndim == 1 for a in arrays):
        splits = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in arrays], out=splits[1:])
        return Ragged(np.concatenate(arrays), splits)
    return list(elements)


def _refuse(elements: Sequence[Any], where: str, alike: Callable[[Any], bool]) -> NoReturn:
    """Raises for the first element that is not ``alike`` the batch's first."""
    i = next(i for i, e in enumerate(elements) if not alike(e))
    first, e = elements[0], elements[i]
    if isinstance(first, (bytes, str)) and not isinstance(e, (dict, tuple)) and e is not None:
        _unlike(where, i, f"{_shape_of(e)}, where element 0 is text")
    _unlike(where, i, f"{_shape_of(e)}, where element 0 is {_shape_of(first)}")


def _shape_of(e: Any) -> str:
    """What kind of element ``e`` is, for a message."""
    if isinstance(e, dict):
        return f"a dict of {sorted(map(str, e))}"
    if isinstance(e, tuple):
        return f"a tuple of {len(e)}"
    return type_phrase(e)


def _unlike(where: str, i: int, what: str) -> NoReturn:
    part = f" (at {where})" if where else ""
    raise TypeError(
        f"batch: element {i}{part} is {what}; the elements of a batch have one structure "
        "and one type"
    )


def object_array(items: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


@dataclass(frozen=True)
class Chunked:
    """A stage the engine runs over chunks of up to ``size`` elements:
    ``apply(elements, keys, seed, position)`` makes one element of each (``keys``: those of
    their records where kept, else ``None``; ``seed``: the pass's; ``position``: the
    place in the pass of the chunk's first element)."""

    size: int
    apply: Callable[[list[Any], list[Any] | None, int, int], list[Any]]


def parse(schema: Schema) -> Chunked:
    """``parse`` after a user function: a chunk of serialized Examples per native call."""

    def apply(records: list[Any], keys: Any, seed: int, position: int) -> list[Any]:
        return _core.rows(parse_examples(records, schema), len(records))

    return Chunked(UNIT, apply)


def parse_sequences(context: Schema | None, sequence: Schema, batched: bool) -> Chunked:
    """SequenceExamples parsed a batch (or ``UNIT`` records) per native call; context and
    feature lists in one dict."""
    if batched:

        def each_batch(batches: list[Any], keys: Any, seed: int, position: int) -> list[Any]:
            out = []
            for records in batches:
                ctx, lists, _ = parse_sequence_example(list(records), context, sequence)
                out.append({**ctx, **lists})
            return out

        return Chunked(1, each_batch)

    def apply(records: list[Any], keys: Any, seed: int, position: int) -> list[Any]:
        ctx, lists, lengths = parse_sequence_example(records, context, sequence)
        out = []
        for i in range(len(records)):
            own, steps = _row(ctx, lists, lengths, i)
            out.append({**own, **steps})
        return out

    return Chunked(UNIT, apply)


def decode_images(key: str, options: ImageOptions) -> Chunked:
    """``decode_image`` after a user function: each element (or batch) in one native call,
    each record augmented with the seed the native engine gives it."""

    def apply(elements: list[Any], keys: Any, seed: int, position: int) -> list[Any]:
        base = _core.mix_seed(options.seed_value(), seed)
        out = []
        for n, element in enumerate(elements, position):
            if not isinstance(element, dict) or key not in element:
                raise TypeError(f"decode_image({key!r}) needs dict elements with that key")
            value = element[key]
            single = isinstance(value, (bytes, bytearray, memoryview))
            images = [bytes(value)] if single else [bytes(v) for v in value]
            origin = None if keys is None else keys[n - position]
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
            out.append({**element, key: pixels[0] if single else pixels})
        return out

    return Chunked(1, apply)


class FeatureStep:
    """Replaces feature ``key`` of each parsed element (a dict) by ``fn(value, **options)``."""

    def __init__(self, step: str, key: str, fn: Callable[..., Any], **options: Any) -> None:
        self.step, self.key, self.fn, self.options = step, str(key), fn, options

    def __call__(self, element: Any) -> Any:
        if not isinstance(element, dict):
            raise TypeError(
                f"{self.step}({self.key!r}) works on parsed elements (dicts of features), "
                f"not {type(element).__name__}: call parse first"
            )
        if self.key not in element:
            raise KeyError(
                f"{self.step}: no feature {self.key!r} (the element has {sorted(element)})"
            )
        return {**element, self.key: self.fn(element[self.key], **self.options)}

    def __repr__(self) -> str:
        return f"{self.step}({self.key!r}, {', '.join(map(repr, self.options.values()))})"
