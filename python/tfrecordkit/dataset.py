"""Streaming input pipelines: the tf.data vocabulary, without TensorFlow.

A :class:`Dataset` is a lazy plan. Iterating it starts native threads that read,
decompress, check, interleave, shard, cache, shuffle, batch and parse records, with
bounded queues between them; Python runs only the functions given to ``map`` and
``filter`` (and whatever follows them in the plan).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import pickle
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import _core
from .errors import SchemaError, TFRecordError
from .image import DEFAULT_CROP_RATIO, ImageOptions
from .records import OnError, Paths, apply_on_error, check_on_error, expand_paths
from .schema import FixedLen, FixedLenSequence, Ragged, Schema, _as_schema

__all__ = ["AUTOTUNE", "Dataset", "DatasetIterator"]

#: Let the library pick a parallelism or buffer size, as ``tf.data.AUTOTUNE``.
AUTOTUNE = -1

_MASK = (1 << 64) - 1
# Records per unit handed from the native pipeline when the plan does not batch.
_UNIT = 256
_FILE_OPS = frozenset({"shuffle", "shard", "skip", "take", "repeat"})
_RECORD_OPS = frozenset({"shuffle", "shard", "skip", "take", "repeat", "cache"})


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _mix(a: int, b: int) -> int:
    digest = hashlib.blake2b(f"{a}:{b}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _MASK


def _is_url(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _open_url(path: str) -> Any:
    import fsspec

    return fsspec.open(path, "rb").open()


def _expand(paths: Paths) -> list[str]:
    """Local paths and globs as :func:`expand_paths`; URLs (and URL globs) through fsspec."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    out: list[str] = []
    for p in items:
        p = os.fspath(p)
        if isinstance(p, str) and _is_url(p):
            out.extend(_expand_url(p))
        else:
            out.extend(expand_paths([p]))
    return out


def _expand_url(url: str) -> list[str]:
    try:
        import fsspec
    except ImportError as exc:  # pragma: no cover - fsspec is a test dependency
        raise ImportError(f"reading {url} needs fsspec: pip install 'tfrecordkit[remote]'") from exc
    if not set("*?[") & set(url):
        return [url]
    fs, _ = fsspec.core.url_to_fs(url)
    protocol = url.split("://", 1)[0]
    matches = sorted(fs.glob(url))
    if not matches:
        raise FileNotFoundError(2, "no files match the pattern", url)
    return [m if "://" in m else f"{protocol}://{m.lstrip('/')}" for m in matches]


@dataclass(frozen=True)
class _Source:
    files: tuple[str, ...]
    files_level: bool
    compression: str | None
    verify: bool
    on_error: Any
    max_record_bytes: int | None
    # A split among consumers (DataLoader workers and ranks): (count, index, by_files).
    consumers: tuple[int, int, bool] | None = None


@dataclass
class _Plan:
    file_ops: list[tuple[Any, ...]]
    interleave: dict[str, Any]
    record_ops: list[tuple[Any, ...]]
    schema: Schema | None
    batch: tuple[int, bool] | None
    prefetch: int | None
    python_ops: list[tuple[Any, ...]]
    files_only: bool
    # Image features decoded natively after parsing: (key, options).
    images: list[tuple[str, ImageOptions]] = field(default_factory=list)


