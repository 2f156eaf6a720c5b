"""Writing whole datasets: sharded, parallel, atomic, indexed, with a manifest."""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import re
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .. import _core
from ..errors import SchemaError
from ..io.paths import StorageOptions, is_url, remove
from ..io.records import SEEKABLE_MEMBER_BYTES
from ..schema.columns import as_table
from ..schema.example import decode_example, encode_example, typed_empty
from ..schema.features import FixedLen, FixedLenSequence, Schema, VarLen, _as_schema
from ..schema.guess import SchemaGuess
from .commit import DatasetCommit
from .manifest import Manifest, shard_name

__all__ = ["parse_size", "write_dataset"]

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1e3,
    "kb": 1e3,
    "kib": 2**10,
    "m": 1e6,
    "mb": 1e6,
    "mib": 2**20,
    "g": 1e9,
    "gb": 1e9,
    "gib": 2**30,
    "t": 1e12,
    "tb": 1e12,
    "tib": 2**40,
}
# "Large enough" for ten files per host: no shard is made smaller than this to reach that count.
_MIN_SHARD_BYTES = 1 << 20
_CHUNK_ROWS = 65_536
# Rows of an iterable of dicts looked at to describe its schema in the manifest.
_INFER_ROWS = 1000
# Items of an iterable handed to a shard writer at a time: at most this many, and as many
# as hold about _LIST_BYTES once their size is known.
_LIST_ITEMS = 256
_LIST_BYTES = 4 << 20
_END = object()
#: An item of a sized iterable that turned out to hold nothing: it keeps its place in the
#: contiguous runs that ``num_shards`` cuts, and writes no record (conversion yields it for
#: a row whose image would not load).
SKIPPED = object()


def parse_size(size: int | str) -> int:
    """``"128MiB"``, ``"100MB"``, ``"1.5GiB"`` or a number of bytes."""
    if isinstance(size, (int, np.integer)):
        value = int(size)
    else:
        m = re.fullmatch(r"\s*([0-9.]+)\s*([a-zA-Z]*)\s*", str(size))
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"cannot read {size!r} as a size such as '128MiB'")
        value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value <= 0:
        raise ValueError(f"size must be positive, not {size!r}")
    return value


class Progress:
    """A tqdm bar on stderr when asked for and on a terminal, else nothing. It appears
    with the first update, once :meth:`counts` may have named what it counts."""

    def __init__(self, enabled: bool, total: int | None, desc: str, unit: str = "rows") -> None:
        self.enabled, self.total, self.desc, self.unit = enabled, total, desc, unit
        self.bar: Any = None

    def counts(self, unit: str) -> None:
        """Names what the bar counts, once that is known."""
        self.unit = unit

    def update(self, n: int) -> None:
        if self.bar is None and self.enabled:
            self.enabled = False
            try:
                from tqdm.auto import tqdm
            except ImportError:  # pragma: no cover - tqdm is a dependency
                return
            self.bar = tqdm(
                total=self.total, desc=self.desc, unit=f" {self.unit}", disable=None, leave=False
            )
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class _Shards:
    """Open shard writers under temporary names; all renamed together or all removed."""

    def __init__(
        self, prefix: str, compression: str | None, index: bool, member_bytes: int | None
    ) -> None:
        self.prefix = prefix
        self.compression = compression
        self.index = index
        self.member_bytes = member_bytes
        self.done: list[dict[str, Any]] = []
        self.open: list[Any] = []

    def new(self, i: int) -> Any:
        # The name given here only shapes the temporary's name; the final name is given
        # when the shard count is known.
        w = _core.RecordWriter(
            shard_name(self.prefix, i, 0, self.compression),
            self.compression or "none",
            None,
            True,
            self.index,
            self.member_bytes,
        )
        self.open.append(w)
        return w

    def finish(self, w: Any) -> dict[str, Any]:
        info = w.finish()
        self.open.remove(w)
        self.done.append(info)
        return info

    def abort(self) -> None:
        for w in self.open:
            w.abort()
        for info in self.done:
            remove(info["data"])
            remove(info["index"])


