"""Checking files for damage."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable

from .. import _core
from ..errors import DataLossError, NotTFRecordError, TFRecordError
from ..io.paths import (
    Paths,
    StorageOptions,
    check_readable,
    exists,
    expand_paths,
    is_url,
    opener_for,
    upload,
)
from ..io.reports import Damage, FileReport

__all__ = ["repair", "verify"]


def _scan(
    path: str,
    compression: str | None,
    on_batch: Callable[[list[bytes]], None] | None = None,
    storage_options: StorageOptions = None,
) -> FileReport:
    """Reads one file with resynchronization, noting every damaged place."""
    report = FileReport(path)
    opener = opener_for([path], storage_options)
    try:
        reader = _core.RecordReader([path], compression, True, None, True, False, opener)
        while True:
            try:
                batch = reader.read_batch(4096)
            except DataLossError as err:
                report.damage.append(Damage.of(err))
                continue
            if not batch:
                break
            report.records += len(batch)
            if on_batch is not None:
                on_batch(batch)
    except TFRecordError as err:
        # Damage the reader cannot resynchronize past. An OSError is no damage: a file
        # that cannot be read (refused, unreachable, missing) raises, naming it.
        report.failure = f"{type(err).__name__}: {err}"
    return report


def verify(
    paths: Paths, *, compression: str | None = "auto", storage_options: StorageOptions = None
) -> list[FileReport]:
    """Reads every record of every file (local paths or URLs), checking all checksums, and
    reports damage.

    Damage does not stop the scan: the reader resynchronizes at the next record whose
    checksums hold, and each report lists the damaged places with the byte ranges lost.
    """
    files = expand_paths(paths, storage_options=storage_options)
    return [_scan(p, compression, None, storage_options) for p in files]


def repair(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    compression: str | None = "auto",
    output_compression: str | None = "auto",
    overwrite: bool = False,
    storage_options: StorageOptions = None,
) -> FileReport:
    """Copies every intact record of ``src`` into a new, valid file ``dst``.

    Damaged records are dropped, the reader resynchronizes past damaged headers and drops a
    torn tail; the returned report says what was kept and what was lost. A source that
    is not a TFRecord file at all (a PNG, a CSV) raises ``NotTFRecordError`` instead, and
    one that looks compressed otherwise than ``compression`` says, with no intact record
    read, ``DataLossError`` (naming the compression to read it with); nothing is written.
    ``dst`` appears only once complete (written atomically); an existing ``dst`` is
    refused unless ``overwrite=True``. Either may be a URL (a URL ``dst`` is written
    locally, then put with no replace unless ``overwrite``).
    """
    # file:// URLs are local paths.
    src, dst = (os.fspath(p).removeprefix("file://") for p in (src, dst))
    options = storage_options
    if not exists(src, options):
        if is_url(src):
            raise FileNotFoundError(errno.ENOENT, "no such file", src)
        if os.path.isdir(src):
            raise IsADirectoryError(errno.EISDIR, "is a directory; repair reads one file", src)
        # Missing or out of reach, each said as it is; a device or a pipe is read as it is.
        check_readable(src)
    if _same(src, dst):
        raise ValueError("repair writes a new file; dst must differ from src")
    if exists(dst, options) and not overwrite:
        raise FileExistsError(errno.EEXIST, "the output exists; pass overwrite=True", dst)
    if is_url(dst):
        with tempfile.TemporaryDirectory(prefix="tfrecordkit-") as local:
            staged = os.path.join(local, dst.rsplit("/", 1)[-1])
            report = repair(
                src,
                staged,
                compression=compression,
                output_compression=output_compression,
                storage_options=options,
            )
            upload(staged, dst, replace=overwrite, storage_options=options)
        return report
    writer = _core.RecordWriter(dst, output_compression, None, True, False, part=True)
    try:
        report = _scan(src, compression, lambda batch: writer.write_many(batch), options)
        if report.foreign:
            raise _nothing_salvaged(src, report.damage[0])
        if report.records == 0 and report.damage and "the file looks" in report.damage[0].message:
            # Read with the wrong compression: an empty file would salvage nothing of it.
            first = report.damage[0]
            raise DataLossError(
                f"no intact record to salvage, nothing written: {first.message}",
                src,
                first.offset,
                first.record_index,
                lost=first.lost,
            )
        info = writer.finish()
    except BaseException:
        writer.abort()
        raise
    # A file that appeared at dst meanwhile is another writer's: never replaced silently.
    _core.commit_shard(info["data"], dst, replace=overwrite)
    return report


def _nothing_salvaged(src: str, first: Damage) -> NotTFRecordError:
    """The error for a source that is not a TFRecord file at all (``report.foreign``):
    its first damage, and no empty file written."""
    return NotTFRecordError(
        f"no intact record to salvage, nothing written: {first.message}",
        src,
        first.offset,
        first.record_index,
        lost=first.lost,
    )


def _same(a: str, b: str) -> bool:
    if is_url(a) or is_url(b):
        return a == b
    return os.path.abspath(a) == os.path.abspath(b)
