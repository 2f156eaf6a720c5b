"""Shared helpers for the unit tests of the public API."""

from __future__ import annotations

import struct
import zlib
from types import SimpleNamespace

import pytest
import tfrecordkit as tfr
from tfrecordkit._core import masked_crc32c


def frame(data: bytes) -> bytes:
    head = struct.pack("<Q", len(data))
    return (
        head
        + struct.pack("<I", masked_crc32c(head))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


def unframe(raw: bytes) -> list[bytes]:
    """Splits complete framed records (checking both CRCs); a torn tail is an error."""
    out, pos = [], 0
    while pos < len(raw):
        (length,) = struct.unpack_from("<Q", raw, pos)
        (lcrc,) = struct.unpack_from("<I", raw, pos + 8)
        assert lcrc == masked_crc32c(raw[pos : pos + 8]), f"bad length CRC at {pos}"
        data = raw[pos + 12 : pos + 12 + length]
        assert len(data) == length, f"torn record at {pos}"
        (dcrc,) = struct.unpack_from("<I", raw, pos + 12 + length)
        assert dcrc == masked_crc32c(data), f"bad data CRC at {pos}"
        out.append(data)
        pos += 16 + length
    return out


def decompress_available(data: bytes, compression: str | None) -> bytes:
    """Everything a streaming decompressor can get out of ``data`` (maybe unfinished)."""
    if compression is None:
        return data
    wbits = 31 if compression == "gzip" else 15
    return zlib.decompressobj(wbits).decompress(data)


def write_file(path, records, compression=None) -> str:
    with tfr.RecordWriter(path, compression) as w:
        w.write_many(records)
    return str(path)


def sample_records(n: int = 10, tag: str = "r") -> list[bytes]:
    return [f"{tag}{i}:".encode() + bytes(range(i % 17)) for i in range(n)]


@pytest.fixture(scope="package")
def u() -> SimpleNamespace:
    return SimpleNamespace(
        frame=frame,
        unframe=unframe,
        decompress_available=decompress_available,
        write_file=write_file,
        sample_records=sample_records,
    )