class Dataset:
    """A lazily built input pipeline over TFRecord files, in tf.data's vocabulary.

    >>> ds = (tfr.Dataset.list_files("train-*.tfrecord", shuffle=True, seed=0)  # doctest: +SKIP
    ...       .interleave(cycle_length=4, block_length=16)
    ...       .parse({"label": tfr.FixedLen([], "int64")})
    ...       .shuffle(10_000, seed=1).batch(128).prefetch(tfr.AUTOTUNE))
    >>> for batch in ds:  # doctest: +SKIP
    ...     train_step(batch["label"])

    Iterating yields file names (before ``interleave``), records as ``bytes``, parsed
    Examples as dicts of NumPy arrays, or batches of those; a batch of parsed Examples is
    what :func:`parse_examples` returns. Each iteration is one epoch; seeded shuffles give
    a different order every epoch, the same sequence of orders every run.
    """

    def __init__(self, source: _Source, ops: tuple[tuple[Any, ...], ...] = ()) -> None:
        self._source = source
        self._ops = ops
        self._iterations = 0
        self._compiled: _Plan | None = None

    # -- constructors ------------------------------------------------------------------

    @classmethod
    def list_files(
        cls,
        pattern: Paths,
        shuffle: bool = False,
        seed: int | None = None,
        *,
        compression: str | None = "auto",
        verify: bool = True,
        on_error: OnError = "raise",
        max_record_bytes: int | None = None,
    ) -> Dataset:
        """The files matching ``pattern`` (a glob, a path, a URL, or a list of them),
        sorted, optionally shuffled with ``seed``. Read them with :meth:`interleave`.

        ``on_error`` decides what damaged or unparsable records do: ``"raise"`` (the
        default), ``"skip"``, ``"warn"``, or a callable given each error.
        """
        ds = cls(_source(pattern, True, compression, verify, on_error, max_record_bytes))
        if shuffle:
            ds = ds._then("shuffle", max(1, len(ds._source.files)), seed)
        return ds

    @classmethod
    def from_files(
        cls,
        paths: Paths,
        *,
        compression: str | None = "auto",
        verify: bool = True,
        on_error: OnError = "raise",
        max_record_bytes: int | None = None,
    ) -> Dataset:
        """The records of ``paths``, one file after another (as ``tf.data.TFRecordDataset``)."""
        return cls(_source(paths, False, compression, verify, on_error, max_record_bytes))

    # -- transformations ---------------------------------------------------------------

    def _then(self, name: str, *args: Any) -> Dataset:
        ds = Dataset(self._source, (*self._ops, (name, *args)))
        ds._compile()
        return ds

    def interleave(
        self,
        cycle_length: int = AUTOTUNE,
        block_length: int = 1,
        num_parallel_calls: int | None = AUTOTUNE,
        deterministic: bool = True,
    ) -> Dataset:
        """Reads the files, ``cycle_length`` at a time, ``block_length`` records from each
        in turn. Each open file is read on its own native thread. With
        ``deterministic=False`` records come from whichever file has them ready."""
        _check_count("cycle_length", cycle_length, allow_autotune=True)
        _check_count("block_length", block_length)
        cycle = _cpus() if cycle_length == AUTOTUNE else cycle_length
        return self._then("interleave", cycle, block_length, bool(deterministic))

    def parse(self, schema: Schema | dict[str, Any] | None = None) -> Dataset:
        """Parses each record as a ``tf.train.Example`` with ``schema`` (inferred from the
        first records of the first file when omitted). Batches are parsed in one native
        call each, on worker threads."""
        if schema is None:
            from .schema import infer_schema

            first = self._source.files[:1]
            if not first:
                raise ValueError("cannot infer a schema from no files; pass one")
            schema = infer_schema(list(first) if not _is_url(first[0]) else _fetch_sample(first[0]))
        return self._then("parse", _as_schema(schema))

    def decode_image(
        self,
        key: str,
        channels: int = 3,
        size: int | Sequence[int] | None = None,
        dtype: Any = "float32",
        resize: str = "bilinear",
        *,
        random_crop: bool | Sequence[float] = False,
        crop_ratio: Sequence[float] = DEFAULT_CROP_RATIO,
        random_flip: bool = False,
        seed: int | None = None,
    ) -> Dataset:
        """Decodes the JPEG, PNG or WebP bytes of feature ``key`` into pixels, on the
        pipeline's native threads: ``[height, width, channels]`` per element (a leading
        batch axis when batched), ``float32`` in ``[0, 1]`` or ``uint8``.

        ``size`` resizes as ``tf.image.resize`` (bilinear by default); ``random_crop``
        and ``random_flip`` add the ImageNet training augmentation, drawn per record
        and per epoch (``seed`` makes it repeatable). Batching images needs one shape:
        give a ``size`` when the images differ. Undecodable images follow the
        pipeline's ``on_error``. See :mod:`tfrecordkit.image`.

        >>> ds = (tfr.Dataset.list_files("train-*.tfrecord")  # doctest: +SKIP
        ...       .interleave(cycle_length=tfr.AUTOTUNE, deterministic=False)
        ...       .parse({"image": tfr.FixedLen([], "bytes"), "label": tfr.FixedLen([], "int64")})
        ...       .decode_image("image", size=224)
        ...       .batch(128, drop_remainder=True).prefetch(tfr.AUTOTUNE))
        """
        options = ImageOptions.make(
            channels,
            size,
            dtype,
            resize,
            random_crop=random_crop,
            crop_ratio=crop_ratio,
            random_flip=random_flip,
            seed=seed,
        )
        return self._then("decode_image", str(key), options)

    def map(self, fn: Callable[[Any], Any], num_parallel_calls: int | None = None) -> Dataset:
        """Applies ``fn`` to each element; ``num_parallel_calls`` runs it on that many
        threads (``AUTOTUNE``: one per core), keeping the order. Map after ``batch`` to
        call ``fn`` once per batch."""
        if not callable(fn):
            raise TypeError(f"map needs a callable, not {type(fn).__name__}")
        if num_parallel_calls is not None:
            _check_count("num_parallel_calls", num_parallel_calls, allow_autotune=True)
        return self._then("map", fn, num_parallel_calls)

    def filter(self, predicate: Callable[[Any], Any]) -> Dataset:
        """Keeps the elements for which ``predicate`` is true."""
        if not callable(predicate):
            raise TypeError(f"filter needs a callable, not {type(predicate).__name__}")
        return self._then("filter", predicate)

    def shuffle(self, buffer_size: int, seed: int | None = None) -> Dataset:
        """Shuffles through a buffer of ``buffer_size`` elements, as tf.data does; a new
        order every epoch (a seed makes the sequence of orders repeatable)."""
        _check_count("buffer_size", buffer_size)
        return self._then("shuffle", int(buffer_size), _seed(seed))

    def batch(self, batch_size: int, drop_remainder: bool = False) -> Dataset:
        """Groups ``batch_size`` elements; parsed Examples become dicts of arrays with a
        leading batch axis (``VarLen`` features a :class:`Ragged`)."""
        _check_count("batch_size", batch_size)
        return self._then("batch", int(batch_size), bool(drop_remainder))

    def repeat(self, count: int | None = None) -> Dataset:
        """Repeats the dataset ``count`` times (forever when ``None``); every repetition
        is a new epoch for the shuffles before it."""
        if count is not None and (not isinstance(count, int) or count < 0):
            if count != -1:
                raise ValueError(f"count must be None or a non-negative int, not {count!r}")
            count = None
        return self._then("repeat", count)

    def cache(self, filename: str | None = None) -> Dataset:
        """Keeps the elements of the first complete pass, in memory or in ``filename`` (a
        TFRecord file, reused by later runs while it exists); later passes replay them."""
        return self._then("cache", filename, _CacheHolder(filename))

    def prefetch(self, buffer_size: int = AUTOTUNE) -> Dataset:
        """Prepares up to ``buffer_size`` elements ahead of the consumer."""
        _check_count("buffer_size", buffer_size, allow_autotune=True)
        return self._then("prefetch", 4 if buffer_size == AUTOTUNE else int(buffer_size))

    def take(self, count: int) -> Dataset:
        """The first ``count`` elements."""
        _check_count("count", count, allow_zero=True)
        return self._then("take", int(count))

    def skip(self, count: int) -> Dataset:
        """All but the first ``count`` elements."""
        _check_count("count", count, allow_zero=True)
        return self._then("skip", int(count))

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Every ``num_shards``-th element, starting at ``index``. Before ``interleave``
        this splits the files, after it the records."""
        _check_count("num_shards", num_shards)
        if not isinstance(index, int) or not 0 <= index < num_shards:
            raise ValueError(f"index must be in [0, {num_shards}), not {index!r}")
        return self._then("shard", int(num_shards), index)

    # -- iteration ---------------------------------------------------------------------

    def __iter__(self) -> DatasetIterator:
        epoch = self._iterations
        self._iterations += 1
        return DatasetIterator(self, epoch, 0)

    def iterate(
        self, epoch: int | None = None, state: dict[str, Any] | None = None
    ) -> DatasetIterator:
        """An iterator over epoch ``epoch`` (the next one when omitted), or resumed from
        ``state``, a :meth:`DatasetIterator.state` of the same pipeline.

        A resumed iterator yields exactly what the interrupted one would have yielded
        next; it gets there by running the pipeline again and dropping what was already
        delivered, so the pipeline must be deterministic (seeded shuffles, a
        deterministic interleave).
        """
        if state is not None:
            if state.get("fingerprint") != self._fingerprint():
                raise ValueError("this state was saved from a different pipeline")
            self._check_deterministic()
            return DatasetIterator(self, int(state["epoch"]), int(state["position"]))
        if epoch is None:
            epoch = self._iterations
            self._iterations += 1
        return DatasetIterator(self, epoch, 0)

    def as_numpy_iterator(self) -> DatasetIterator:
        """Iteration as it is: elements are NumPy arrays already (as tf.data's method)."""
        return iter(self)

    @property
    def files(self) -> list[str]:
        """Every file the pipeline may read."""
        return list(self._source.files)

    @property
    def element_schema(self) -> Schema | None:
        """The schema elements are parsed with, when the pipeline parses."""
        return self._compile().schema

    def __repr__(self) -> str:
        names = ".".join(op[0] for op in self._ops)
        return f"<Dataset of {len(self._source.files)} files{'.' if names else ''}{names}>"

    # -- adapters ----------------------------------------------------------------------

    def to_torch(
        self,
        *,
        epoch: int = 0,
        tensors: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
        device: Any = None,
        pin_memory: bool = False,
    ) -> Any:
        """A ``torch.utils.data.IterableDataset`` over this pipeline that splits the work
        among DataLoader workers and ``torch.distributed`` ranks so that every record is
        delivered exactly once per epoch.

        Call it after ``init_process_group`` (or pass ``rank`` and ``world_size``). Use
        ``DataLoader(ds, batch_size=None)`` when the pipeline batches, and
        ``ds.set_epoch(e)`` before each epoch to reshuffle. ``pin_memory=True`` and
        ``device="cuda"`` hand each batch to the GPU asynchronously (iterate in the main
        process: the pipeline's native threads already decode in parallel); send
        ``uint8`` images and normalize them there."""
        from ._torch import TorchDataset

        return TorchDataset(
            self,
            epoch=epoch,
            tensors=tensors,
            rank=rank,
            world_size=world_size,
            device=device,
            pin_memory=pin_memory,
        )

    def to_tf(self, output_signature: Any = None) -> Any:
        """A ``tf.data.Dataset`` yielding this pipeline's elements as tensors (``VarLen``
        features as ``tf.RaggedTensor``). The signature comes from the schema; pass
        ``output_signature`` when ``map`` changes the elements."""
        import tensorflow as tf

        signature = output_signature or _signature_of(self._compile(), tf)

        def generate() -> Iterator[Any]:
            for element in self:
                yield _to_tf(tf, element)

        return tf.data.Dataset.from_generator(generate, output_signature=signature)

    def to_jax(self) -> Iterator[Any]:
        """Iterates with every numeric array placed on JAX's default device."""
        import jax

        for element in self:
            yield _map_arrays(element, jax.device_put)

    # -- internals ---------------------------------------------------------------------

    def _compile(self) -> _Plan:
        if self._compiled is not None:
            return self._compiled
        plan = _Plan([], {}, [], None, None, None, [], self._source.files_level)
        phase = "files" if self._source.files_level else "records"
        if phase == "records":
            plan.interleave = {"cycle": 1, "block": 1, "deterministic": True}
        for op in self._ops:
            name = op[0]
            if phase == "files":
                if name in _FILE_OPS:
                    plan.file_ops.append(op)
                elif name == "interleave":
                    plan.interleave = {"cycle": op[1], "block": op[2], "deterministic": op[3]}
                    plan.files_only = False
                    phase = "records"
                elif name == "prefetch":
                    pass
                else:
                    raise TypeError(
                        f"{name}() needs records, and this dataset holds file names: "
                        "call .interleave() first to read the files"
                    )
            elif phase == "records":
                if name in _RECORD_OPS:
                    plan.record_ops.append(op)
                elif name == "parse" and plan.schema is None:
                    plan.schema = op[1]
                elif name == "parse":
                    raise TypeError("the records are parsed already")
                elif name == "batch":
                    plan.batch = (op[1], op[2])
                    phase = "batched"
                elif name == "decode_image" and plan.schema is not None:
                    _add_image(plan, op[1], op[2])
                elif name == "decode_image":
                    raise TypeError("decode_image() needs parsed Examples: call .parse() first")
                elif name == "prefetch":
                    plan.prefetch = op[1]
                elif name == "interleave":
                    raise TypeError("interleave() reads files; this dataset holds records")
                else:
                    plan.python_ops.append(op)
                    phase = "python"
            elif phase == "batched" and name == "prefetch":
                plan.prefetch = op[1]
            elif phase == "batched" and name == "decode_image" and plan.schema is not None:
                _add_image(plan, op[1], op[2])
            else:
                if name == "interleave":
                    raise TypeError("interleave() reads files; this dataset holds records")
                if name == "parse" and (plan.schema is not None or phase == "batched"):
                    raise TypeError("parse() needs unbatched, unparsed records")
                if name == "decode_image" and plan.schema is None:
                    raise TypeError("decode_image() needs parsed Examples: call .parse() first")
                plan.python_ops.append(op)
                phase = "python"
        self._compiled = plan
        return plan

    def _fingerprint(self) -> str:
        def describe(op: tuple[Any, ...]) -> str:
            parts = [
                a.to_json(sort_keys=True)
                if isinstance(a, Schema)
                else getattr(a, "__qualname__", None) or repr(a)
                for a in op
                if not isinstance(a, _CacheHolder)
            ]
            return "/".join(parts)

        text = json.dumps(
            [list(self._source.files), [describe(op) for op in self._ops]], default=str
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _check_deterministic(self) -> None:
        plan = self._compile()
        if not plan.interleave.get("deterministic", True):
            raise ValueError("a resumable pipeline needs interleave(deterministic=True)")
        for op in self._ops:
            if op[0] == "shuffle" and op[2] is None:
                raise ValueError("a resumable pipeline needs a seed for every shuffle")
            if op[0] == "decode_image" and op[2].augments and op[2].seed is None:
                raise ValueError("a resumable pipeline needs a seed for random image augmentation")

    def _split(self, count: int, index: int) -> Dataset:
        """The part of this pipeline consumer ``index`` of ``count`` reads: a share of the
        files when there are enough of them, otherwise every ``count``-th record."""
        if count == 1:
            return self
        by_files = len(self._source.files) >= count
        # A consumer's cache holds its own share: never one filled by the whole pipeline.
        ops = [
            _own_cache(op, f".{index}-of-{count}") if op[0] == "cache" else op for op in self._ops
        ]
        if not by_files and self._source.files_level:
            # Splitting records needs one file order in every consumer, whichever process
            # made it: an unseeded file shuffle gets a seed from the pipeline itself.
            shared = _mix(int(self._fingerprint(), 16), 0)
            for i, op in enumerate(ops):
                if op[0] == "interleave":
                    break
                if op[0] == "shuffle" and op[2] is None:
                    ops[i] = (op[0], op[1], shared)
        return Dataset(replace(self._source, consumers=(count, index, by_files)), tuple(ops))

    def _elements(self, epoch: int) -> Iterator[Any]:
        plan = self._compile()
        if plan.files_only:
            return self._file_names(plan, epoch)
        return self._run(plan, len(plan.python_ops), epoch)

    def _file_names(self, plan: _Plan, epoch: int) -> Iterator[str]:
        files, file_ops, _ = self._native_inputs(plan)
        return (files[i] for i in _core.FileOrder(len(files), file_ops, epoch))

    def _native_inputs(
        self, plan: _Plan
    ) -> tuple[list[str], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        files = list(self._source.files)
        file_ops = list(plan.file_ops)
        record_ops = [("cache", op[2].native) if op[0] == "cache" else op for op in plan.record_ops]
        if self._source.consumers is not None:
            count, index, by_files = self._source.consumers
            if by_files:
                file_ops.insert(0, ("shard", count, index))
            else:
                record_ops.insert(0, ("shard", count, index))
        return files, file_ops, record_ops

    def _run(self, plan: _Plan, upto: int, epoch: int) -> Iterator[Any]:
        """The elements after the first ``upto`` Python stages."""
        if upto == 0:
            return self._native(plan, epoch)
        op = plan.python_ops[upto - 1]
        name = op[0]
        upstream = lambda e=epoch: self._run(plan, upto - 1, e)  # noqa: E731
        if name == "repeat":
            return _repeat(upstream, op[1], epoch)
        it = upstream()
        if name == "map":
            return _map(it, op[1], op[2])
        if name == "filter":
            return (x for x in it if op[1](x))
        if name == "shuffle":
            return _shuffle(it, op[1], op[2], _mix(epoch, upto))
        if name == "batch":
            return _batch(it, op[1], op[2])
        if name == "take":
            return itertools.islice(it, op[1])
        if name == "skip":
            return itertools.islice(it, op[1], None)
        if name == "shard":
            return itertools.islice(it, op[2], None, op[1])
        if name == "cache":
            return op[2].python(it)
        if name == "prefetch":
            return _prefetch(it, op[1])
        if name == "parse":
            return _parse(it, op[1])
        if name == "decode_image":
            return _decode_images(it, op[1], op[2], epoch)
        raise AssertionError(name)  # pragma: no cover

    def _native(self, plan: _Plan, epoch: int) -> Iterator[Any]:
        src = self._source
        files, file_ops, record_ops = self._native_inputs(plan)
        interleave = plan.interleave
        deterministic = interleave["deterministic"]
        if src.consumers is not None and not src.consumers[2]:
            # Consumers splitting records must all see them in the same order.
            deterministic = True
        schema = plan.schema
        batched = plan.batch is not None
        unit = plan.batch[0] if plan.batch else _UNIT
        if (
            schema is not None
            and not batched
            and any(isinstance(s, FixedLenSequence) for s in schema.values())
        ):
            # Sequence features are padded to their batch's longest: parse one at a time.
            unit = 1
        if not batched and any(o.size is None or o.channels == 0 for _, o in plan.images):
            # Images that keep their own shape cannot share an array.
            unit = 1
        policy = src.on_error
        # FixedLenSequence batches are padded to their own longest row, so short ones
        # cannot be joined: they are delivered as they are.
        refill = schema is None or not any(isinstance(s, FixedLenSequence) for s in schema.values())
        # When records may be skipped, a last short unit may still fill a batch: the
        # remainder is dropped after refilling, not before.
        native_drop = bool(plan.batch and plan.batch[1]) and (policy == "raise" or not refill)
        keys = list(schema) if schema is not None else []
        images = [(keys.index(k), o.native(), o.seed_value()) for k, o in plan.images]
        # The consuming thread parses too; extra workers pay off past two cores. Image
        # decoding is heavy enough for a worker per core, leaving the consumer free.
        workers = _cpus() if images else min(max(_cpus() - 2, 0), 4)
        pipe = _core.Pipeline(
            files,
            compression=src.compression,
            verify=src.verify,
            max_record_bytes=src.max_record_bytes,
            file_ops=file_ops,
            cycle_length=interleave["cycle"],
            block_length=interleave["block"],
            deterministic=deterministic,
            record_ops=record_ops,
            batch_size=unit,
            drop_remainder=native_drop,
            schema=schema.compiled() if schema is not None else None,
            parse_workers=workers,
            prefetch=plan.prefetch or 2,
            continue_on_error=policy != "raise",
            epoch=epoch & _MASK,
            opener=_open_url if any(_is_url(f) for f in files) else None,
            images=images,
        )
        return _units(pipe, policy, keys, plan.batch if refill or not batched else None, batched)


def _units(
    pipe: _core.Pipeline,
    policy: Any,
    keys: list[str],
    batch: tuple[int, bool] | None,
    batched: bool,
) -> Iterator[Any]:
    """The pipeline's output as elements; one generator, as it runs once per unit.
    ``batch`` (size, drop_remainder) refills batches left short by skipped records."""
    next_unit = pipe.next
    # Records skipped under on_error leave a batch short: as in tf.data, where skipped
    # elements never reach batch(), later records fill it up.
    short: tuple[dict[str, Any], int] | None = None
    try:
        while True:
            try:
                unit = next_unit()
            except TFRecordError as err:
                if policy == "raise":
                    if short is not None:
                        # What was read before the damage goes out first.
                        yield short[0]
                    raise
                apply_on_error(err, policy, "bad record", stacklevel=2)
                continue
            if unit is None:
                break
            if isinstance(unit, list):
                if batched:
                    yield _object_array(unit)
                else:
                    yield from unit
                continue
            n, parsed = unit
            columns = {}
            for key, (values, shape, splits) in zip(keys, parsed, strict=True):
                columns[key] = values.reshape(shape) if splits is None else Ragged(values, splits)
            if not batched:
                yield from _unbatch(columns, n)
            elif batch is None or (short is None and n == batch[0]):
                yield columns
            else:
                if short is not None:
                    columns, n = _join(short[0], columns), short[1] + n
                size = batch[0]
                while n >= size:
                    yield _rows(columns, 0, size)
                    columns, n = _rows(columns, size, n), n - size
                short = (columns, n) if n else None
        if short is not None and batch is not None and not batch[1]:
            yield short[0]
    finally:
        pipe.close()


def _rows(columns: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
    """Rows ``start:stop`` of a parsed batch."""
    out: dict[str, Any] = {}
    for key, v in columns.items():
        if isinstance(v, Ragged):
            splits = v.row_splits[start : stop + 1]
            out[key] = Ragged(v.values[splits[0] : splits[-1]], splits - splits[0])
        else:
            out[key] = v[start:stop]
    return out


def _join(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two parsed batches as one."""
    out: dict[str, Any] = {}
    for key, x in a.items():
        y = b[key]
        if isinstance(x, Ragged):
            splits = np.concatenate(
                [x.row_splits, y.row_splits[1:] - y.row_splits[0] + x.row_splits[-1]]
            )
            out[key] = Ragged(np.concatenate([x.values, y.values]), splits)
        else:
            out[key] = np.concatenate([x, y])
    return out


def _unbatch(columns: dict[str, Any], n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {k: v[i] for k, v in columns.items()}


class DatasetIterator(Iterator[Any]):
    """Iterates one epoch of a :class:`Dataset`; :meth:`state` saves the position."""

    def __init__(self, dataset: Dataset, epoch: int, position: int) -> None:
        self._dataset = dataset
        self.epoch = epoch
        self.position = 0
        self._it = dataset._elements(epoch)
        for _ in range(position):
            try:
                next(self._it)
            except StopIteration:
                raise ValueError(
                    f"cannot resume at element {position}: the epoch has only {self.position}"
                ) from None
            self.position += 1

    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Any:
        element = next(self._it)
        self.position += 1
        return element

    def state(self) -> dict[str, Any]:
        """A small JSON-able position; ``dataset.iterate(state=...)`` resumes from it."""
        self._dataset._check_deterministic()
        return {
            "epoch": self.epoch,
            "position": self.position,
            "fingerprint": self._dataset._fingerprint(),
        }

    def close(self) -> None:
        """Stops the pipeline's threads now rather than when the iterator is collected."""
        close = getattr(self._it, "close", None)
        if close is not None:
            close()


# -- Python stages ---------------------------------------------------------------------


class _CacheHolder:
    """The cache of one ``cache()`` stage, shared by every iteration of the pipeline."""

    def __init__(self, filename: str | None) -> None:
        self.filename = filename
        self.native = _core.PipelineCache(filename)
        self.elements: list[Any] | None = None

    def __repr__(self) -> str:
        return f"cache({self.filename!r})"

    def python(self, it: Iterator[Any]) -> Iterator[Any]:
        if self.elements is not None:
            return iter(self.elements)
        if self.filename is not None and os.path.exists(self.filename):
            return _read_pickles(self.filename)
        return self._fill(it)

    def _fill(self, it: Iterator[Any]) -> Iterator[Any]:
        kept: list[Any] = []
        if self.filename is None:
            for x in it:
                kept.append(x)
                yield x
            self.elements = kept
            return
        tmp = f"{self.filename}.tmp-{os.getpid()}"
        try:
            with open(tmp, "wb") as f:
                for x in it:
                    pickle.dump(x, f, protocol=pickle.HIGHEST_PROTOCOL)
                    yield x
            os.replace(tmp, self.filename)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _own_cache(op: tuple[Any, ...], suffix: str) -> tuple[Any, ...]:
    filename = None if op[1] is None else f"{op[1]}{suffix}"
    return ("cache", filename, _CacheHolder(filename))


def _read_pickles(path: str) -> Iterator[Any]:
    with open(path, "rb") as f:
        while True:
            try:
                yield pickle.load(f)
            except EOFError:
                return


def _repeat(
    upstream: Callable[[int], Iterator[Any]], count: int | None, epoch: int
) -> Iterator[Any]:
    for e in itertools.count() if count is None else range(count):
        produced = False
        for x in upstream(_mix(epoch, e) if e else epoch):
            produced = True
            yield x
        if not produced:
            return


def _map(it: Iterator[Any], fn: Callable[[Any], Any], parallel: int | None) -> Iterator[Any]:
    if parallel is None or parallel == 1:
        yield from map(fn, it)
        return
    workers = _cpus() if parallel == AUTOTUNE else parallel
    with ThreadPoolExecutor(workers, thread_name_prefix="tfrecordkit-map") as pool:
        pending: deque[Any] = deque()
        for x in it:
            pending.append(pool.submit(fn, x))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _shuffle(it: Iterator[Any], size: int, seed: int | None, salt: int) -> Iterator[Any]:
    rng = np.random.default_rng(None if seed is None else [seed & _MASK, salt])
    buffer: list[Any] = []
    for x in it:
        if len(buffer) < size:
            buffer.append(x)
            continue
        i = int(rng.integers(size))
        yield buffer[i]
        buffer[i] = x
    while buffer:
        i = int(rng.integers(len(buffer)))
        buffer[i], buffer[-1] = buffer[-1], buffer[i]
        yield buffer.pop()


def _batch(it: Iterator[Any], size: int, drop_remainder: bool) -> Iterator[Any]:
    while True:
        chunk = list(itertools.islice(it, size))
        if not chunk or (drop_remainder and len(chunk) < size):
            return
        yield stack(chunk)


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
        return _object_array(elements)
    arrays = [np.asarray(e) for e in elements]
    if all(a.shape == arrays[0].shape for a in arrays):
        return np.stack(arrays)
    if all(a.ndim == 1 for a in arrays):
        splits = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in arrays], out=splits[1:])
        return Ragged(np.concatenate(arrays), splits)
    return list(elements)


def _object_array(items: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _prefetch(it: Iterator[Any], size: int) -> Iterator[Any]:
    """Runs ``it`` on a background thread, up to ``size`` elements ahead."""
    q: queue.Queue[Any] = queue.Queue(max(1, size))
    done = object()
    stop = threading.Event()

    def produce() -> None:
        try:
            for x in it:
                while not stop.is_set():
                    try:
                        q.put((x, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put((done, None))
        except BaseException as err:  # handed to the consumer
            q.put((done, err))

    thread = threading.Thread(target=produce, name="tfrecordkit-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            x, err = q.get()
            if x is done:
                if err is not None:
                    raise err
                return
            yield x
    finally:
        stop.set()


def _parse(it: Iterator[Any], schema: Schema) -> Iterator[dict[str, Any]]:
    from .schema import parse_examples

    while True:
        chunk = list(itertools.islice(it, _UNIT))
        if not chunk:
            return
        yield from _unbatch(parse_examples(chunk, schema), len(chunk))


def _add_image(plan: _Plan, key: str, options: ImageOptions) -> None:
    schema = plan.schema
    assert schema is not None
    spec = schema.get(key)
    if spec is None:
        raise SchemaError(f"decode_image({key!r}): the schema has no feature {key!r}")
    if not isinstance(spec, FixedLen) or spec.dtype != "bytes" or list(spec.shape) != []:
        raise SchemaError(
            f"decode_image({key!r}) needs a FixedLen([], 'bytes') feature, not {spec!r}"
        )
    if any(k == key for k, _ in plan.images):
        raise TypeError(f"feature {key!r} is decoded already")
    plan.images.append((key, options))


def _decode_images(it: Iterator[Any], key: str, options: ImageOptions, epoch: int) -> Iterator[Any]:
    """``decode_image`` after Python stages: each element (or batch) in one native call."""
    from .image import decode_with

    for n, element in enumerate(it):
        if not isinstance(element, dict) or key not in element:
            raise TypeError(f"decode_image({key!r}) needs dict elements with that key")
        value = element[key]
        salt = _mix(epoch, n)
        if isinstance(value, (bytes, bytearray, memoryview)):
            pixels = decode_with(options, [bytes(value)], salt)[0]
        else:
            pixels = decode_with(options, list(value), salt)
        yield {**element, key: pixels}


def _map_arrays(element: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(element, dict):
        return {k: _map_arrays(v, fn) for k, v in element.items()}
    if isinstance(element, tuple):
        return tuple(_map_arrays(v, fn) for v in element)
    if isinstance(element, np.ndarray) and element.dtype != object:
        return fn(element)
    return element


def _to_tf(tf: Any, element: Any) -> Any:
    if isinstance(element, dict):
        return {k: _to_tf(tf, v) for k, v in element.items()}
    if isinstance(element, Ragged):
        return tf.RaggedTensor.from_row_splits(element.values, element.row_splits)
    return element


def _tf_dtype(tf: Any, dtype: str) -> Any:
    return {"int64": tf.int64, "float32": tf.float32, "bytes": tf.string}[dtype]


def _seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, not {seed!r}")
    return int(seed) & _MASK


def _check_count(
    name: str, value: Any, allow_autotune: bool = False, allow_zero: bool = False
) -> None:
    if allow_autotune and value == AUTOTUNE:
        return
    low = 0 if allow_zero else 1
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, not {value!r}")


def _source(
    paths: Paths,
    files_level: bool,
    compression: str | None,
    verify: bool,
    on_error: Any,
    max_record_bytes: int | None,
) -> _Source:
    check_on_error(on_error)
    return _Source(
        tuple(_expand(paths)), files_level, compression, verify, on_error, max_record_bytes
    )


def _fetch_sample(url: str, limit: int = 1 << 20) -> list[bytes]:
    from .records import read_records

    with _open_url(url) as f:
        data = f.read(limit)
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".tfrecord") as tmp:
        tmp.write(data)
        tmp.flush()
        return list(itertools.islice(read_records(tmp.name, on_error="skip"), 1000))


def _signature_of(plan: _Plan, tf: Any) -> Any:
    if plan.python_ops:
        raise ValueError("map() or filter() changes the elements: pass output_signature")
    batch = None if plan.batch is None else (plan.batch[0] if plan.batch[1] else None)
    lead = [] if plan.batch is None else [batch]
    if plan.schema is None:
        return tf.TensorSpec(lead, tf.string)
    sig = {}
    images = dict(plan.images)
    for key, spec in plan.schema.items():
        if key in images:
            o = images[key]
            h, w = o.size or (None, None)
            sig[key] = tf.TensorSpec([*lead, h, w, o.channels or None], tf.as_dtype(o.dtype))
            continue
        dtype = _tf_dtype(tf, spec.dtype)
        shape = list(getattr(spec, "shape", ()))
        if isinstance(spec, FixedLenSequence):
            sig[key] = tf.TensorSpec([*lead, None, *shape], dtype)
        elif hasattr(spec, "shape"):
            sig[key] = tf.TensorSpec([*lead, *shape], dtype)
        elif plan.batch is None:
            sig[key] = tf.TensorSpec([None], dtype)
        else:
            sig[key] = tf.RaggedTensorSpec(
                [batch, None], dtype, ragged_rank=1, row_splits_dtype=tf.int64
            )
    return sig
