"""Random access to records through index sidecars.

An uncompressed file's ``{file}.idx`` lists ``offset length`` per record (the format DALI
and the ``tfrecord`` package use); a seekable gzip file's ``{file}.gzi`` lists ``offset
length first_record records`` per gzip member, each member holding whole records.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Any, overload

import numpy as np

from .. import _core
from ..errors import DataLossError, TFRecordError
from ..io.options import ReadOptions
from ..io.paths import (
    Paths,
    StorageOptions,
    basename,
    exists,
    expand_paths,
    file_size,
    is_url,
    opener_for,
    quote,
    read_ranges,
    write_file,
)
from ..io.ranges import load_index
from .manifest import SHARD_RE, Manifest, manifest_path

__all__ = ["RecordIndex", "build_index", "count"]


def _sidecar(path: str, columns: int, options: StorageOptions) -> np.ndarray | None:
    """The table of the index sidecar at ``path``; None when there is none (one read,
    no separate existence check: on object stores each is a request)."""
    try:
        return load_index(path, columns, options)
    except FileNotFoundError:
        return None


class RecordIndex(Sequence[bytes]):
    """The records of one file, by position, through its ``.idx`` or ``.gzi`` sidecar.

    A URL is read with ranged requests, never downloaded whole: one per record, and
    :meth:`read_many` fetches its records together (``cat_ranges``). ``storage_options``
    go to the URL's filesystem.

    >>> index = RecordIndex("train-00000-of-00008.tfrecord")  # doctest: +SKIP
    >>> len(index), index[41] == list(read_records(index.path))[41]  # doctest: +SKIP
    (2500, True)
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        verify: bool = True,
        storage_options: StorageOptions = None,
    ) -> None:
        self.path = os.fspath(path)
        self.verify = verify
        self._options = storage_options
        self._remote = is_url(self.path)
        size = file_size(self.path, storage_options)
        self._member: tuple[int, list[bytes]] | None = None
        self._records = _sidecar(self.path + ".idx", 2, storage_options)
        self._members = None
        if self._records is not None:
            end = int(self._records[-1].sum()) if len(self._records) else 0
            self._length = len(self._records)
        elif (members := _sidecar(self.path + ".gzi", 4, storage_options)) is not None:
            self._members = members
            end = int(self._members[-1, :2].sum()) if len(self._members) else 0
            self._length = int(self._members[:, 3].sum())
            self._firsts = self._members[:, 2]
        else:
            raise FileNotFoundError(
                2, "no .idx or .gzi index beside the file (build one with build_index)", self.path
            )
        if end != size:
            raise DataLossError(
                f"the index describes {end} bytes but the file holds {size}; rebuild it",
                path=self.path,
            )

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...

    def __getitem__(self, i: int | slice) -> bytes | list[bytes]:
        if isinstance(i, slice):
            return self.read_many(range(*i.indices(len(self))))
        n = len(self)
        k = int(i) + n if int(i) < 0 else int(i)
        if not 0 <= k < n:
            raise IndexError(f"record {i} out of range for {n} records")
        if self._records is not None:
            offset, length = self._records[k]
            if self._remote:
                return self._fetch([int(offset)], [int(length)])[0]
            return _core.read_record_at(self.path, int(offset), int(length), self.verify)
        m = int(np.searchsorted(self._firsts, k, side="right")) - 1
        return self._member_records(m)[k - int(self._firsts[m])]

    def _member_records(self, m: int) -> list[bytes]:
        if self._member is None or self._member[0] != m:
            offset, length, _, count = (int(x) for x in self._members[m])
            if self._remote:
                (data,) = read_ranges(self.path, [offset], [offset + length], self._options)
                records = _core.member_records(data, self.path, self.verify)
            else:
                records = _core.read_member(self.path, offset, length, self.verify)
            if len(records) != count:
                raise DataLossError(
                    f"gzip member {m} holds {len(records)} records; the index says {count}",
                    path=self.path,
                    offset=offset,
                )
            self._member = (m, records)
        return self._member[1]

    def read_many(self, indices: Iterable[int]) -> list[bytes]:
        """The records at ``indices``, in that order: read in one native call, without
        the GIL, from an ``.idx``-indexed file."""
        if self._records is None:
            return [self[i] for i in indices]
        at = self._records[positions(indices, len(self))]
        offsets, lengths = at[:, 0].tolist(), at[:, 1].tolist()
        if self._remote:
            return self._fetch(offsets, lengths) if offsets else []
        pairs = list(zip(offsets, lengths, strict=True))
        return _core.read_records_at(self.path, pairs, self.verify)

    def _fetch(self, offsets: list[int], lengths: list[int]) -> list[bytes]:
        """Records of a remote file by ranged requests, fetched together."""
        ends = [o + n for o, n in zip(offsets, lengths, strict=True)]
        framed = read_ranges(self.path, offsets, ends, self._options)
        return _core.unframe_records(framed, offsets, self.path, self.verify)


