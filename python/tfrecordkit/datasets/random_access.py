"""Random access over many files: ``tfr.IndexedDataset``.

A map-style dataset (``len``, ``[i]``, ``__getitems__``) over the records of several files,
through their ``.idx`` / ``.gzi`` sidecars, with a global shuffle (a permutation over all
records, not a buffer) and iteration that can be stopped and resumed exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._renamed import renamed
from ..io.options import ReadOptions
from ..io.paths import Paths, StorageOptions, exists, expand_paths, is_url
from ..schema.features import Schema, parse_example, parse_examples, parsing_schema
from .index import RecordIndex, positions
from .index import build_index as _build_index

__all__ = ["BatchIterator", "IndexedDataset"]

REMOTE_INDEX_FETCHES = 16


class IndexedDataset(Sequence[Any]):
    """The records of ``paths`` by global position: raw bytes, or, with a ``schema``,
    parsed Examples (dicts of arrays).

    Every file needs an index sidecar (written by ``write_dataset``, by
    ``RecordWriter(..., index=True)``, or by ``tfrecordkit index``); ``build_index=True``
    writes missing ones for uncompressed files. Usable as a map-style PyTorch dataset,
    ``DistributedSampler`` included, and as a grain ``RandomAccessDataSource``
    (``grain.MapDataset.source(ds)``, ``grain.DataLoader(data_source=ds, ...)``, batched
    reads included); it pickles for worker processes. URLs (``s3://bucket/train-*``) are
    read by ranged requests, a batch's records of one file fetched together;
    ``storage_options`` go to their filesystem. ``verify`` and ``storage_options`` may come
    as the :class:`~tfrecordkit.ReadOptions` every reader takes (``options=``); its other
    fields do not apply to reads by index.

    >>> ds = IndexedDataset("train-*.tfrecord", schema)  # doctest: +SKIP
    >>> len(ds), ds[12_345]["label"]  # doctest: +SKIP
    >>> batches = grain.MapDataset.source(ds).shuffle(seed=0).batch(32)  # doctest: +SKIP
    """

    def __init__(
        self,
        paths: Paths,
        schema: Mapping[str, Any] | None = None,
        *,
        build_index: bool = False,
        verify: bool = True,
        storage_options: StorageOptions = None,
        options: ReadOptions | None = None,
    ) -> None:
        o = ReadOptions.of(options, verify=verify, storage_options=storage_options)
        verify, storage_options = o.verify, o.storage_options
        self.files = expand_paths(paths, storage_options=storage_options)
        options = storage_options

        def indexed(f: str) -> RecordIndex:
            if build_index and not (exists(f + ".idx", options) or exists(f + ".gzi", options)):
                _build_index(f, storage_options=options)
            return RecordIndex(f, verify=verify, storage_options=options)

        if any(is_url(f) for f in self.files):
            # Each remote index costs a few small requests: fetch them side by side.
            with ThreadPoolExecutor(REMOTE_INDEX_FETCHES) as pool:
                self._indexes = list(pool.map(indexed, self.files))
        else:
            self._indexes = [indexed(f) for f in self.files]
        self._starts = np.cumsum([0, *(len(i) for i in self._indexes)])
        self.schema: Schema | None = (
            None if schema is None else parsing_schema(schema, "IndexedDataset")
        )

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __repr__(self) -> str:
        # Names the data without a memory address: grain's checkpoints compare it.
        n = len(self.files)
        files = f"{n} file{'s' if n != 1 else ''}"
        if n:
            files += f" {self.files[0]!r}" + (f"..{self.files[-1]!r}" if n > 1 else "")
        keys = "" if self.schema is None else f", schema={list(self.schema)!r}"
        return f"IndexedDataset({files}, {len(self)} records{keys})"

    def _record(self, i: int) -> bytes:
        n = len(self)
        k = i + n if i < 0 else i
        if not 0 <= k < n:
            raise IndexError(f"record {i} out of range for {n} records")
        f = int(np.searchsorted(self._starts, k, side="right")) - 1
        return self._indexes[f][k - int(self._starts[f])]

    def __getitem__(self, i: int | slice) -> Any:  # type: ignore[override]
        if isinstance(i, slice):
            return self.__getitems__(list(range(*i.indices(len(self)))))
        record = self._record(int(i))
        return record if self.schema is None else parse_example(record, self.schema)

    def _records(self, indices: Sequence[int]) -> list[bytes]:
        """The records at global ``indices``: one native read per file they fall in."""
        k = positions(indices, len(self))
        files = np.searchsorted(self._starts, k, side="right") - 1
        out: list[bytes] = [b""] * len(k)
        for f in np.unique(files):
            at = np.flatnonzero(files == f)
            records = self._indexes[f].read_many((k[at] - self._starts[f]).tolist())
            for j, record in zip(at.tolist(), records, strict=True):
                out[j] = record
        return out

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        """The items at ``indices`` (PyTorch's batched fetch): each file's records read
        in one native call without the GIL, parsed in one more."""
        records = self._records(indices)
        if self.schema is None:
            return records
        batch = parse_examples(records, self.schema)
        return [{k: v[j] for k, v in batch.items()} for j in range(len(records))]

    def _getitems(self, indices: Sequence[int]) -> list[Any]:
        # grain's batched read (``SupportsBatchedReadRandomAccessDataSource``).
        return self.__getitems__(indices)

    def get_batch(self, indices: Sequence[int]) -> Any:
        """The items at ``indices`` as one batch: a list of bytes, or ``parse_examples``'s
        dict of columns when there is a schema."""
        records = self._records(indices)
        return records if self.schema is None else parse_examples(records, self.schema)

    def permutation(self, seed: int, epoch: int = 0) -> np.ndarray:
        """A global shuffle: the same order for the same ``seed`` and ``epoch``."""
        return np.random.default_rng([seed, epoch]).permutation(len(self))

    def batches(
        self,
        batch_size: int,
        *,
        shuffle: bool = False,
        seed: int = 0,
        epoch: int = 0,
        drop_remainder: bool = False,
        num_shards: int = 1,
        index: int | None = None,
        state: Mapping[str, Any] | None = None,
        shard: int | None = None,
    ) -> BatchIterator:
        """Iterates over batches (see :meth:`get_batch`), resumable from ``.state()``.

        ``num_shards`` / ``index`` give this consumer (a rank or a worker) every
        ``num_shards``-th position of the order, so consumers never read a record twice:
        the same two numbers as ``Dataset.shard`` and ``Dataset.share``. ``shard=`` is
        the deprecated spelling of ``index``.
        """
        why = "one name for the consumer index everywhere"
        index = renamed("batches", "index", index, "shard", shard, why)
        return BatchIterator(
            self, batch_size, shuffle, seed, epoch, drop_remainder, num_shards, index or 0, state
        )


class BatchIterator(Iterator[Any]):
    """Batches of an :class:`IndexedDataset`; ``state()`` is a small JSON-able dict from
    which ``IndexedDataset.batches(..., state=...)`` continues exactly where this stopped."""

    def __init__(
        self,
        ds: IndexedDataset,
        batch_size: int,
        shuffle: bool,
        seed: int,
        epoch: int,
        drop_remainder: bool,
        num_shards: int,
        shard: int,
        state: Mapping[str, Any] | None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if not 0 <= shard < num_shards:
            raise ValueError(f"shard {shard} is not in 0..{num_shards - 1}")
        self.ds = ds
        self.batch_size = batch_size
        self.shuffle, self.seed, self.epoch = shuffle, seed, epoch
        self.drop_remainder = drop_remainder
        self.num_shards, self.shard = num_shards, shard
        self.position = 0
        if state is not None:
            if (state["seed"], state["epoch"], state["shuffle"]) != (seed, epoch, shuffle):
                raise ValueError("the state belongs to another order (seed, epoch or shuffle)")
            self.position = int(state["position"])
        order = ds.permutation(seed, epoch) if shuffle else np.arange(len(ds))
        self._order = order[shard::num_shards]

    def state(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "epoch": self.epoch,
            "shuffle": self.shuffle,
            "position": self.position,
        }

    def __iter__(self) -> BatchIterator:
        return self

    def __next__(self) -> Any:
        left = len(self._order) - self.position
        if left <= 0 or (self.drop_remainder and left < self.batch_size):
            raise StopIteration
        take = self._order[self.position : self.position + self.batch_size]
        self.position += len(take)
        return self.ds.get_batch(take)
