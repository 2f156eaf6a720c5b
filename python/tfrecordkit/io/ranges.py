"""Byte ranges of large files: several readers (Spark partitions, Ray read tasks, Dask
partitions) share one file through the record offsets of its ``.idx`` sidecar.

A :class:`ByteRange` names bytes of a file, not records: it holds the records that
*begin* in it, so ranges cut anywhere, end to end, read every record exactly once. The
planner (:func:`byte_ranges`) needs only file sizes and the last line of each large
file's sidecar; each reader looks its range up in the sidecar when it starts.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .. import _core
from ..errors import DataLossError, SidecarError
from .paths import (
    PathLike,
    Paths,
    StorageOptions,
    expand_paths,
    file_size,
    read_ranges,
)
from .sidecars import read_sidecar

__all__ = ["ByteRange", "byte_ranges"]

#: Bytes per range that :func:`byte_ranges` aims at.
DEFAULT_RANGE_BYTES = 64 << 20
#: The end of the last range of a file: to the file's end.
TO_END = (1 << 64) - 1
_IDX_TAIL = 64
_COMPRESSED = (".gz", ".gzip", ".zz", ".zlib", ".deflate")


class ByteRange(NamedTuple):
    """The records that begin in bytes ``[start, end)`` of an uncompressed TFRecord file
    with an ``.idx`` sidecar. The readers (:func:`~tfrecordkit.read_records`,
    :func:`~tfrecordkit.read_batches`, :func:`~tfrecordkit.read_arrow`,
    :func:`~tfrecordkit.read_table`) take one wherever they take a path; errors still name
    the file, and each record's offset and number in the whole file.

    >>> ByteRange("train.tfrecord", 0, 64 << 20)
    ByteRange(path='train.tfrecord', start=0, end=67108864)
    """

    path: str
    start: int
    end: int


#: What the readers take: paths, globs, and byte ranges of files.
ReadPaths = Paths | ByteRange | Sequence[PathLike | ByteRange]


def byte_ranges(
    paths: Paths,
    *,
    target_bytes: int = DEFAULT_RANGE_BYTES,
    compression: str | None = "auto",
    storage_options: StorageOptions = None,
) -> list[str | ByteRange]:
    """The files of ``paths``, each file larger than ``target_bytes`` cut into
    :class:`ByteRange`\\ s of about that size, for readers to share.

    A file is cut only where its ``.idx`` sidecar (written by ``write_dataset``,
    ``RecordWriter(index=True)`` or ``tfrecordkit index``) matches it, which one small
    read of the sidecar's end checks; a compressed file, or one without a matching
    sidecar, stays whole.

    >>> parts = byte_ranges("big-*.tfrecord", target_bytes=256 << 20)  # doctest: +SKIP
    >>> tables = [tfr.read_table(p) for p in parts]  # doctest: +SKIP
    """
    out: list[str | ByteRange] = []
    for path in expand_paths(paths, storage_options=storage_options):
        size = file_size(path, storage_options)
        out += cut(path, size, target_bytes, compression, storage_options)
    return out


def cut(
    path: str,
    size: int,
    target_bytes: int,
    compression: str | None = "auto",
    storage_options: StorageOptions = None,
) -> list[str | ByteRange]:
    """:func:`byte_ranges` of one file of ``size`` bytes: ``[path]`` when it stays whole."""
    if target_bytes < 1:
        raise ValueError(f"target_bytes must be at least 1, not {target_bytes}")
    pieces = -(-size // target_bytes)
    if pieces < 2 or not _splittable(path, size, compression, storage_options):
        return [path]
    cuts = [size * k // pieces for k in range(pieces)] + [TO_END]
    return [ByteRange(path, a, b) for a, b in itertools.pairwise(cuts)]


def span_bytes(item: str | ByteRange, size: int) -> int:
    """The bytes ``item`` reads of a file of ``size`` bytes."""
    return size if isinstance(item, str) else min(item.end, size) - item.start


def _splittable(path: str, size: int, compression: str | None, options: StorageOptions) -> bool:
    """Whether ``path`` is uncompressed and its index sidecar ends where the file does."""
    if compression not in (None, "auto") or path.lower().endswith(_COMPRESSED):
        return False
    index = path + ".idx"
    try:
        isize = file_size(index, options)
    except FileNotFoundError:
        return False
    if isize == 0:
        return False
    (tail,) = read_ranges(index, [max(0, isize - _IDX_TAIL)], [isize], options)
    last = tail.split()[-2:]
    try:
        offset, length = (int(v) for v in last)
    except ValueError:
        return False
    return len(last) == 2 and offset + length == size


def index_offsets(path: str, storage_options: StorageOptions) -> np.ndarray:
    """The offsets of the records of ``path``, from its ``.idx`` sidecar."""
    return load_index(path + ".idx", 2, storage_options)[:, 0]


def load_index(path: str, columns: int, options: StorageOptions) -> np.ndarray:
    """The table of numbers of the index sidecar at ``path``, a row per entry; a
    ``DataLossError`` naming it when it is not a table of non-negative numbers, or when
    its entries do not follow one another from the file's first byte: ``offset length``
    per record (``.idx``, each at least a record's 16 bytes of framing), or ``offset length
    first records`` per gzip member (``.gzi``)."""
    try:
        # As long as the file it indexes needs, but never a device or a pipe.
        text = read_sidecar(path, options, limit=None)
    except SidecarError as err:
        raise DataLossError(err.message, path=path) from None
    try:
        table = _core.parse_index(text, columns).reshape(-1, columns)
    except DataLossError as err:
        err.path = path
        raise
    if len(table):
        _check_entries(path, table, columns)
    return table


def _check_entries(path: str, table: np.ndarray, columns: int) -> None:
    offsets, lengths = table[:, 0], table[:, 1]
    starts = np.concatenate(([0], offsets[:-1] + lengths[:-1]))
    bad = np.flatnonzero(offsets != starts)
    if len(bad):
        i = int(bad[0])
        where = "the file's first byte" if i == 0 else "where the entry before it ends"
        raise DataLossError(
            f"index entry {i} starts at byte {int(offsets[i])}, not at byte {int(starts[i])}, "
            f"{where}; rebuild the index",
            path=path,
        )
    least = 16 if columns == 2 else 1
    short = np.flatnonzero(lengths < least)
    if len(short):
        i = int(short[0])
        raise DataLossError(
            f"index entry {i} is {int(lengths[i])} bytes long, shorter than a record; "
            "rebuild the index",
            path=path,
        )
    if columns == 4:
        firsts, counts = table[:, 2], table[:, 3]
        expected = np.concatenate(([0], np.cumsum(counts)[:-1]))
        wrong = np.flatnonzero(firsts != expected)
        if len(wrong):
            i = int(wrong[0])
            raise DataLossError(
                f"index entry {i} says its member's first record is {int(firsts[i])}, not "
                f"{int(expected[i])}; rebuild the index",
                path=path,
            )


def resolve(
    paths: ReadPaths, storage_options: StorageOptions
) -> tuple[list[str], list[tuple[int, int, int] | None] | None]:
    """The files to read, and for each the ``(start, first record, end)`` of its span
    (None: the whole file); no spans at all when no item is a range. A range in which no
    record begins is left out."""
    if isinstance(paths, ByteRange):
        paths = [paths]
    if isinstance(paths, (str, os.PathLike, bytes, bytearray)) or not hasattr(paths, "__iter__"):
        return expand_paths(paths, storage_options=storage_options), None  # type: ignore[arg-type]
    items = list(paths)
    if not any(isinstance(i, ByteRange) for i in items):
        return expand_paths(items, storage_options=storage_options), None  # type: ignore[arg-type]
    files: list[str] = []
    spans: list[tuple[int, int, int] | None] = []
    offsets: dict[str, np.ndarray] = {}
    for item in items:
        if not isinstance(item, ByteRange):
            found = expand_paths(item, storage_options=storage_options)
            files += found
            spans += [None] * len(found)
            continue
        path, start, end = os.fspath(item.path), int(item.start), int(item.end)
        if not 0 <= start <= end:
            raise ValueError(f"a byte range runs from 0 up: {item}")
        if path not in offsets:
            try:
                offsets[path] = index_offsets(path, storage_options)
            except FileNotFoundError:
                raise FileNotFoundError(
                    2, "a byte range is read through the file's index sidecar", path + ".idx"
                ) from None
        at = offsets[path]
        first, stop = np.searchsorted(at, [start, end], side="left").tolist()
        if first == stop:
            continue
        files.append(path)
        spans.append((int(at[first]), first, int(at[stop]) if stop < len(at) else TO_END))
    return files, spans
