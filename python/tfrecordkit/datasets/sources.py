"""What ``write_dataset`` writes, and how it is cut into shards: a table in memory, a
stream of Arrow record batches or an iterable of rows or records becomes a stream of parts
(runs of table rows, lists of items), each encoded natively, and one cutter deals the
parts to the shards, whatever the data."""

from __future__ import annotations

import itertools
import math
import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from ..errors import SchemaError, SchemaWarning
from ..schema.columns import as_table
from ..schema.features import FixedLen, FixedLenSequence, Schema, VarLen, _as_schema
from ..schema.guess import SchemaGuess
from .manifest import MAX_SHARDS

if TYPE_CHECKING:
    from .writer import Progress, _Shards

__all__ = ["SKIPPED", "source_of", "write_source"]

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


def _plan_shards(
    total_bytes: int, num_shards: int | None, max_bytes: int, hosts: int | None
) -> int:
    if num_shards is not None:
        if not 1 <= num_shards <= MAX_SHARDS:
            raise ValueError(f"num_shards must be 1 to {MAX_SHARDS:,}, not {num_shards}")
        return int(num_shards)
    n = max(1, math.ceil(total_bytes / max_bytes))
    if n > MAX_SHARDS:
        raise ValueError(
            f"{total_bytes:,} bytes in shards of at most {max_bytes:,} would take {n:,} shards, "
            f"more than the {MAX_SHARDS:,} a dataset's names count; raise max_shard_bytes"
        )
    if hosts:
        enough = max(1, total_bytes // _MIN_SHARD_BYTES)
        n = max(n, min(10 * int(hosts), enough, MAX_SHARDS))
    return n


def _arrow_source(data: Any) -> Any:
    """Polars frames as the Arrow tables they hold; a ``pyarrow.dataset.Dataset`` or a
    Hugging Face ``datasets.Dataset`` as a stream of its record batches."""
    module = type(data).__module__
    if module.startswith("polars") and callable(getattr(data, "to_arrow", None)):
        return data.to_arrow()
    if module.startswith("datasets.dataset_dict"):
        raise TypeError(
            f"a DatasetDict of splits {list(data)}: write one split at a time, "
            "write_dataset(data['train'], ...)"
        )
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


def source_of(data: Any, schema: Mapping[str, Any] | None, threads: int, bar: Progress) -> Any:
    """``data`` as a source of parts to write: a table in memory, a stream of Arrow record
    batches, or an iterable of rows or records."""
    data = _arrow_source(data)
    module = type(data).__module__
    if type(data).__name__ == "RecordBatchReader" and module.startswith("pyarrow"):
        return _BatchSource(data, schema, threads > 1, bar)
    if module.startswith(("pandas", "pyarrow")) or isinstance(data, Mapping):
        return _TableSource(data, schema, bar)
    return _IterableSource(data, schema, bar)


def write_source(
    source: Any,
    shards: _Shards,
    num_shards: int | None,
    max_bytes: int,
    hosts: int | None,
    threads: int,
) -> list[dict[str, Any]]:
    """Cuts what ``source`` yields into shards, the same way whatever the data:

    - with its size known up front (a table; a sized iterable given ``num_shards`` or
      ``hosts``): contiguous runs, of about equal bytes or a fixed number of shards;
    - ``num_shards`` without a size: each part dealt across the shards as it comes;
    - otherwise: shards filled one after another up to ``max_bytes``.
    """
    if hosts is not None and num_shards is None and source.total is None:
        raise ValueError(
            "hosts needs the data's size up front: pass a table or a sized collection, "
            "or choose num_shards"
        )
    if isinstance(source, _TableSource):
        bounds = source.bounds(num_shards, max_bytes, hosts)
        return _write_runs_side_by_side(source, shards, bounds, threads)
    if source.total is not None and (num_shards is not None or hosts is not None):
        bounds = source.bounds(num_shards, max_bytes, hosts)
        cursor = _Cursor(source.parts())
        runs = enumerate(itertools.pairwise(bounds))
        infos = [_write_run(shards, k, cursor, b - a) for k, (a, b) in runs]
        if cursor.more():
            raise ValueError("the data yielded more items than its len() said")
        return infos
    if num_shards is not None:
        writers = [shards.new(k) for k in range(_plan_shards(0, num_shards, max_bytes, None))]
        turn = 0
        for part in source.parts():
            turn = part.deal(writers, turn)
        return [shards.finish(w) for w in writers]
    infos: list[dict[str, Any]] = []
    w, filled = None, 0
    for part in source.parts():
        at = 0
        while at < len(part):
            if w is None or filled >= max_bytes:
                # A shard is started for a record, never for skipped items alone.
                at = part.next_record(at)
                if at == len(part):
                    break
                if w is not None:
                    infos.append(shards.finish(w))
                w, filled = shards.new(len(infos)), 0
            taken, size = part.write(w, at, len(part), max_bytes - filled)
            at, filled = at + taken, filled + size
    if w is None:
        w = shards.new(0)
    infos.append(shards.finish(w))
    return infos


def _write_runs_side_by_side(
    source: _TableSource, shards: _Shards, bounds: list[int], threads: int
) -> list[dict[str, Any]]:
    """A table's contiguous runs (shard ``k`` holds rows ``bounds[k]:bounds[k + 1]``),
    each shard written on its own thread, ``threads`` at a time; a run's rows are split
    across threads only when there are fewer shards than threads to keep busy."""
    n = len(bounds) - 1
    workers = min(threads, n)
    within = workers < threads

    def write(k: int) -> dict[str, Any]:
        a, b = bounds[k], bounds[k + 1]
        return _write_run(shards, k, _Cursor(source.parts(a, b, within)), b - a)

    if workers == 1:
        return [write(k) for k in range(n)]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(write, range(n)))


