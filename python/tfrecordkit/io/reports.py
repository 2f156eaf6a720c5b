"""Read reports: what a read or a verification met, per file."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import DataLossError

__all__ = ["Damage", "FileReport", "ReadReport"]


@dataclass
class Damage:
    """One damaged place in a file; ``lost`` is the byte range ``[start, end)`` skipped."""

    offset: int | None
    record_index: int | None
    error: str
    message: str
    lost: tuple[int, int] | None = None

    @classmethod
    def of(cls, err: DataLossError) -> Damage:
        return cls(err.offset, err.record_index, type(err).__name__, err.message, err.lost)


@dataclass
class FileReport:
    """What :func:`verify` found in one file."""

    path: str
    records: int = 0
    damage: list[Damage] = field(default_factory=list)
    failure: str | None = None

    @property
    def ok(self) -> bool:
        """Nothing was damaged and nothing failed."""
        return not self.damage and self.failure is None

    @property
    def foreign(self) -> bool:
        """The file is not a TFRecord file at all (another format's bytes, or text)."""
        return self.records == 0 and any(d.error == "NotTFRecordError" for d in self.damage)

    @property
    def lost_bytes(self) -> int:
        """Bytes skipped to get past damage (where the reader could resynchronize)."""
        return sum(d.lost[1] - d.lost[0] for d in self.damage if d.lost)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (for JSON), with ``ok``."""
        d = asdict(self)
        d["ok"] = self.ok
        return d


@dataclass
class ReadReport:
    """What a read met, per file: pass one as ``read_records(..., report=...)`` to count
    the records read and the damage skipped with ``on_error="skip"`` / ``"warn"``.

    >>> with RecordWriter("r.tfrecord") as w:
    ...     _ = w.write_many([b"a" * 10, b"b" * 10, b"c" * 10])
    >>> from pathlib import Path
    >>> data = bytearray(Path("r.tfrecord").read_bytes())
    >>> data[40] ^= 1  # a byte of record 1's data: its checksum fails
    >>> _ = Path("r.tfrecord").write_bytes(data)
    >>> report = ReadReport()
    >>> records = list(read_records("r.tfrecord", on_error="skip", report=report))
    >>> records, report.records, report.skipped
    ([b'aaaaaaaaaa', b'cccccccccc'], 2, 1)
    """

    files: dict[str, FileReport] = field(default_factory=dict)

    def _file(self, path: str) -> FileReport:
        return self.files.setdefault(path, FileReport(path))

    def note(self, err: DataLossError) -> None:
        """Counts the damage ``err`` names against its file."""
        if err.path is not None:
            self._file(err.path).damage.append(Damage.of(err))

    def count(self, delivered: list[tuple[str, int]]) -> None:
        """Sets each file's records read: ``(path, records)`` pairs."""
        for path, n in delivered:
            self._file(path).records = n

    @property
    def records(self) -> int:
        """Records read, in all files."""
        return sum(f.records for f in self.files.values())

    @property
    def skipped(self) -> int:
        """Damaged places stepped over."""
        return sum(len(f.damage) for f in self.files.values())

    @property
    def lost_bytes(self) -> int:
        """Bytes skipped to get past damage, in all files."""
        return sum(f.lost_bytes for f in self.files.values())

    @property
    def ok(self) -> bool:
        """No file had damage or failed."""
        return all(f.ok for f in self.files.values())

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (for JSON): each file's, and ``ok``."""
        return {"files": [f.to_dict() for f in self.files.values()], "ok": self.ok}