def positions(indices: Iterable[int], n: int) -> np.ndarray:
    """``indices`` into ``n`` records as an int64 array, negative ones counted from the
    end; ``IndexError`` for any out of range."""
    k = np.fromiter((int(i) for i in indices), dtype=np.int64)
    k = np.where(k < 0, k + n, k)
    bad = (k < 0) | (k >= n)
    if bad.any():
        raise IndexError(f"record {int(k[bad][0])} out of range for {n} records")
    return k


def build_index(path: str | os.PathLike[str], *, storage_options: StorageOptions = None) -> str:
    """Writes ``{path}.idx`` for an uncompressed TFRecord file (checking every record);
    returns the sidecar's path. A URL is streamed once and its index uploaded beside it.
    A compressed file is not: it gets its index as it is written
    (``RecordWriter(..., "gzip", seekable=True, index=True)``), or an uncompressed copy
    (``write_dataset(read_records(path), prefix)``) gets index sidecars."""
    path = os.fspath(path)
    if not is_url(path) and os.path.exists(path) and not os.path.isfile(path):
        # A device or a pipe has no place beside it for a sidecar, nor offsets to keep.
        raise ValueError(f"{path} is not a regular file: only a file's records can be indexed")
    try:
        entries = _core.index_records(path, opener_for([path], storage_options))
    except TFRecordError as err:
        compressed = re.search(r"looks (\w+)-compressed", str(err))
        if compressed is None:
            raise
        raise ValueError(
            f"{path} looks {compressed.group(1)}-compressed: only uncompressed files are "
            "indexed after the fact; an uncompressed copy (tfrecordkit reshard, or "
            "tfr.write_dataset(tfr.read_records(path), prefix)) gets index sidecars, and a "
            "gzip file gets its index as it is "
            'written with RecordWriter(path, "gzip", seekable=True, index=True)'
        ) from err
    target = path + ".idx"
    _check_replaceable_index(target, path, storage_options)
    write_file(
        target, "".join(f"{offset} {length}\n" for offset, length in entries), storage_options
    )
    return target


def _check_replaceable_index(target: str, path: str, storage_options: StorageOptions) -> None:
    """Refuses to replace a file at ``target`` that is not an index (an empty one, or one
    that starts with an ``offset length`` line, is replaced)."""
    if not exists(target, storage_options):
        return
    if is_url(target):
        end = min(256, file_size(target, storage_options))
        first = read_ranges(target, [0], [end], storage_options)[0]
    else:
        with open(target.removeprefix("file://"), "rb") as f:
            first = f.read(256)
    line = first.split(b"\n", 1)[0]
    if first and not re.fullmatch(rb"\d+ \d+", line):
        raise FileExistsError(
            f"{target} exists and is not an index (it starts with "
            f"{quote(line.decode('utf-8', 'replace'))}): indexing {path} writes its sidecar "
            "there and replaces only an index; move that file away first"
        )


