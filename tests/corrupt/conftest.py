"""Shared helpers for the corrupt-input suite: building record files and damaging them."""

from __future__ import annotations

import gzip
import struct
import zlib
from types import SimpleNamespace

import pytest
import tfrecordkit as tfr
from tfrecordkit._core import masked_crc32c

HEADER = 12
FOOTER = 4


def make_records(n: int, seed: int = 0) -> list[bytes]:
    """``n`` distinct records of varying length (including an empty one when n > 3)."""
    out = []
    for i in range(n):
        body = bytes((seed * 31 + i * 7 + j) % 251 for j in range((i * 13) % 40))
        out.append(b"rec-%05d|" % i + body if i != 3 else b"")
    return out


def frame(data: bytes, length: int | None = None, length_crc: int | None = None) -> bytes:
    """One framed record; ``length`` overrides the stored length (its CRC stays valid)."""
    n = len(data) if length is None else length
    head = struct.pack("<Q", n)
    crc = masked_crc32c(head) if length_crc is None else length_crc
    return head + struct.pack("<I", crc) + data + struct.pack("<I", masked_crc32c(data))


def offsets(records: list[bytes]) -> list[int]:
    """Byte offset of each record in the uncompressed stream, plus the end offset."""
    out = [0]
    for r in records:
        out.append(out[-1] + HEADER + len(r) + FOOTER)
    return out


def write_file(path, records, compression=None) -> str:
    with tfr.RecordWriter(path, compression) as w:
        w.write_many(records)
    return str(path)


def compress(raw: bytes, compression: str | None) -> bytes:
    if compression is None:
        return raw
    if compression == "gzip":
        return gzip.compress(raw, mtime=0)
    if compression == "zlib":
        return zlib.compress(raw)
    raise ValueError(compression)


def decompress_prefix(data: bytes, compression: str) -> bytes:
    """What a correct decoder can recover from the first bytes of a compressed stream."""
    wbits = 31 if compression == "gzip" else 15
    return zlib.decompressobj(wbits).decompress(data)


def complete_records(raw: bytes) -> int:
    """How many whole framed records a decompressed prefix holds."""
    n = pos = 0
    while pos + HEADER <= len(raw):
        (length,) = struct.unpack_from("<Q", raw, pos)
        if pos + HEADER + length + FOOTER > len(raw):
            break
        pos += HEADER + length + FOOTER
        n += 1
    return n


def read_until_error(paths, **kwargs) -> tuple[list[bytes], BaseException | None]:
    """Reads every record it can; returns them and the exception that stopped it (if any).

    Any exception is caught (``BaseException``, so a pyo3 PanicException shows up too).
    """
    out: list[bytes] = []
    try:
        for r in tfr.read_records(paths, **kwargs):
            out.append(r)
    except BaseException as err:
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise
        return out, err
    return out, None


def assert_located(err, cls, *, path, offset, record_index) -> None:
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}: {err}"
    assert isinstance(err, tfr.TFRecordError)
    assert err.path == str(path)
    assert err.offset == offset, (err.offset, offset, str(err))
    assert err.record_index == record_index, (err.record_index, record_index, str(err))
    # The location also shows in the message.
    assert f"offset {offset}" in str(err)
    assert f"record {record_index}" in str(err)


# ---------------------------------------------------------------- protobuf by hand


def varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return tag(field, 2) + varint(len(payload)) + payload


def feature_entry(key: bytes, feature: bytes) -> bytes:
    """One ``map<string, Feature>`` entry (key = 1, value = 2)."""
    return ld(1, key) + ld(2, feature)


def example(*entries: bytes) -> bytes:
    """``Example { features { feature: entries } }``."""
    return ld(1, b"".join(ld(1, e) for e in entries))


def int64_feature(*values: int) -> bytes:
    packed = b"".join(varint(v & 0xFFFFFFFFFFFFFFFF) for v in values)
    return ld(3, ld(1, packed))


@pytest.fixture(scope="package")
def h() -> SimpleNamespace:
    """The helpers above, as one namespace."""
    return SimpleNamespace(
        make_records=make_records,
        frame=frame,
        offsets=offsets,
        write_file=write_file,
        compress=compress,
        decompress_prefix=decompress_prefix,
        complete_records=complete_records,
        read_until_error=read_until_error,
        assert_located=assert_located,
        varint=varint,
        tag=tag,
        ld=ld,
        feature_entry=feature_entry,
        example=example,
        int64_feature=int64_feature,
        HEADER=HEADER,
        FOOTER=FOOTER,
    )


@pytest.fixture
def records() -> list[bytes]:
    return make_records(8)
