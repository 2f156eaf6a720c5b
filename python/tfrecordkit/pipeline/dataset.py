"""Streaming input pipelines: the tf.data vocabulary, without TensorFlow.

A :class:`Dataset` is a lazy plan of typed stages. Iterating it starts native threads that
read, decompress, check, interleave, shard, cache, shuffle, parse, decode and batch
records, with bounded queues between them; Python runs only the functions given to
``map`` and ``filter``, which the engine calls. See :mod:`.plan` for how the stages are
compiled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields, is_dataclass, replace
from typing import Any

import numpy as np

from .. import _core
from .._renamed import renamed
from ..datasets.index import KnownCounts
from ..image import DEFAULT_CROP_RATIO, ImageOptions
from ..io.options import MAX_PREFETCH, MAX_THREADS, ReadOptions, check_count
from ..io.paths import Paths, StorageOptions, expand_paths, opener_for
from ..io.policy import OnError
from ..schema.features import Schema, _as_schema, parsing_schema
from ..schema.raw import decode_raw
from ..schema.reading import infer_schema
from ..schema.sequence import as_sequence_schema
from ..schema.tensors import parse_tensor, tensor_dtype
from . import plan as _plan
from . import python_stages as _stages
from .iterator import DatasetIterator, state_of
from .plan import (
    Batch,
    Cache,
    DecodeImage,
    Filter,
    Interleave,
    Map,
    Parse,
    ParseSequence,
    Prefetch,
    Source,
    op_name,
)

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Dataset", "DatasetIterator"]

#: Let tfrecordkit pick a parallelism or buffer size, as ``tf.data.AUTOTUNE``.
AUTOTUNE = _stages.AUTOTUNE
#: :meth:`Dataset.cardinality` of an endless dataset and of one of unknown length (as tf.data).
INFINITE_CARDINALITY = _plan.INFINITE
UNKNOWN_CARDINALITY = _plan.UNKNOWN
_MASK = (1 << 64) - 1


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

    def __init__(self, source: Source, ops: tuple[Any, ...] = ()) -> None:
        self._source = source
        self._ops = ops
        self._iterations = 0
        self._compiled: _core.Plan | None = None

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
        resync: bool = False,
        max_record_bytes: int | None = None,
        storage_options: StorageOptions = None,
        options: ReadOptions | None = None,
    ) -> Dataset:
        """The files matching ``pattern`` (a glob, a path, a URL, or a list of them),
        sorted, optionally shuffled with ``seed``. Read them with :meth:`interleave`.

        ``on_error`` decides what damaged or unparsable records do: ``"raise"`` (the
        default), ``"skip"``, ``"warn"``, or a callable given each error.
        ``storage_options`` (credentials, an endpoint) go to the filesystem of URLs. The
        read options are those of every reader (see :class:`~tfrecordkit.ReadOptions`),
        ``report`` aside.
        """
        o = ReadOptions.given(options, locals())
        ds = cls(_source(pattern, True, o))
        if shuffle:
            ds = ds._then(_core.Shuffle(max(1, len(ds._source.files)), _seed(seed)))
        return ds

    @classmethod
    def from_files(
        cls,
        paths: Paths,
        *,
        compression: str | None = "auto",
        verify: bool = True,
        on_error: OnError = "raise",
        resync: bool = False,
        max_record_bytes: int | None = None,
        storage_options: StorageOptions = None,
        options: ReadOptions | None = None,
        buffer_size: int | None = None,
    ) -> Dataset:
        """The records of ``paths``, one file after another (as ``tf.data.TFRecordDataset``),
        read with the options of every reader (see :class:`~tfrecordkit.ReadOptions`),
        ``report`` aside.

        ``buffer_size`` is accepted as ``TFRecordDataset`` takes it, and changes nothing:
        each file is read on a native thread that buffers as it needs (remote files in
        blocks of 4 MiB, two ahead)."""
        if buffer_size is not None:
            check_count("buffer_size", buffer_size, 0)
        o = ReadOptions.given(options, locals())
        return cls(_source(paths, False, o))

    def __getstate__(self) -> dict[str, Any]:
        # The compiled plan is native and made again where the dataset is unpickled.
        return {**self.__dict__, "_compiled": None}

    def _then(self, op: Any) -> Dataset:
        ds = Dataset(self._source, (*self._ops, op))
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
        in turn. Each open file is read on its own native thread; ``num_parallel_calls``
        of them read at once (all ``cycle_length`` with ``AUTOTUNE``, one at a time with
        ``None``, as tf.data's sequential interleave), which changes how fast, never in
        what order. With ``deterministic=False`` records come from whichever file has them
        ready."""
        _check_count("cycle_length", cycle_length, allow_autotune=True, high=MAX_THREADS)
        _check_count("block_length", block_length)
        if num_parallel_calls is not None:
            _check_count("num_parallel_calls", num_parallel_calls, True, high=MAX_THREADS)
        cycle = _stages.cpus() if cycle_length == AUTOTUNE else int(cycle_length)
        if num_parallel_calls == AUTOTUNE:
            reads = 0
        elif num_parallel_calls is None:
            reads = 1
        else:
            reads = 0 if num_parallel_calls >= cycle else int(num_parallel_calls)
        return self._then(Interleave(cycle, int(block_length), bool(deterministic), reads))

    def parse(
        self,
        schema: Schema | dict[str, Any] | None = None,
        sequence_schema: Schema | dict[str, Any] | None = None,
    ) -> Dataset:
        """Parses each record as a ``tf.train.Example`` with ``schema`` (inferred from the
        first records of the files when omitted; one of no features is a ``ValueError``).
        Batches are parsed in one native call each, on worker threads.

        With ``sequence_schema`` the records are ``SequenceExample``s: ``schema`` parses
        their context and ``sequence_schema`` their feature lists, into one dict per
        element (see :func:`tfrecordkit.parse_sequence_example`). An inferred schema of
        SequenceExamples brings its feature lists' schema along.
        """
        if schema is None and sequence_schema is None:
            files = self._source.files
            if not files:
                raise ValueError("cannot infer a schema from no files; pass one")
            opener = self._source.opener
            options = opener.storage_options if opener is not None else None
            # From the first records, in whichever files they are (the first may be empty).
            schema = infer_schema(files, storage_options=options)
            if schema.sequence is None:
                return self._then(Parse(schema))
            sequence_schema = schema.sequence
        if sequence_schema is None:
            return self._then(Parse(parsing_schema(schema, "parse()")))
        context = None if schema is None or not len(schema) else _as_schema(schema)
        lists = as_sequence_schema(sequence_schema)
        both = set(context or ()) & set(lists)
        if both:
            raise ValueError(f"{sorted(both)} name both context features and feature lists")
        return self._then(ParseSequence(context, lists))

    def decode_image(
        self,
        key: str,
        channels: int | None = None,
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
        batch axis when batched), ``float32`` in ``[0, 1]`` or ``uint8``. ``channels``
        is 3 unless given, or unless the dataset's metadata says otherwise (a TFDS
        ``Image`` of shape ``(28, 28, 1)`` read by :func:`tfrecordkit.load` gives 1).

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
        if channels is None:
            channels = (self._source.image_channels or {}).get(key, 3)
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
        return self._then(DecodeImage(str(key), options))

    def parse_tensor(self, key: str, dtype: Any, num_parallel_calls: int | None = None) -> Dataset:
        """Decodes feature ``key``'s ``tf.io.serialize_tensor`` bytes into arrays of
        ``dtype``, as :func:`tfrecordkit.parse_tensor`. After ``batch`` each batch is one
        native call, stacked into one array (the batch's tensors need one shape).
        ``num_parallel_calls`` as :meth:`map`.

        >>> ds = (tfr.Dataset.from_files("embeddings.tfrecord")  # doctest: +SKIP
        ...       .parse({"emb": tfr.FixedLen([], "bytes")})
        ...       .batch(256).parse_tensor("emb", "float32"))
        """
        return self.map(
            _stages.FeatureStep("parse_tensor", key, parse_tensor, dtype=tensor_dtype(dtype)),
            num_parallel_calls,
        )

    def decode_raw(
        self,
        key: str,
        dtype: Any,
        little_endian: bool = True,
        fixed_length: int | None = None,
        num_parallel_calls: int | None = None,
    ) -> Dataset:
        """Reads feature ``key``'s bytes as arrays of ``dtype``, as
        :func:`tfrecordkit.decode_raw` (``tf.io.decode_raw``): after ``batch``, one array
        per batch (the values need one length, or a ``fixed_length``); a ``VarLen`` keeps
        its rows. ``num_parallel_calls`` as :meth:`map`.

        >>> ds = (tfr.Dataset.from_files("audio.tfrecord")  # doctest: +SKIP
        ...       .parse({"pcm": tfr.FixedLen([], "bytes")})
        ...       .batch(64).decode_raw("pcm", "int16", fixed_length=32_000))
        """
        decode_raw(b"", dtype, little_endian, fixed_length)  # checks the arguments now
        step = _stages.FeatureStep(
            "decode_raw",
            key,
            decode_raw,
            dtype=dtype,
            little_endian=little_endian,
            fixed_length=fixed_length,
        )
        return self.map(step, num_parallel_calls)

    def map(self, fn: Callable[[Any], Any], num_parallel_calls: int | None = None) -> Dataset:
        """Applies ``fn`` to each element; ``num_parallel_calls`` runs it on that many
        threads, keeping the order. With ``AUTOTUNE`` it runs on one thread per core when
        that delivers more (``fn`` spending its time in NumPy, I/O or native code, which
        release the GIL) and serially otherwise (a cheap ``fn``, or one holding the GIL),
        trying both ways again every few seconds. The stages after it still run in the
        engine, which calls ``fn``; map after ``batch`` to call it once per batch."""
        if not callable(fn):
            raise TypeError(f"map needs a callable, not {type(fn).__name__}")
        if num_parallel_calls is not None:
            _check_count("num_parallel_calls", num_parallel_calls, True, high=MAX_THREADS)
        return self._then(Map(fn, num_parallel_calls))

    def filter(self, predicate: Callable[[Any], Any]) -> Dataset:
        """Keeps the elements for which ``predicate`` is true."""
        if not callable(predicate):
            raise TypeError(f"filter needs a callable, not {type(predicate).__name__}")
        return self._then(Filter(predicate))

    def shuffle(self, buffer_size: int, seed: int | None = None) -> Dataset:
        """Shuffles through a buffer of ``buffer_size`` elements, as tf.data does; a new
        order every epoch (a seed makes the sequence of orders repeatable)."""
        _check_count("buffer_size", buffer_size)
        return self._then(_core.Shuffle(int(buffer_size), _seed(seed)))

    def batch(
        self, batch_size: int, drop_remainder: bool = False, *, max_bytes: int | None = None
    ) -> Dataset:
        """Groups ``batch_size`` elements; parsed Examples become dicts of arrays with a
        leading batch axis (``VarLen`` features a :class:`Ragged`).

        ``max_bytes`` also ends a batch of records once they hold that many bytes, so that
        memory stays flat whatever the size of a record (images, audio): ``batch_size`` is
        then an upper bound, and the number of batches is not known before they are read.
        It batches records (raw or parsed), so it comes before any ``map``.

        >>> ds = tfr.Dataset.from_files("images-*.tfrecord").parse(schema)  # doctest: +SKIP
        >>> ds.batch(1024, max_bytes=32 << 20).to_arrow()  # doctest: +SKIP
        """
        _check_count("batch_size", batch_size)
        if max_bytes is not None:
            _check_count("max_bytes", max_bytes)
        batch = Batch(
            int(batch_size), bool(drop_remainder), None if max_bytes is None else int(max_bytes)
        )
        last = self._ops[-1] if self._ops else None
        if isinstance(last, ParseSequence) and not last.batched:
            # Batch the records, then parse each batch in one call, padded as one.
            ds = Dataset(self._source, self._ops[:-1])._then(batch)
            return ds._then(replace(last, batched=True))
        return self._then(batch)

    def repeat(self, count: int | None = None) -> Dataset:
        """Repeats the dataset ``count`` times (forever when ``None``); every repetition
        is a new epoch for the shuffles before it."""
        if count is not None and (not isinstance(count, int) or count < 0):
            if count != -1:
                raise ValueError(f"count must be None or a non-negative int, not {count!r}")
            count = None
        _check_count("count", 0 if count is None else count, allow_zero=True)
        return self._then(_core.Repeat(count))

    def cache(self, filename: str | None = None) -> Dataset:
        """Keeps the elements of the first complete pass, in memory or in ``filename`` (a
        local TFRecord file, reused by later runs while it exists); later passes replay them.

        The file holds records, or after a ``map`` the elements in a data-only format
        (never pickle: a file found at ``filename`` is read as data, and one that is not a
        cache raises a ``DataLossError``). It holds dicts, tuples, lists, NumPy arrays and
        scalars, bytes, str, numbers, ``Ragged`` and ``Sparse``; an element of another type
        raises ``TypeError`` when the file is written; cache it without a ``filename``."""
        return self._then(Cache(filename, _stages.CacheStore(filename)))

    def prefetch(self, buffer_size: int = AUTOTUNE) -> Dataset:
        """Prepares up to ``buffer_size`` elements ahead of the consumer. Where batches are
        parsed or decoded on worker threads, each worker also makes one more while those
        wait, so that every worker has work (``AUTOTUNE``: 4)."""
        _check_count("buffer_size", buffer_size, allow_autotune=True, high=MAX_PREFETCH)
        return self._then(Prefetch(4 if buffer_size == AUTOTUNE else int(buffer_size)))

    def take(self, count: int) -> Dataset:
        """The first ``count`` elements."""
        _check_count("count", count, allow_zero=True)
        return self._then(_core.Take(int(count)))

    def skip(self, count: int) -> Dataset:
        """All but the first ``count`` elements."""
        _check_count("count", count, allow_zero=True)
        return self._then(_core.Skip(int(count)))

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Every ``num_shards``-th element, starting at ``index``. Before ``interleave``
        this splits the files, after it the records."""
        _check_count("num_shards", num_shards)
        if not isinstance(index, int) or not 0 <= index < num_shards:
            raise ValueError(f"index must be in [0, {num_shards}), not {index!r}")
        return self._then(_core.Shard(int(num_shards), index))

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
            if epoch is not None:
                raise ValueError("give epoch or state, not both: a state holds its epoch")
            epoch, position = state_of(state)
            if state.get("fingerprint") != self._fingerprint():
                raise ValueError("this state was saved from a different pipeline")
            self._check_deterministic()
            return DatasetIterator(self, epoch, position)
        if epoch is None:
            epoch = self._iterations
            self._iterations += 1
        return DatasetIterator(self, epoch, 0)

    def as_numpy_iterator(self) -> DatasetIterator:
        """Iteration as it is: elements are NumPy arrays already (as tf.data's method)."""
        return iter(self)

    def cardinality(self) -> int:
        """The number of elements in one epoch, as tf.data's ``cardinality()``, known
        without reading the data: from the number of files, and the record counts that
        manifests (``write_dataset``, ``convert``) and ``.idx`` / ``.gzi`` sidecars give.
        ``INFINITE_CARDINALITY`` (-1) after ``repeat()``; ``UNKNOWN_CARDINALITY`` (-2)
        where a file's count is not given, after ``filter``, or when ``on_error`` may skip
        records. ``len(ds)`` is the same number.

        >>> tfr.load("out", "train").batch(32).cardinality()  # doctest: +SKIP
        313
        """
        return self._compile().cardinality(self._source)

    def __len__(self) -> int:
        """:meth:`cardinality`; a ``TypeError`` when it is infinite or unknown, as tf.data."""
        n = self.cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("the dataset is infinite")
        if n < 0:
            raise TypeError(
                "the dataset's length is not known without reading it (a file with no count "
                "in a manifest or index sidecar, a filter(), a shuffled subset of the files, "
                "or an on_error that skips records)"
            )
        return n

    def __bool__(self) -> bool:
        return True

    @property
    def files(self) -> list[str]:
        """Every file the pipeline may read."""
        return list(self._source.files)

    @property
    def element_spec(self) -> Any:
        """What each element holds, as ``tf.data``'s ``element_spec``: an
        :class:`~tfrecordkit.pipeline.plan.ElementSpec` (shape, dtype, ragged) for records, a dict
        of them for parsed Examples (leading ``None`` for batches that may be short);
        ``None`` once ``map`` or ``filter`` may change the elements."""
        return _plan.element_spec(self._compile())

    @property
    def element_schema(self) -> Schema | None:
        """The schema elements are parsed with, when the pipeline parses."""
        return self._compile().schema

    def __repr__(self) -> str:
        names = ".".join(op_name(op) for op in self._ops)
        return f"<Dataset of {len(self._source.files)} files{'.' if names else ''}{names}>"

    # -- sharing among consumers and adapters -----------------------------------------

    def share(self, num_shards: int | None = None, index: int = 0, **old: int) -> Dataset:
        """The part of this pipeline that consumer ``index`` of ``num_shards`` (DataLoader
        workers times distributed ranks) reads, so that together they read every record
        once: a share of the files when there are at least ``num_shards`` of them,
        otherwise every ``num_shards``-th record. A ``shard``, ``skip`` or ``take`` picks
        for all of them: they split what comes after it (the elements, when it follows a
        ``map`` or a ``batch``). The same two numbers as :meth:`shard`,
        ``IndexedDataset.batches`` and :meth:`to_torch` (there ``world_size`` ranks of
        ``num_workers`` DataLoader workers are ``num_shards = world_size * num_workers``
        consumers, rank ``r``'s worker ``w`` being ``index = r * num_workers + w``).

        >>> parts = [ds.share(4, i) for i in range(4)]  # doctest: +SKIP
        """
        unknown = sorted(set(old) - {"count"})
        if unknown:
            raise TypeError(f"share() got an unexpected keyword argument {unknown[0]!r}")
        why = "one name for the consumer count everywhere"
        count = renamed("share", "num_shards", num_shards, "count", old.get("count"), why)
        if count is None:
            raise TypeError("share() missing its argument 'num_shards'")
        _check_count("num_shards", count)
        if not isinstance(index, int) or not 0 <= index < count:
            raise ValueError(f"index must be in [0, {count}), not {index!r}")
        if count == 1:
            return self
        level, whole, _ = self._compile().share(len(self._source.files), count)
        # A consumer's cache holds its own share: never one filled by the whole pipeline.
        suffix = f".{index}-of-{count}"
        ops = [_own_cache(op, suffix) if isinstance(op, Cache) else op for op in self._ops]
        # What every consumer runs over everything comes in one order in all of them,
        # whichever process made it: an unseeded shuffle there gets a seed from the
        # pipeline itself.
        shared = _core.mix_seed(int(self._fingerprint(), 16), 0)
        for i, op in enumerate(ops[:whole]):
            if isinstance(op, _core.Shuffle) and op.seed is None:
                ops[i] = _core.Shuffle(op.buffer_size, shared)
        return Dataset(replace(self._source, consumers=(count, index, level)), tuple(ops))

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

        Call it after ``init_process_group`` (or pass ``rank`` and ``world_size``). Each
        consumer reads its :meth:`share` ``(num_shards, index)``, with ``num_shards =
        world_size * num_workers`` and ``index = rank * num_workers + worker_id``. Use
        ``DataLoader(ds, batch_size=None)`` when the pipeline batches, and
        ``ds.set_epoch(e)`` before each epoch to reshuffle. ``pin_memory=True`` and
        ``device="cuda"`` hand each batch to the GPU asynchronously (iterate in the main
        process: the pipeline's native threads already decode in parallel); send
        ``uint8`` images and normalize them there.

        Under ``torchdata``'s ``StatefulDataLoader``, ``state_dict()`` saves each
        consumer's position and ``load_state_dict()`` resumes the epoch exactly (seeded
        shuffles needed). ``len()`` is this rank's number of elements when
        :meth:`cardinality` knows it, exact without DataLoader workers (with them, each
        worker batches its own share)."""
        from ..integrations.torch import TorchDataset

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
        ``output_signature`` when ``map`` changes the elements. A known
        :meth:`cardinality` is asserted on it, so ``len()`` works there too."""
        from ..integrations.tf import to_tf

        return to_tf(self, output_signature)

    def to_arrow(self, strings: bool | Sequence[str] = False) -> Any:
        """The batches of this parsed pipeline as a ``pyarrow.RecordBatchReader``, one
        record batch per batch, every kind of feature typed as :func:`tfrecordkit.read_arrow`
        types it (bytes as ``large_binary`` or, with ``strings=True`` or for the features
        ``strings`` names, ``large_string``),
        except that ``FixedLenSequence`` rows come padded to their batch's longest, as the
        pipeline gives them. For SequenceExamples use ``read_arrow(sequence_schema=...)``.
        ``batch(n, max_bytes=...)`` bounds each record batch in bytes as well as rows."""
        from ..integrations.arrow_batches import to_arrow

        return to_arrow(self, strings)

    def to_jax(self) -> Iterator[Any]:
        """Iterates with every numeric array placed on JAX's default device."""
        from ..integrations.jax import to_jax

        return to_jax(self)

    # -- internals ---------------------------------------------------------------------

    def _compile(self) -> _core.Plan:
        if self._compiled is None:
            self._compiled = _core.Plan(self._source.files_level, list(self._ops))
        return self._compiled

    def _fingerprint(self) -> str:
        def describe(op: Any) -> str:
            if not is_dataclass(op):
                return repr(op)
            parts = [op_name(op)]
            for f in fields(op):
                a = getattr(op, f.name)
                if isinstance(a, _stages.CacheStore):
                    continue
                parts.append(
                    a.to_json(sort_keys=True)
                    if isinstance(a, Schema)
                    else getattr(a, "__qualname__", None) or repr(a)
                )
            return "/".join(parts)

        text = json.dumps(
            [list(self._source.files), [describe(op) for op in self._ops]], default=str
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _check_deterministic(self) -> None:
        if not self._compile().deterministic:
            raise ValueError("a resumable pipeline needs interleave(deterministic=True)")
        for op in self._ops:
            if isinstance(op, _core.Shuffle) and op.seed is None:
                raise ValueError("a resumable pipeline needs a seed for every shuffle")
            if isinstance(op, DecodeImage) and op.options.augments and op.options.seed is None:
                raise ValueError("a resumable pipeline needs a seed for random image augmentation")

    def _elements(self, epoch: int) -> Iterator[Any]:
        return _plan.elements(self._source, self._compile(), epoch)


def _seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed <= _MASK:
        raise ValueError(f"seed must be an int from 0 to 2**64 - 1, or None, not {seed!r}")
    return int(seed)


def _check_count(
    name: str, value: Any, allow_autotune: bool = False, allow_zero: bool = False, **high: int
) -> None:
    also = (AUTOTUNE,) if allow_autotune else ()
    check_count(name, value, 0 if allow_zero else 1, also=also, **high)


def _source(paths: Paths, files_level: bool, o: ReadOptions) -> Source:
    if o.report is not None:
        raise ValueError(
            "a Dataset fills no ReadReport: count what is skipped with on_error=<a callable>"
        )
    files = tuple(expand_paths(paths, storage_options=o.storage_options))
    opener = opener_for(files, o.storage_options)
    counts = KnownCounts(files, o.storage_options)
    return Source(
        files,
        files_level,
        o.compression,
        o.verify,
        o.on_error,
        o.max_record_bytes,
        resync=o.resync,
        opener=opener,
        counts=counts,
    )


def _own_cache(op: Cache, suffix: str) -> Cache:
    store = op.store.share(suffix)
    return Cache(store.filename, store)