def count(
    paths: Paths,
    *,
    compression: str | None = "auto",
    storage_options: StorageOptions = None,
    options: ReadOptions | None = None,
) -> int:
    """Counts the records in one or more TFRecord files (local paths or URLs).

    Answers without reading a file when its dataset manifest (written by
    :func:`write_dataset`) or its ``.idx`` sidecar describes it and agrees with its size
    (for a URL: one small request each, not the shard's bytes); otherwise scans it,
    checking length checksums. ``compression`` and ``storage_options`` may come as the
    :class:`~tfrecordkit.ReadOptions` every reader takes (``options=``); its other fields
    do not apply to a count.

    >>> count("train-*.tfrecord", options=tfr.ReadOptions(storage_options=creds))  # doctest: +SKIP
    """
    o = ReadOptions.of(options, compression=compression, storage_options=storage_options)
    compression, storage_options = o.compression, o.storage_options
    manifests: dict[str, Any] = {}
    total = 0
    files = expand_paths(paths, storage_options=storage_options)
    opener = opener_for(files, storage_options)
    for path in files:
        known = _known_count(path, manifests, storage_options)
        if known is None:
            known = _core.count_records(path, compression, opener)
        total += known
    return total


def _known_count(path: str, manifests: dict[str, Any], options: StorageOptions) -> int | None:
    size = file_size(path, options)
    name = basename(path)
    m = SHARD_RE.match(name)
    if m:
        mpath = manifest_path(path[: len(path) - len(name)] + m.group("prefix"))
        if mpath not in manifests:
            try:
                manifests[mpath] = Manifest.load(mpath, storage_options=options)
            except (OSError, ValueError, KeyError, TypeError):
                manifests[mpath] = None
        manifest = manifests[mpath]
        if manifest is not None:
            for shard in manifest.shards:
                most = _most(size, manifest.compression is not None)
                if shard.file == name and shard.bytes == size and shard.records <= most:
                    return shard.records
    known = _index_count(path + ".idx", size, 2, options)
    return known if known is not None else _index_count(path + ".gzi", size, 4, options)


def trusted(
    claimed: int | None, path: str, options: StorageOptions, compressed: bool = False
) -> int | None:
    """A record count a sidecar claims for the file at ``path``, if the file's bytes can
    hold that many records; ``None`` (not known without reading) otherwise."""
    if claimed is None:
        return None
    try:
        return claimed if claimed <= _most(file_size(path, options), compressed) else None
    except OSError:
        return None


def _most(size: int, compressed: bool = True) -> int:
    """The most records ``size`` bytes of a file can hold: 16 bytes of framing each, or,
    compressed, what deflate expands them to at most (1,032 to 1)."""
    return size * (1032 if compressed else 1) // 16


def _index_count(index: str, size: int, columns: int, options: StorageOptions) -> int | None:
    """Records listed by an index sidecar whose entries end exactly at ``size``: ``offset
    length`` per record (``.idx``), or ``offset length first records`` per gzip member
    (``.gzi``)."""
    try:
        table = load_index(index, columns, options)
    except (OSError, DataLossError):
        return None
    if not len(table):
        return 0 if size == 0 else None
    last = table[-1]
    if int(last[0]) + int(last[1]) != size:
        return None
    return len(table) if columns == 2 else int(table[:, 3].sum())


class KnownCounts:
    """The record count of each of ``files`` as its dataset manifest or index sidecar
    gives it (``None`` where neither does), looked up once, when first asked for: what a
    pipeline's ``cardinality()`` starts from."""

    def __init__(self, files: tuple[str, ...], storage_options: StorageOptions) -> None:
        self._files, self._options = files, storage_options
        self._counts: tuple[int | None, ...] | None = None

    def __call__(self) -> tuple[int | None, ...]:
        if self._counts is None:
            manifests: dict[str, Any] = {}

            def known(path: str) -> int | None:
                try:
                    return _known_count(path, manifests, self._options)
                except (OSError, ValueError):
                    return None

            self._counts = tuple(known(f) for f in self._files)
        return self._counts
