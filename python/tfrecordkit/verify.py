"""Checking files for damage."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from . import _core
from .errors import DataLossError, TFRecordError
from .records import Paths, expand_paths

__all__ = ["Damage", "FileReport", "verify"]


@dataclass
class Damage:
    """One damaged place in a file."""

    offset: int | None
    record_index: int | None
    error: str
    message: str


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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ok"] = self.ok
        return d


def _verify_one(path: str, compression: str | None) -> FileReport:
    report = FileReport(path)
    try:
        reader = _core.RecordReader([path], compression, True, None)
        while True:
            try:
                batch = reader.read_batch(4096)
            except DataLossError as err:
                report.damage.append(
                    Damage(err.offset, err.record_index, type(err).__name__, err.message)
                )
                continue
            if not batch:
                break
            report.records += len(batch)
    except (OSError, TFRecordError) as err:
        report.failure = f"{type(err).__name__}: {err}"
    return report


def verify(paths: Paths, *, compression: str | None = "auto") -> list[FileReport]:
    """Reads every record of every file, checking all checksums, and reports damage.

    Damage does not stop the scan: a record whose data checksum fails is reported and
    skipped; damage that makes the rest of a file unreadable is reported once.
    """
    return [_verify_one(p, compression) for p in expand_paths(paths)]
