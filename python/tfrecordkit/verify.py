"""Checking files for damage."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from . import _core
from .errors import DataLossError, TFRecordError
from .records import Paths, expand_paths

__all__ = ["Damage", "FileReport", "ReadReport", "repair", "verify"]


@dataclass
class Damage:
    """One damaged place in a file; ``lost`` is the byte range ``[start, end)`` skipped."""

    offset: int | None
    record_index: int | None
    error: str
    message: str
    lost: tuple[int, int] | None = None


@dataclass
class FileReport:
    """What :func:`verify` found in one file."""

    path: str
    records: int = 0
    damage: list[Damage] = field(default_factory=list)
    failure: str | None = None

    @property
    def ok(self) -> bool:
        return not self.damage and self.failure is None

    @property
    def lost_bytes(self) -> int:
        """Bytes skipped to get past damage (where the reader could resynchronize)."""
        return sum(d.lost[1] - d.lost[0] for d in self.damage if d.lost)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ok"] = self.ok
        return d


@dataclass
class ReadReport:
    """What a read met, per file: pass one as ``read_records(..., report=...)`` to count
    the records read and the damage skipped with ``on_error="skip"`` / ``"warn"``.

    >>> report = ReadReport()
    >>> reader = read_records("data/*.tfrecord", on_error="skip", report=report)
    >>> records = list(reader)  # doctest: +SKIP
    >>> report.records, report.skipped, report.lost_bytes  # doctest: +SKIP
    (99998, 2, 212)
    """

    files: dict[str, FileReport] = field(default_factory=dict)

    def _file(self, path: str) -> FileReport:
        return self.files.setdefault(path, FileReport(path))

    def note(self, err: DataLossError) -> None:
        if err.path is not None:
            self._file(err.path).damage.append(
                Damage(err.offset, err.record_index, type(err).__name__, err.message, err.lost)
            )

    def count(self, delivered: list[tuple[str, int]]) -> None:
        for path, n in delivered:
            self._file(path).records = n

    @property
    def records(self) -> int:
        return sum(f.records for f in self.files.values())

    @property
    def skipped(self) -> int:
        """Damaged places stepped over."""
        return sum(len(f.damage) for f in self.files.values())

    @property
    def lost_bytes(self) -> int:
        return sum(f.lost_bytes for f in self.files.values())

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files.values())

    def to_dict(self) -> dict[str, Any]:
        return {"files": [f.to_dict() for f in self.files.values()], "ok": self.ok}


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
                report.damage.append(
                    Damage(err.offset, err.record_index, type(err).__name__, err.message, err.lost)
                )
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
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return report
