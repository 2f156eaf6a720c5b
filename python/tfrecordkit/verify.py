"""Checking files for damage."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

from . import _core
from ._paths import Paths, expand_paths
from .errors import DataLossError, TFRecordError
from .reports import Damage, FileReport

__all__ = ["repair", "verify"]


def _scan(
    path: str, compression: str | None, on_batch: Callable[[list[bytes]], None] | None = None
) -> FileReport:
    """Reads one file with resynchronization, noting every damaged place."""
    report = FileReport(path)
    try:
        reader = _core.RecordReader([path], compression, True, None, True)
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
    except (OSError, TFRecordError) as err:
        report.failure = f"{type(err).__name__}: {err}"
    return report


def verify(paths: Paths, *, compression: str | None = "auto") -> list[FileReport]:
    """Reads every record of every file, checking all checksums, and reports damage.

    Damage does not stop the scan: the reader resynchronizes at the next record whose
    checksums hold, and each report lists the damaged places with the byte ranges lost.
    """
    return [_scan(p, compression) for p in expand_paths(paths)]


def repair(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    compression: str | None = "auto",
    output_compression: str | None = "auto",
    overwrite: bool = False,
) -> FileReport:
    """Copies every intact record of ``src`` into a new, valid file ``dst``.

    Damaged records are dropped, the reader resynchronizes past damaged headers and drops a
    torn tail; the returned report says what was kept and what was lost. ``dst`` appears
    only once complete (written atomically); an existing ``dst`` is refused unless
    ``overwrite=True``.
    """
    src, dst = os.fspath(src), os.fspath(dst)
    if not os.path.isfile(src):
        raise FileNotFoundError(errno.ENOENT, "no such file", src)
    if os.path.abspath(src) == os.path.abspath(dst):
        raise ValueError("repair writes a new file; dst must differ from src")
    if os.path.exists(dst) and not overwrite:
        raise FileExistsError(errno.EEXIST, "the output exists; pass overwrite=True", dst)
    writer = _core.RecordWriter(dst, output_compression, None, True, False)
    try:
        report = _scan(src, compression, lambda batch: writer.write_many(batch))
        info = writer.finish()
    except BaseException:
        writer.abort()
        raise
    # A file that appeared at dst meanwhile is another writer's: never replaced silently.
    _core.commit_shard(info["data"], dst, replace=overwrite)
    return report
