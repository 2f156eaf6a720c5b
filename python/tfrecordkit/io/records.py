"""Reading and writing TFRecord files."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any, TypeVar

from .. import _core
from ..errors import TFRecordError
from ..schema.columns import as_table
from .options import DEFAULT_BATCH_BYTES, ReadOptions, check_count
from .paths import (
    PathLike,
    StorageOptions,
    is_url,
    opener_for,
)
from .policy import OnError, policed
from .ranges import ReadPaths, resolve
from .reports import ReadReport

__all__ = ["RandomRecordReader", "RecordWriter", "TFRecordOptions", "read_batches", "read_records"]

# Uncompressed bytes per gzip member in seekable gzip files.
SEEKABLE_MEMBER_BYTES = 1 << 20


def read_records(
    paths: ReadPaths,
    *,
    compression: str | None = "auto",
    verify: bool = True,
    on_error: OnError = "raise",
    resync: bool = False,
    follow: bool = False,
    follow_timeout: float | None = None,
    poll_interval: float = 0.25,
    max_record_bytes: int | None = None,
    report: ReadReport | None = None,
    storage_options: StorageOptions = None,
    options: ReadOptions | None = None,
) -> Iterator[bytes]:
    """Iterates over the records of one or more TFRecord files, in order.

    ``paths`` is a path, a glob pattern or a list of them. ``compression`` is ``"auto"``
    (detected from the stream and the file name), ``None``, ``"gzip"`` or ``"zlib"``.
    ``verify`` checks every record's data CRC (length CRCs are always checked). Paths may
    be fsspec URLs (``s3://bucket/train-*``), streamed in large blocks fetched ahead of
    the reader; ``storage_options`` (credentials, an endpoint) go to their filesystem.

    On damage, ``on_error="raise"`` raises a :class:`~tfrecordkit.errors.DataLossError`
    subclass naming the file, offset and record; ``"skip"`` steps over a record whose data
    checksum fails and goes on (damage that makes the rest of a file unreadable ends that
    file and moves to the next); ``"warn"`` does the same with a ``DataLossWarning``; a
    callable is called with each error and reading goes on unless it raises.
    ``resync=True`` makes every framing error skippable: the reader scans forward to the
    next record whose checksums hold and reports the bytes it skipped (``error.lost``).
    A :class:`~tfrecordkit.ReadReport` passed as ``report`` counts, per file, the records
    read and the damage skipped. ``options``, a :class:`~tfrecordkit.ReadOptions`, gives
    these read options as one value, as every reader takes it.

    ``follow=True`` reads a file that is still being written, as TensorBoard does: at the end
    of the last file, an incomplete record is waited on rather than reported, and new
    records are yielded as they are appended (checked every ``poll_interval`` seconds) until
    nothing has arrived for ``follow_timeout`` seconds (forever when None).

    >>> for record in read_records("data/*.tfrecord"):  # doctest: +SKIP
    ...     example = decode_example(record)
    """
    o = ReadOptions.given(options, locals())
    reader = _open(paths, o, follow)

    def batches() -> Iterator[list[bytes]]:
        return _batches(lambda: reader.read_batch(512, one_by_one=True), o, reader)

    if follow:
        return itertools.chain.from_iterable(_following(batches, follow_timeout, poll_interval))
    return itertools.chain.from_iterable(batches())


def _following(
    batches: Callable[[], Iterator[list[bytes]]], timeout: float | None, poll: float
) -> Iterator[list[bytes]]:
    """Keeps asking a following reader for records, sleeping while none arrive."""
    quiet_since = time.monotonic()
    while True:
        got = False
        for batch in batches():
            got = True
            yield batch
        if got:
            quiet_since = time.monotonic()
        elif timeout is not None and time.monotonic() - quiet_since >= timeout:
            return
        time.sleep(poll)


def read_batches(
    paths: ReadPaths,
    batch_size: int = 1024,
    *,
    compression: str | None = "auto",
    verify: bool = True,
    on_error: OnError = "raise",
    resync: bool = False,
    max_record_bytes: int | None = None,
    report: ReadReport | None = None,
    storage_options: StorageOptions = None,
    options: ReadOptions | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> Iterator[list[bytes]]:
    """Like :func:`read_records`, but yields lists of up to ``batch_size`` records.

    Batches run across file boundaries. A batch also ends once its records hold
    ``batch_bytes`` (4 MiB by default), so that memory stays flat whatever the size of a
    record; it is shorter otherwise only at the end, or where damage was skipped. The
    next batch is read and checked on a thread of its own while the last one is used.
    """
    check_count("batch_size", batch_size)
    check_count("batch_bytes", batch_bytes)
    o = ReadOptions.given(options, locals())
    reader = _open(paths, o, ahead=True)
    return _batches(lambda: reader.read_batch(batch_size, batch_bytes), o, reader)


def _located(reader: _core.RecordReader, outputs: Callable[[Any], T], parsed: Any) -> T:
    """``outputs(parsed)``, an error in one of the batch's records named by its file, its
    index there and its byte offset."""
    try:
        return outputs(parsed)
    except TFRecordError as err:
        origin = None if err.record_index is None else reader.origin_in_batch(err.record_index)
        if origin is not None and err.path is None:
            err.path, err.record_index, err.offset = origin
        raise


def _open(
    paths: ReadPaths, o: ReadOptions, follow: bool = False, ahead: bool = False
) -> _core.RecordReader:
    """A native reader of ``paths``; with ``ahead``, it reads each batch on a thread of
    its own while the caller works on the one before (every batch then read with the same
    sizes)."""
    files, spans = resolve(paths, o.storage_options)
    opener = opener_for(files, o.storage_options)
    if follow and opener is not None:
        raise ValueError("follow=True reads local files only")
    if follow and spans is not None:
        raise ValueError("follow=True reads whole files, not byte ranges")
    return _core.RecordReader(
        files, o.compression, o.verify, o.max_record_bytes, o.resync, follow, opener, spans, ahead
    )


T = TypeVar("T")


def _batches(
    next_batch: Callable[[], T | None], o: ReadOptions, reader: _core.RecordReader
) -> Iterator[T]:
    """Calls ``next_batch`` until it returns nothing, applying the ``on_error`` policy and
    counting into the report of ``o``."""
    report = o.report
    try:
        yield from policed(next_batch, o.on_error, note=None if report is None else report.note)
    finally:
        if report is not None:
            report.count(reader.delivered())


_COMPRESSION_TYPES = {"": None, "NONE": None, "GZIP": "gzip", "ZLIB": "zlib"}
#: The ``TFRecordOptions`` fields that tune zlib.
_ZLIB_FIELDS = (
    "compression_level",
    "window_bits",
    "mem_level",
    "compression_strategy",
    "flush_mode",
    "input_buffer_size",
    "output_buffer_size",
)


@dataclass(frozen=True)
class TFRecordOptions:
    """How :class:`RecordWriter` compresses, with ``tf.io.TFRecordOptions``'s fields and
    meanings: ``compression_type`` ``"GZIP"``, ``"ZLIB"`` or ``""``/``None``;
    ``compression_level`` 0-9 (-1 for zlib's default, 6); ``window_bits`` 9-15 (15; for
    GZIP also 25-31, the same windows as zlib and TensorFlow take them for gzip);
    ``mem_level`` 1-9 (8); ``compression_strategy`` 0 default, 1 filtered, 2 Huffman only,
    3 run-length, 4 fixed (0); ``flush_mode`` 0 none, 1 partial, 2 sync, 3 full (0),
    applied after every ``input_buffer_size`` bytes (256 KiB); ``output_buffer_size`` the
    compressed bytes made per call into zlib (256 KiB); ``compression_method`` 8 (deflate,
    the only one). A value out of range is a ``ValueError`` when the writer opens.

    >>> options = tfr.TFRecordOptions(compression_type="GZIP", compression_level=9)
    >>> with tfr.RecordWriter("small.tfrecord.gz", options) as w:
    ...     w.write(b"record")
    """

    compression_type: str | None = None
    flush_mode: int | None = None
    input_buffer_size: int | None = None
    output_buffer_size: int | None = None
    window_bits: int | None = None
    compression_level: int | None = None
    compression_method: int | None = None
    mem_level: int | None = None
    compression_strategy: int | None = None

    def __post_init__(self) -> None:
        self.get_compression_type_string(self)
        for name, value in asdict(self).items():
            if name != "compression_type" and value is not None:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ValueError(f"{name} must be an int, not {value!r}")
        if self.compression_method not in (None, 8):
            raise ValueError(
                f"compression_method {self.compression_method} is not 8 (deflate), the one zlib has"
            )
        if self.compression is None and self.zlib():
            given = ", ".join(self._given())
            raise ValueError(f"zlib options ({given}) need compression_type GZIP or ZLIB")

    @classmethod
    def get_compression_type_string(cls, options: TFRecordOptions | str | None) -> str:
        """``"GZIP"``, ``"ZLIB"`` or ``""``, for options or a compression name."""
        given = options.compression_type if isinstance(options, TFRecordOptions) else options
        name = (given or "").upper() if isinstance(given, str) or given is None else None
        if name not in _COMPRESSION_TYPES:
            raise ValueError(f'compression_type must be "GZIP", "ZLIB", "" or None, not {given!r}')
        return "" if name == "NONE" else name

    @property
    def compression(self) -> str | None:
        """``"gzip"``, ``"zlib"`` or None."""
        return _COMPRESSION_TYPES[self.get_compression_type_string(self)]

    def _given(self) -> list[str]:
        return [
            n
            for n in _ZLIB_FIELDS
            if getattr(self, n) is not None
            and not (n == "compression_level" and getattr(self, n) == -1)
        ]

    def zlib(self) -> dict[str, int]:
        """zlib's options given."""
        given = {n: getattr(self, n) for n in self._given()}
        bits = given.get("window_bits")
        if self.compression == "gzip" and bits is not None and 25 <= bits <= 31:
            given["window_bits"] = bits - 16
        return given


class RandomRecordReader:
    """Reads the records of an uncompressed TFRecord file at byte offsets, as TensorFlow's
    ``tf_record_random_reader``: :meth:`read` gives the record that starts at an offset and
    the offset of the next. An offset where no record starts raises
    :class:`~tfrecordkit.CorruptRecordError`, a record cut short by the end of the file
    :class:`~tfrecordkit.TruncatedRecordError`, and the end of the file ``IndexError``.

    >>> with tfr.RecordWriter("r.tfrecord") as w:
    ...     w.write_many([b"a", b"bc"])
    2
    >>> with tfr.RandomRecordReader("r.tfrecord") as reader:
    ...     reader.read(0), reader.read(17)
    ((b'a', 17), (b'bc', 35))
    """

    def __init__(self, path: PathLike, *, verify: bool = True) -> None:
        self.path = os.fspath(path)
        self.verify = verify
        self._r = _core.OffsetReader(self.path)

    def read(self, offset: int) -> tuple[bytes, int]:
        """``(record, next offset)`` for the record that starts at byte ``offset``."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be an int >= 0, not {offset!r}")
        found = self._r.read(offset, self.verify)
        if found is None:
            raise IndexError(f"{self.path}: out of range: offset {offset} is the end of the file")
        return found

    def close(self) -> None:
        """Closes the file; a read after it raises ``ValueError``. Safe to call twice."""
        self._r.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._r.closed

    def __enter__(self) -> RandomRecordReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RandomRecordReader {self.path!r}{' closed' if self.closed else ''}>"


class RecordWriter:
    """Writes records to a TFRecord file, byte for byte as ``tf.io.TFRecordWriter`` does.
    ``path`` is a local file; a URL raises ``ValueError`` (:func:`write_dataset` writes
    shards to a URL prefix, and :func:`repair` a file to a URL).

    ``compression`` is ``None``, ``"gzip"``, ``"zlib"`` or ``"auto"`` (from the extension:
    ``.gz`` gzip, ``.zz``/``.zlib`` zlib), or a :class:`TFRecordOptions` with zlib's other
    options; ``level`` is the gzip/zlib level (0-9).

    With ``atomic=True`` (the default) records go to a hidden temporary file beside
    ``path`` that is renamed to ``path`` when the writer closes, so no reader ever sees a
    half-written file. Leaving a ``with`` block by an exception discards the file instead,
    as does a writer collected without :meth:`close` (with a ``RuntimeWarning``).
    ``flush()`` pushes buffered records through the compressor to the operating system.
    ``index=True`` also writes ``{path}.idx`` (one ``offset length`` line per record, the
    format DALI and the ``tfrecord`` package read), for uncompressed files.
    ``seekable=True`` (gzip only) writes the stream as gzip members of about 1 MiB of
    records each, which TensorFlow reads as ordinary GZIP; with ``index=True`` their
    offsets go to ``{path}.gzi`` so that :class:`tfrecordkit.RecordIndex` can seek.

    >>> with RecordWriter("out.tfrecord") as w:  # doctest: +SKIP
    ...     w.write(encode_example({"label": 1}))
    """

    def __init__(
        self,
        path: PathLike,
        compression: str | TFRecordOptions | None = None,
        *,
        level: int | None = None,
        atomic: bool = True,
        index: bool = False,
        seekable: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        if is_url(self.path):
            raise ValueError(
                f"RecordWriter writes local files, and {self.path} is a URL: write_dataset "
                "writes shards to a URL prefix, and repair a file to a URL"
            )
        zlib: dict[str, int] = {}
        if isinstance(compression, TFRecordOptions):
            if level is not None:
                raise ValueError("give the level as the options' compression_level")
            compression, zlib = compression.compression, compression.zlib()
        elif compression is not None and not isinstance(compression, str):
            raise ValueError(
                'compression must be None, "gzip", "zlib", "auto" or a TFRecordOptions, '
                f"not {compression!r}"
            )
        elif level is not None:
            zlib["compression_level"] = level
        members = SEEKABLE_MEMBER_BYTES if seekable else None
        self._atomic = atomic
        self._w = _core.RecordWriter(self.path, compression, zlib, atomic, index, members)

    def __del__(self) -> None:
        # A writer never closed may have stopped anywhere (an exception outside a `with`):
        # its temporary file is discarded, never given the final name half written.
        w = getattr(self, "_w", None)
        if w is None or w.closed or not self._atomic:
            return
        n = w.records_written
        w.abort()
        with contextlib.suppress(Exception):  # the interpreter may be ending
            warnings.warn(
                f"RecordWriter({self.path!r}) was collected without close(): its {n:,} "
                "records were discarded and nothing was written there; close() it, or "
                "write in a `with` block",
                RuntimeWarning,
                stacklevel=2,
            )

    def write(self, record: bytes) -> None:
        """Writes one record (any bytes-like object)."""
        self._w.write(record)

    def write_many(self, records: Iterable[bytes]) -> int:
        """Writes every record of an iterable; returns how many were written."""
        return self._w.write_many(records)

    def write_examples(self, columns: Any, *, schema: Any = None, chunk_rows: int = 65_536) -> int:
        """Encodes a table (a dict of columns, a pandas DataFrame or an Arrow table) as one
        Example per row and writes them; returns the number of rows. See
        :func:`tfrecordkit.encode_examples` for how columns become features. Encoding runs
        in parallel native code, ``chunk_rows`` rows at a time.

        >>> with RecordWriter("out.tfrecord") as w:  # doctest: +SKIP
        ...     w.write_examples({"label": labels, "score": scores})
        """
        table = as_table(columns, schema)
        native = table.native()
        for start in range(0, table.rows, chunk_rows):
            end = min(start + chunk_rows, table.rows)
            self._w.write_columns(native, start, end)
        return table.rows

    def flush(self) -> None:
        """Writes what is buffered (and compressed so far) to the file being written; it
        keeps its temporary name until :meth:`close`."""
        self._w.flush()

    def close(self) -> None:
        """Finishes the file and gives it its final name. Safe to call twice."""
        self._w.close()

    def abort(self) -> None:
        """Discards everything written; nothing appears under ``path``."""
        self._w.abort()

    @property
    def closed(self) -> bool:
        """Whether the file was closed (or aborted)."""
        return self._w.closed

    @property
    def records_written(self) -> int:
        """Records written so far."""
        return self._w.records_written

    @property
    def compression(self) -> str | None:
        """``"gzip"``, ``"zlib"`` or ``None``, as chosen (``"auto"`` resolved)."""
        return self._w.compression

    @property
    def summary(self) -> dict[str, Any] | None:
        """Once closed: the file's ``records``, ``bytes`` and whole-file ``crc32c``."""
        return self._w.summary

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.records_written} records"
        return f"<RecordWriter {self.path!r} compression={self.compression} {state}>"