def _write_run(shards: _Shards, k: int, cursor: _Cursor, items: int) -> dict[str, Any]:
    """Shard ``k``, holding the next ``items`` items of ``cursor``."""
    w = shards.new(k)
    if cursor.write(w, items) < items:
        raise ValueError("the data yielded fewer items than its len() said")
    return shards.finish(w)


class _Cursor:
    """Where writing stands in a stream of parts."""

    def __init__(self, parts: Iterator[Any]) -> None:
        self._parts = parts
        self._part: Any = None
        self._at = 0

    def more(self) -> bool:
        """Whether items are left, moving to the part that holds the next one."""
        while self._part is None or self._at == len(self._part):
            self._part, self._at = next(self._parts, None), 0
            if self._part is None:
                return False
        return True

    def write(self, w: Any, items: int) -> int:
        """Writes the next ``items`` items to ``w``: how many there were."""
        done = 0
        while done < items and self.more():
            end = min(len(self._part), self._at + items - done)
            taken, _ = self._part.write(w, self._at, end)
            self._at, done = self._at + taken, done + taken
        return done


class _Columns:
    """Rows ``start:end`` of a table, or of one record batch of a stream, encoded natively
    from the columns (``within``: a run's rows split across threads)."""

    def __init__(self, native: Any, start: int, end: int, within: bool, bar: Progress) -> None:
        self.native, self.start, self.end, self.within, self.bar = native, start, end, within, bar
        self._ends: np.ndarray | None = None

    def __len__(self) -> int:
        return self.end - self.start

    def next_record(self, at: int) -> int:
        return at

    def write(self, w: Any, a: int, b: int, limit: int | None = None) -> tuple[int, int]:
        """Writes rows ``a:b`` of the part, stopping before a row once ``limit`` framed
        bytes are written: the rows taken, and their framed bytes (given a ``limit``)."""
        size = 0
        if limit is not None:
            ends = self._framed_ends()
            # The last row taken is the first one that reaches the limit.
            reach = int(np.searchsorted(ends, int(ends[a]) + limit, side="left"))
            b = min(b, max(a + 1, reach))
            size = int(ends[b]) - int(ends[a])
        w.write_columns(self.native, self.start + a, self.start + b, self.within)
        self.bar.update(b - a)
        return b - a, size

    def deal(self, writers: list[Any], turn: int) -> int:
        """Deals the rows across ``writers`` in contiguous runs of about equal rows, the
        first to ``writers[turn]``: the turn of the next part."""
        n, rows = len(writers), len(self)
        for k in range(n):
            a, b = rows * k // n, rows * (k + 1) // n
            if b > a:
                self.write(writers[(turn + k) % n], a, b)
        return (turn + rows) % n

    def _framed_ends(self) -> np.ndarray:
        """The framed bytes of the part's first ``i`` rows, for every ``i``."""
        if self._ends is None:
            sizes = _core.framed_row_sizes(self.native)[self.start : self.end]
            self._ends = np.zeros(len(sizes) + 1, dtype=np.uint64)
            np.cumsum(sizes, out=self._ends[1:])
        return self._ends