class _RemoteShards(_Shards):
    """Shards for a URL prefix: each is written on local disk and uploaded, under a hidden
    temporary name beside the prefix, as soon as it is finished, so local disk holds only
    the shards being written (all of them only when an unsized stream is dealt
    round-robin to a fixed ``num_shards``). The commit moves them to their final names."""

    def __init__(
        self,
        commit: DatasetCommit,
        local_dir: str,
        compression: str | None,
        index: bool,
        member_bytes: int | None,
    ) -> None:
        local_prefix = os.path.join(local_dir, commit.stem)
        super().__init__(local_prefix, compression, index, member_bytes)
        self.commit, self.options = commit, commit.storage_options
        self.numbers = itertools.count()

    def finish(self, w: Any) -> dict[str, Any]:
        info = super().finish(w)
        local = info["data"], info["index"]
        part = self.commit.part_path(f"{next(self.numbers):05d}")
        try:
            # In place: what `done` holds is what an abort removes.
            info.update(self.commit.upload_part(info, part))
        finally:
            remove(local[0])
            remove(local[1])
        return info

    def abort(self) -> None:
        for w in self.open:
            w.abort()
        for info in self.done:
            remove(info["data"], self.options)
            remove(info["index"], self.options)
        # A part uploaded whose sidecar then failed to follow is not in `done`. Best
        # effort: a store that cannot be reached must not hide the error being raised.
        with contextlib.suppress(OSError):
            self.commit.clean_parts()


