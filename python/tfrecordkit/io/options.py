"""How files are read: one :class:`ReadOptions` value that every reader takes the same way.

>>> opts = ReadOptions(on_error="skip", storage_options={"anon": True})
>>> opts.replace(verify=False).verify
False
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .paths import StorageOptions
from .policy import OnError, check_on_error
from .reports import ReadReport

__all__ = ["ReadOptions"]

#: The spellings of ``compression`` (any case): "none" and "" mean None, as on the CLI.
_COMPRESSIONS = frozenset({"auto", "none", "", "gzip", "zlib"})


@dataclass(frozen=True)
class ReadOptions:
    """How a reader reads its files. Every reader (``read_records``, ``read_batches``,
    ``read_examples``, ``read_arrow`` / ``read_table``, ``infer_schema``,
    ``Dataset.from_files`` / ``list_files``, and for the fields that apply to them
    ``count`` and ``IndexedDataset``) takes one as ``options=``, or the same fields as
    keyword arguments:

    - ``compression``: ``"auto"`` (from the stream and the file name), ``None``,
      ``"gzip"`` or ``"zlib"``;
    - ``verify``: check every record's data checksum (length checksums always are);
    - ``on_error``: what damaged or unparsable records do: ``"raise"``, ``"skip"``,
      ``"warn"``, or a callable given each error;
    - ``resync``: step past damaged headers too, scanning to the next intact record;
    - ``max_record_bytes``: a record longer than this is damage (2 GiB when None);
    - ``report``: a :class:`~tfrecordkit.ReadReport` that counts what was read and skipped;
    - ``storage_options``: credentials and endpoints for URLs (``s3://``...).

    A field given both in ``options`` and as a keyword argument, with different values, is
    a ``TypeError``: one read, one set of options.
    """

    compression: str | None = "auto"
    verify: bool = True
    on_error: OnError = "raise"
    resync: bool = False
    max_record_bytes: int | None = None
    report: ReadReport | None = None
    storage_options: StorageOptions = None

    def __post_init__(self) -> None:
        known = self.compression is None or (
            isinstance(self.compression, str) and self.compression.lower() in _COMPRESSIONS
        )
        if not known:
            raise ValueError(
                f'compression must be "auto", None, "gzip" or "zlib", not {self.compression!r}'
            )
        check_on_error(self.on_error)
        if self.max_record_bytes is not None and self.max_record_bytes <= 0:
            raise ValueError(f"max_record_bytes must be positive, not {self.max_record_bytes}")

    def replace(self, **changes: Any) -> ReadOptions:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def given(cls, options: ReadOptions | None, scope: Mapping[str, Any]) -> ReadOptions:
        """:meth:`of` with the keyword arguments a reader was called with: those of
        ``scope`` (its ``locals()``) that name fields of ``ReadOptions``."""
        names = [f.name for f in dataclasses.fields(cls)]
        return cls.of(options, **{name: scope[name] for name in names if name in scope})

    @classmethod
    def of(cls, options: ReadOptions | None, **keywords: Any) -> ReadOptions:
        """``options`` with the reader's keyword arguments folded in: those left at their
        defaults take the value of ``options``; one given both ways, with two values, is a
        ``TypeError``."""
        if options is None:
            return cls(**keywords)
        if not isinstance(options, ReadOptions):
            raise TypeError(f"options must be a tfr.ReadOptions, not {type(options).__name__}")
        defaults = cls()
        for name, value in keywords.items():
            given = getattr(options, name)
            if value is not getattr(defaults, name) and value != getattr(defaults, name):
                if value is not given and value != given:
                    raise TypeError(
                        f"{name} is given twice, as {value!r} and in options as {given!r}"
                    )
        return options


#: The bytes of records a batch holds at most, by default, where batches are counted in
#: rows: a batch ends at ``batch_size`` rows or once its records reach this many bytes,
#: whichever comes first, so that memory stays flat whatever the size of a record. Past
#: a few MiB a batch of large records reads slower, not faster: its buffers no longer
#: stay in the CPU's cache (see docs/benchmarks.md); rows of ~100 bytes fill 65,536-row
#: batches well within it.
DEFAULT_BATCH_BYTES = 4 << 20


#: The most threads one pipeline stage starts (files read at once, calls of a parallel
#: map), and the most units a prefetch holds ready: each is made up front.
MAX_THREADS = 1024
MAX_PREFETCH = 1 << 16


def check_count(
    name: str, value: Any, low: int = 1, *, also: tuple[int, ...] = (), high: int = 2**63 - 1
) -> None:
    """Raises ``ValueError`` unless ``value`` is an int (not a bool) from ``low`` to
    ``high``, or one of ``also`` (``AUTOTUNE``, say)."""
    if value in also and not isinstance(value, bool):
        return
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, not {value!r}")
    if value > high:
        raise ValueError(f"{name} must be at most {high:,}, not {value!r}")