class _TableSource:
    """A table in memory (a dict of columns, a pandas DataFrame, an Arrow table): its size
    is known, and any run of its rows can be written on its own."""

    def __init__(self, data: Any, schema: Mapping[str, Any] | None, bar: Progress) -> None:
        self.table = as_table(data, schema)
        self.native = self.table.native()
        self.total = self.table.rows
        self.bar = bar

    def schema(self) -> Schema:
        return self.table.schema()

    def bounds(self, num_shards: int | None, max_bytes: int, hosts: int | None) -> list[int]:
        """Where the shards' runs of rows start and end: equal row counts for a fixed
        ``num_shards``, else about equal bytes."""
        rows = self.total
        if num_shards is not None:
            n = _plan_shards(0, num_shards, max_bytes, hosts)
            return [rows * k // n for k in range(n + 1)]
        cumulative = np.cumsum(_core.framed_row_sizes(self.native), dtype=np.uint64)
        total = int(cumulative[-1]) if rows else 0
        n = min(_plan_shards(total, None, max_bytes, hosts), max(1, rows))
        targets = [total * k / n for k in range(1, n)]
        cuts = (int(np.searchsorted(cumulative, t, side="right")) for t in targets)
        # A row larger than the limit can make cuts coincide; never write an empty shard.
        return sorted({0, *cuts, rows}) if rows else [0, 0]

    def parts(self, start: int, end: int, within: bool) -> Iterator[_Columns]:
        for a in range(start, end, _CHUNK_ROWS):
            yield _Columns(self.native, a, min(a + _CHUNK_ROWS, end), within, self.bar)


class _BatchSource:
    """A stream of Arrow record batches (a ``pyarrow.RecordBatchReader``), each encoded
    natively as it comes, so that memory holds one batch."""

    total = None

    def __init__(
        self, reader: Any, schema: Mapping[str, Any] | None, within: bool, bar: Progress
    ) -> None:
        self._reader, self._spec, self._within, self._bar = reader, schema, within, bar
        self._schema: Schema | None = None

    def schema(self) -> Schema | None:
        return self._schema

    def parts(self) -> Iterator[_Columns]:
        for batch in self._reader:
            table = as_table(batch, self._spec)
            self._schema = self._schema or table.schema()
            yield _Columns(table.native(), 0, table.rows, self._within, self._bar)


class _IterableSource:
    """An iterable of rows (dicts) or records (bytes), taken a list at a time; sized when
    it has a ``len()``."""

    def __init__(self, data: Any, schema: Mapping[str, Any] | None, bar: Progress) -> None:
        if isinstance(data, (bytes, str)):
            raise TypeError("data must be a table or an iterable of rows or records, not a string")
        self.total = len(data) if hasattr(data, "__len__") else None
        self._spec = schema
        self._items = _Items(data, schema, bar)
        self._lists = self._items.lists()

    def bounds(self, num_shards: int | None, max_bytes: int, hosts: int | None) -> list[int]:
        """Where the shards' runs of items start and end, a fixed number of items each."""
        assert self.total is not None
        if num_shards is None:
            # Enough shards for the hosts needs the size: the collection is in memory
            # already, so its records can be too. Skipped items stay: they keep their
            # places in the runs.
            held = [x if done else self._items.record(x) for xs, done in self._lists for x in xs]
            kept = [r for r in held if r is not SKIPPED]
            num_shards = _plan_shards(sum(len(r) + 16 for r in kept), None, max_bytes, hosts)
            num_shards = min(num_shards, max(1, len(kept)))
            self._lists = iter([(held, True)])
        n = _plan_shards(0, num_shards, max_bytes, None)
        return [self.total * k // n for k in range(n + 1)]

    def parts(self) -> Iterator[_ItemList]:
        for xs, encoded in self._lists:
            yield _ItemList(self._items, xs, encoded)

    def schema(self) -> Schema | None:
        """The schema of the rows written, from every row: the one given, checked against
        them, or the one they show (none where a feature holds values of two types)."""
        items = self._items
        if items.kinds != {"rows"}:
            return Schema(self._spec) if self._spec is not None else None
        guess = SchemaGuess()
        try:
            guess.add_summary(items.seen.rows, items.seen.features())
        except SchemaError as err:
            if self._spec is not None:
                raise SchemaError(f"the rows do not fit the schema: {err}", key=err.key) from None
            warnings.warn(
                f"{err}: the manifest records no schema for these rows",
                SchemaWarning,
                stacklevel=_caller_level(),
            )
            return None
        if self._spec is None:
            return guess.schema()
        schema = Schema(self._spec)
        guess.check(schema)
        return schema


def _caller_level() -> int:
    """The ``stacklevel`` of a warning, given in the caller of this function, that names
    the first frame outside tfrecordkit: the user's call."""
    package = os.path.dirname(os.path.dirname(__file__))
    frame, level = sys._getframe(2), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


class _ItemList:
    """A list of an iterable's items (``SKIPPED`` places among them), encoded natively a
    run at a time."""

    def __init__(self, items: _Items, xs: list[Any], encoded: bool) -> None:
        self.items, self.xs, self.encoded = items, xs, encoded

    def __len__(self) -> int:
        return len(self.xs)

    def next_record(self, at: int) -> int:
        """The place of the first item from ``at`` on that is not ``SKIPPED``."""
        while at < len(self.xs) and self.xs[at] is SKIPPED:
            at += 1
        return at

    def write(self, w: Any, a: int, b: int, limit: int | None = None) -> tuple[int, int]:
        return self.items.write(w, self.xs, self.encoded, a, b, limit)

    def deal(self, writers: list[Any], turn: int) -> int:
        """Deals the records round-robin across ``writers``, the first to
        ``writers[turn]``: the turn of the next list."""
        kept = [x for x in self.xs if x is not SKIPPED]
        n = len(writers)
        for k, w in enumerate(writers):
            mine = kept[(k - turn) % n :: n]
            if mine:
                self.items.write(w, mine, self.encoded)
        return (turn + len(kept)) % n


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
        # What the rows held, feature by feature, as they are encoded.
        self.seen = _core.RowSummary()
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

    def _kind(self, kind: str) -> None:
        """Notes that items of ``kind`` (``"rows"``, ``"bytes"``) came; both are refused."""
        self.kinds.add(kind)
        if len(self.kinds) > 1:
            raise TypeError(
                "the items mix rows (dicts) with serialized records (bytes): write_dataset "
                "writes one or the other; encode the rows (encode_example) to write both"
            )

    def record(self, item: Any) -> Any:
        """``item`` as the record written for it (``SKIPPED`` stays as it is)."""
        if item is SKIPPED:
            return item
        if isinstance(item, (bytes, bytearray, memoryview)):
            if not self.kinds:
                self._bar.counts("records")
            self._kind("bytes")
            record = bytes(item)
        elif isinstance(item, Mapping):
            self._kind("rows")
            row = item if isinstance(item, dict) else dict(item)
            record = _core.encode_row(row, self.typed, self.seen)
            if self._first:
                for key, (kinds, *_) in self.seen.features().items():
                    if len(kinds) == 1:
                        self.typed.setdefault(key, kinds[0])
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
            taken, n, size, raw, rows = w.write_rows(
                items, self.typed, SKIPPED, at, end, left, self.seen
            )
            at, written, records = at + taken, written + size, records + n
            if raw and not encoded:
                self._kind("bytes")
            if rows:
                self._kind("rows")
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