def _plan_shards(
    total_bytes: int, num_shards: int | None, max_bytes: int, hosts: int | None
) -> int:
    if num_shards is not None:
        if num_shards < 1:
            raise ValueError(f"num_shards must be at least 1, not {num_shards}")
        return int(num_shards)
    n = max(1, math.ceil(total_bytes / max_bytes))
    if hosts:
        enough = max(1, total_bytes // _MIN_SHARD_BYTES)
        n = max(n, min(10 * int(hosts), enough))
    return n


def _write_remote(
    url_prefix: str, data: Any, kwargs: dict[str, Any], options: StorageOptions
) -> Manifest:
    """Writes the dataset to a URL prefix: each shard uploaded under a temporary name as
    it is finished, all moved to their final names at the end, the manifest last (see
    :class:`~tfrecordkit.datasets.commit.DatasetCommit`).

    Object stores cannot rename, so a writer first claims the prefix with an exclusive
    create of ``{prefix}.writing`` (S3's conditional put): of two writers racing for one
    prefix, one claims it and the other raises ``FileExistsError`` before uploading
    anything. The manifest is put the same way, so a finished dataset is never replaced
    without ``overwrite``. A dataset is complete once its manifest exists; a killed writer
    leaves its claim, which ``overwrite=True`` (or removing it) clears.
    """
    import tempfile

    with _commit_of(url_prefix, kwargs, options) as commit:
        with tempfile.TemporaryDirectory(prefix="tfrecordkit-") as local:
            shards = _RemoteShards(
                commit, local, kwargs["compression"], kwargs["index"], kwargs["member_bytes"]
            )
            return _written(data, shards, kwargs, commit)


def _commit_of(prefix: str, kwargs: dict[str, Any], options: StorageOptions) -> DatasetCommit:
    return DatasetCommit(
        prefix,
        compression=kwargs["compression"],
        index=kwargs["index"],
        overwrite=kwargs["overwrite"],
        storage_options=options,
    )


def _written(data: Any, shards: _Shards, kwargs: dict[str, Any], commit: DatasetCommit) -> Manifest:
    """Writes ``data`` to ``shards`` and commits them with their manifest. Any error
    (Ctrl-C included) removes every shard."""
    try:
        infos, schema = _write_all(data, shards, kwargs)
    except BaseException:
        shards.abort()
        raise
    return commit.commit(infos, schema)


def _write_all(data: Any, shards: _Shards, kwargs: dict[str, Any]) -> tuple[list[Any], Any]:
    """Writes ``data`` (any kind ``write_dataset`` takes) to ``shards``: the finished
    shards' infos, in order, and the schema of what was written (when known)."""
    data = _arrow_source(data)
    common = (
        kwargs["schema"],
        kwargs["num_shards"],
        kwargs["max_shard_bytes"],
        kwargs["hosts"],
    )
    if _is_arrow_stream(data):
        return _write_arrow_stream(data, shards, *common, kwargs["progress"])
    if _is_table(data):
        return _write_table(data, shards, *common, kwargs["workers"], kwargs["progress"])
    return _write_stream(data, shards, *common, kwargs["progress"])


def shard_compression(compression: str | None) -> str | None:
    """``compression`` as the shards are written, spelled as the readers and the command
    line spell it: None, ``"none"`` or ``""`` (no compression), ``"gzip"``, ``"zlib"``, in
    any case. ``"auto"`` has nothing to go by here: the shards' names come from it."""
    name = compression.lower() if isinstance(compression, str) else compression
    if name in (None, "", "none"):
        return None
    if name in ("gzip", "zlib"):
        return name
    if name == "auto":
        raise ValueError(
            'compression="auto" reads the compression from a file\'s name, and write_dataset '
            'names its shards after the compression: pass None, "gzip" or "zlib"'
        )
    raise ValueError(f'compression must be None, "gzip" or "zlib", not {compression!r}')


def write_dataset(
    data: Any,
    prefix: str | os.PathLike[str],
    *,
    num_shards: int | None = None,
    max_shard_bytes: int | str = "128MiB",
    hosts: int | None = None,
    compression: str | None = None,
    schema: Mapping[str, Any] | None = None,
    workers: int | None = None,
    index: bool = True,
    overwrite: bool = False,
    progress: bool = True,
    seekable: bool = False,
    storage_options: StorageOptions = None,
) -> Manifest:
    """Writes ``data`` as TFRecord shards ``{prefix}-SSSSS-of-NNNNN.tfrecord`` and a manifest.

    ``data`` is a dict of NumPy columns, a pandas DataFrame, a pyarrow Table, a Polars
    DataFrame, a ``pyarrow.RecordBatchReader``, ``pyarrow.dataset.Dataset`` or Hugging Face
    ``datasets.Dataset`` (streamed a record batch at a time), an iterable of dicts (one
    Example per dict), or an iterable of already-serialized records (bytes).
    Columns become features by dtype (see :func:`tfrecordkit.encode_examples`); ``schema``
    overrides the dtypes inferred. Tables are encoded and written on native threads,
    ``workers`` (default: all cores) shards at a time, with no Python object per row;
    ``workers=1`` uses one thread. Iterables are taken a few MiB of items at a time, and
    their rows encoded natively (as :func:`tfrecordkit.encode_example` encodes a dict),
    after the first thousand, which describe the schema in the manifest.

    Shards: ``num_shards`` fixed, or as many as keep each under ``max_shard_bytes`` and, given
    ``hosts`` (reading machines), at least ten per host when the data is large enough.
    Table rows (and sized iterables) are split into contiguous runs; unsized iterables are
    dealt round-robin across a fixed ``num_shards`` (a stream of record batches: each batch
    in contiguous runs), or fill one shard after another.

    Every shard is written under a temporary name and renamed only when all are complete
    and synced; any error (disk full, Ctrl-C) removes the temporaries and leaves no final
    file. An existing dataset at ``prefix`` is refused unless ``overwrite=True``. A URL
    prefix (``s3://``, ``gs://``, ``memory://``, any fsspec filesystem) gets each shard
    uploaded under a temporary name as soon as it is written (local disk holds only the
    shards in progress), moved to its final name at the end, and the manifest last: there,
    a dataset is complete once its manifest exists, since object stores cannot rename
    atomically; ``storage_options`` (credentials, an endpoint) go to its filesystem.
    ``index=True`` writes ``.idx`` sidecars for uncompressed shards; with
    ``compression="gzip", seekable=True`` shards are written as gzip members of whole records
    (ordinary GZIP to TensorFlow) indexed by ``.gzi`` sidecars, for random access. Returns
    the :class:`Manifest`, also saved as ``{prefix}.manifest.json``.

    >>> columns = {"x": np.arange(1000)}
    >>> manifest = write_dataset(columns, "out/train", num_shards=4)  # doctest: +SKIP
    >>> manifest.records  # doctest: +SKIP
    1000
    """
    prefix = os.fspath(prefix)
    compression = shard_compression(compression)
    if seekable and compression != "gzip":
        raise ValueError('seekable=True needs compression="gzip"')
    kwargs: dict[str, Any] = {
        "num_shards": num_shards,
        "max_shard_bytes": parse_size(max_shard_bytes),
        "hosts": hosts,
        "compression": compression,
        "schema": schema,
        "workers": workers,
        "index": bool(index) and (compression is None or seekable),
        "member_bytes": SEEKABLE_MEMBER_BYTES if seekable else None,
        "overwrite": overwrite,
        "progress": progress,
    }
    if is_url(prefix):
        return _write_remote(prefix, data, kwargs, storage_options)
    with _commit_of(prefix, kwargs, None) as commit:
        shards = _Shards(prefix, compression, kwargs["index"], kwargs["member_bytes"])
        return _written(data, shards, kwargs, commit)


def _arrow_source(data: Any) -> Any:
    """Polars frames as the Arrow tables they hold; a ``pyarrow.dataset.Dataset`` or a
    Hugging Face ``datasets.Dataset`` as a stream of its record batches."""
    module = type(data).__module__
    if module.startswith("polars") and callable(getattr(data, "to_arrow", None)):
        return data.to_arrow()
    if module.startswith("datasets.arrow_dataset"):
        import pyarrow as pa

        # Its rows as they are now (after select, shuffle, filter), a batch at a time.
        tables = data.with_format("arrow").iter(batch_size=_CHUNK_ROWS)
        batches = (b for t in tables for b in t.to_batches())
        return pa.RecordBatchReader.from_batches(data.features.arrow_schema, batches)
    if module.startswith("pyarrow"):
        import pyarrow as pa
        import pyarrow.dataset as pads

        if isinstance(data, pads.Dataset):
            return pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
    return data


def _is_arrow_stream(data: Any) -> bool:
    return type(data).__name__ == "RecordBatchReader" and type(data).__module__.startswith(
        "pyarrow"
    )


def _write_arrow_stream(data, shards, schema, num_shards, max_bytes, hosts, progress):
    """Writes a ``pyarrow.RecordBatchReader`` a record batch at a time, each encoded and
    written natively (no Python object per row), so memory holds one batch. With
    ``num_shards``, each batch is dealt across the shards in contiguous runs of about equal
    rows; otherwise shards fill one after another up to ``max_bytes``."""
    if hosts is not None and num_shards is None:
        raise ValueError(
            "hosts needs the data's size up front: pass a table or a sized collection, "
            "or choose num_shards"
        )
    bar = Progress(progress, None, "writing")
    out_schema = None
    infos: list[dict[str, Any]] = []
    try:
        if num_shards is not None:
            writers = [shards.new(k) for k in range(_plan_shards(0, num_shards, max_bytes, None))]
            n, turn = len(writers), 0
            for batch in data:
                table = as_table(batch, schema)
                out_schema = out_schema or table.schema()
                native, rows = table.native(), table.rows
                for k in range(n):
                    a, b = rows * k // n, rows * (k + 1) // n
                    if b > a:
                        writers[(turn + k) % n].write_columns(native, a, b, False)
                # The next batch's first run goes to the shard after this one's last.
                turn = (turn + rows) % n
                bar.update(rows)
            infos = [shards.finish(w) for w in writers]
        else:
            w, filled = None, 0
            for batch in data:
                table = as_table(batch, schema)
                out_schema = out_schema or table.schema()
                native, rows = table.native(), table.rows
                # A shard takes rows while what it holds is under max_bytes.
                ends = np.cumsum(_core.framed_row_sizes(native), dtype=np.uint64)
                a = 0
                while a < rows:
                    if w is None or filled >= max_bytes:
                        if w is not None:
                            infos.append(shards.finish(w))
                        w, filled = shards.new(len(infos)), 0
                    before = int(ends[a - 1]) if a else 0
                    room = max_bytes - filled + before
                    b = max(a + 1, int(np.searchsorted(ends[a:], room, side="left")) + a + 1)
                    b = min(b, rows)
                    w.write_columns(native, a, b, False)
                    filled += int(ends[b - 1]) - before
                    bar.update(b - a)
                    a = b
            if w is None:
                w = shards.new(0)
            infos.append(shards.finish(w))
    finally:
        bar.close()
    return infos, out_schema


def _is_table(data: Any) -> bool:
    return type(data).__module__.startswith(("pandas", "pyarrow")) or isinstance(data, Mapping)


def _write_table(data, shards, schema, num_shards, max_bytes, hosts, workers, progress):
    table = as_table(data, schema)
    native = table.native()
    if num_shards is not None:
        # Contiguous runs of equal row counts.
        n = _plan_shards(0, num_shards, max_bytes, hosts)
        bounds = [table.rows * k // n for k in range(n + 1)]
    else:
        # Contiguous runs of about equal bytes.
        sizes = _core.framed_row_sizes(native)
        cumulative = np.cumsum(sizes, dtype=np.uint64)
        total = int(cumulative[-1]) if table.rows else 0
        n = min(_plan_shards(total, None, max_bytes, hosts), max(1, table.rows))
        targets = [total * k / n for k in range(1, n)]
        cuts = (int(np.searchsorted(cumulative, t, side="right")) for t in targets)
        # A row larger than the limit can make cuts coincide; never write an empty shard.
        bounds = sorted({0, *cuts, table.rows}) if table.rows else [0, 0]
        n = len(bounds) - 1
    threads = max(1, workers or os.cpu_count() or 1)
    workers = min(threads, n)
    # Shards are written side by side; a shard's rows are split across threads only when
    # there are fewer shards than threads to keep busy.
    within = workers < threads
    bar = Progress(progress, table.rows, "writing")

    def write(k: int) -> dict[str, Any]:
        w = shards.new(k)
        start, end = bounds[k], bounds[k + 1]
        for a in range(start, end, _CHUNK_ROWS):
            b = min(a + _CHUNK_ROWS, end)
            w.write_columns(native, a, b, within)
            bar.update(b - a)
        return shards.finish(w)

    try:
        if workers == 1:
            infos = [write(k) for k in range(n)]
        else:
            with ThreadPoolExecutor(workers) as pool:
                infos = list(pool.map(write, range(n)))
    finally:
        bar.close()
    return infos, table.schema()


class _Items:
    """The items of an iterable given to ``write_dataset``, a list at a time. The first
    ``_INFER_ROWS`` rows are encoded here, so that the manifest can describe their schema
    and an empty list later on gets its feature's kind; the shard writers take the rest
    as they are and encode them natively (``RecordWriter.write_rows``)."""

    def __init__(self, data: Any, schema: Mapping[str, Any] | None, bar: Progress) -> None:
        self._it = iter(data)
        self._bar = bar
        self._first = True
        self._size = _LIST_ITEMS
        self.guess: SchemaGuess | None = SchemaGuess()
        self.kinds: set[str] = set()
        self.rows = 0
        # The type of each feature, from the schema or the rows before: what an empty
        # list in a row is written as.
        self.typed: dict[str, str] = {
            k: spec.dtype
            for k, spec in (_as_schema(schema) if schema is not None else {}).items()
            if isinstance(spec, (FixedLen, VarLen, FixedLenSequence))
        }

    def lists(self) -> Iterator[tuple[list[Any], bool]]:
        """Lists of items, each with whether its items are encoded already; each of at
        most ``_LIST_ITEMS`` items, and of about ``_LIST_BYTES`` once their size is known,
        so that memory holds a few MiB of rows at most."""
        records: list[Any] = []
        size = 0
        while self.rows < _INFER_ROWS and (item := next(self._it, _END)) is not _END:
            records.append(self.record(item))
            size += 0 if records[-1] is SKIPPED else len(records[-1]) + 16
            if len(records) >= _LIST_ITEMS or size >= _LIST_BYTES:
                yield records, True
                records, size = [], 0
        self._first = False
        if records:
            yield records, True
        while items := list(itertools.islice(self._it, self._size)):
            yield items, False

    def record(self, item: Any) -> Any:
        """``item`` as the record written for it (``SKIPPED`` stays as it is)."""
        if item is SKIPPED:
            return item
        if isinstance(item, (bytes, bytearray, memoryview)):
            if not self.kinds:
                self._bar.counts("records")
            self.kinds.add("bytes")
            record = bytes(item)
        elif isinstance(item, Mapping):
            self.kinds.add("rows")
            typed = self.typed
            present = {k: typed_empty(v, typed.get(k)) for k, v in item.items() if v is not None}
            record = encode_example(present)
            if self._first and self.guess is not None:
                try:
                    self.guess.add(decode_example(record))
                except SchemaError:
                    self.guess = None  # features of mixed types: no schema to record
                else:
                    for key, dtype in self.guess.kinds.items():
                        typed.setdefault(key, dtype)
        else:
            raise TypeError(
                f"rows must be dicts or serialized records (bytes), not {type(item).__name__}"
            )
        self.rows += 1
        return record

    def write(
        self,
        w: Any,
        items: list[Any],
        encoded: bool,
        start: int = 0,
        end: int | None = None,
        limit: int | None = None,
    ) -> tuple[int, int]:
        """Writes ``items[start:end]`` to the shard writer ``w``, stopping before a record
        once ``limit`` framed bytes are written: the items taken, and the bytes."""
        end = len(items) if end is None else end
        at, written, records = start, 0, 0
        while at < end and (limit is None or written < limit):
            left = None if limit is None else limit - written
            taken, n, size, raw, rows = w.write_rows(items, self.typed, SKIPPED, at, end, left)
            at, written, records = at + taken, written + size, records + n
            if raw and not encoded:
                self.kinds.add("bytes")
            if rows:
                self.kinds.add("rows")
            if at == end or (limit is not None and written >= limit):
                break
            # An item the native writer does not take (a Mapping that is not a dict, a
            # memoryview): encoded here, or refused.
            record = self.record(items[at])
            w.write(record)
            at, written, records = at + 1, written + len(record) + 16, records + 1
        self._bar.update(records)
        if at > start and written:
            per_item = written / (at - start)
            self._size = max(1, min(_LIST_ITEMS, int(_LIST_BYTES / per_item)))
        return at - start, written


def _write_stream(data, shards, schema, num_shards, max_bytes, hosts, progress):
    if isinstance(data, (bytes, str)):
        raise TypeError("data must be a table or an iterable of rows or records, not a string")
    if hosts is not None and num_shards is None and not hasattr(data, "__len__"):
        raise ValueError(
            "hosts needs the data's size up front: pass a table or a sized collection, "
            "or choose num_shards"
        )
    total = len(data) if hasattr(data, "__len__") else None
    bar = Progress(progress, total, "writing")
    items = _Items(data, schema, bar)
    infos: list[dict[str, Any]] = []
    try:
        if total is not None and (num_shards is not None or hosts is not None):
            lists: Iterator[tuple[list[Any], bool]] = items.lists()
            if num_shards is None:
                # Enough shards for the hosts needs the size: the collection is in memory
                # already, so its records can be too.
                # Skipped items stay: they keep their places in the runs cut below.
                held = [x if encoded else items.record(x) for xs, encoded in lists for x in xs]
                kept = [r for r in held if r is not SKIPPED]
                num_shards = _plan_shards(sum(len(r) + 16 for r in kept), None, max_bytes, hosts)
                num_shards = min(num_shards, max(1, len(kept)))
                lists = iter([(held, True)])
            # Contiguous runs of a known number of items.
            n = _plan_shards(0, num_shards, max_bytes, None)
            bounds = [total * k // n for k in range(n + 1)]
            current: list[Any] = []
            encoded, at = True, 0
            for k in range(n):
                w = shards.new(k)
                need = bounds[k + 1] - bounds[k]
                while need:
                    if at == len(current):
                        following = next(lists, None)
                        if following is None:
                            raise ValueError("the data yielded fewer items than its len() said")
                        (current, encoded), at = following, 0
                    taken, _ = items.write(w, current, encoded, at, min(len(current), at + need))
                    at, need = at + taken, need - taken
                infos.append(shards.finish(w))
            if at < len(current) or next(lists, None) is not None:
                raise ValueError("the data yielded more items than its len() said")
        elif num_shards is not None:
            # Round-robin: the i-th record written goes to shard i % n.
            writers = [shards.new(k) for k in range(_plan_shards(0, num_shards, max_bytes, None))]
            n, i = len(writers), 0
            for xs, encoded in items.lists():
                kept = [x for x in xs if x is not SKIPPED]
                for k, w in enumerate(writers):
                    mine = kept[(k - i) % n :: n]
                    if mine:
                        items.write(w, mine, encoded)
                i += len(kept)
            infos = [shards.finish(w) for w in writers]
        else:
            w, filled = None, 0
            for xs, encoded in items.lists():
                at = 0
                while at < len(xs):
                    if w is None or filled >= max_bytes:
                        # A shard is started for a record, never for skipped items alone.
                        while at < len(xs) and xs[at] is SKIPPED:
                            at += 1
                        if at == len(xs):
                            break
                        if w is not None:
                            infos.append(shards.finish(w))
                        w, filled = shards.new(len(infos)), 0
                    taken, size = items.write(w, xs, encoded, at, None, max_bytes - filled)
                    at, filled = at + taken, filled + size
            if w is None:
                w = shards.new(0)
            infos.append(shards.finish(w))
    finally:
        bar.close()
    guess, kinds = items.guess, items.kinds
    if schema is not None:
        out_schema = Schema(schema)
    elif kinds == {"rows"}:
        out_schema = guess.schema() if guess is not None else None
    else:
        out_schema = None
    return infos, out_schema
