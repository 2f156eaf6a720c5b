"""Damage to gzip / zlib streams, and compressed files read as the wrong kind."""

from __future__ import annotations

import random

import pytest
import tfrecordkit as tfr


def _records(n: int, seed: int = 1) -> list[bytes]:
    # Low-entropy bytes: compressible, but not trivially so.
    rng = random.Random(seed)
    return [bytes(rng.getrandbits(4) for _ in range(rng.randrange(10, 60))) for _ in range(n)]


# ---------------------------------------------------------------- wrong compression


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_file_read_as_plain_suggests_the_compression(tmp_path, h, compression):
    records = _records(20)
    path = h.write_file(tmp_path / "data.tfrecord", records, compression)
    out, err = h.read_until_error(path, compression=None)
    assert out == []
    assert isinstance(err, tfr.DataLossError), repr(err)
    assert (err.path, err.offset, err.record_index) == (path, 0, 0)
    assert compression in err.message.lower()
    assert f'compression="{compression}"' in str(err)
    # And "auto" sniffs it even without a telling extension.
    assert list(tfr.read_records(path)) == records


@pytest.mark.parametrize(("written", "read_as"), [("gzip", "zlib"), ("zlib", "gzip")])
def test_compressed_file_read_as_the_other_compression(tmp_path, h, written, read_as):
    records = _records(20)
    path = h.write_file(tmp_path / "data.tfrecord", records, written)
    out, err = h.read_until_error(path, compression=read_as)
    assert out == []
    assert isinstance(err, tfr.DataLossError), repr(err)
    assert err.path == path
    assert isinstance(err.offset, int)
    assert written in err.message.lower()


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_plain_file_read_as_compressed(tmp_path, h, compression):
    records = _records(20)
    path = h.write_file(tmp_path / "data.tfrecord", records)
    out, err = h.read_until_error(path, compression=compression)
    assert out == []
    assert isinstance(err, tfr.DataLossError), repr(err)
    assert err.path == path
    assert isinstance(err.offset, int)


# ---------------------------------------------------------------- broken streams


def _check_prefix_delivered(h, out, err, records, data, damage_at, compression, path):
    """The error is located data loss, and every record recoverable before it came out."""
    assert isinstance(err, tfr.DataLossError), f"{type(err).__name__}: {err}"
    assert err.path == str(path)
    assert isinstance(err.offset, int) and err.offset >= 0
    assert isinstance(err.record_index, int) and err.record_index >= len(out)
    assert out == records[: len(out)], "records out of order or invented"
    recoverable = h.complete_records(h.decompress_prefix(data[:damage_at], compression))
    assert len(out) >= recoverable, (
        f"{len(out)} records delivered, but {recoverable} complete records decompress from "
        f"the {damage_at} bytes before the damage ({type(err).__name__}: {err})"
    )


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.75, 0.95])
@pytest.mark.parametrize("n", [40, 3000])
def test_flipped_byte_in_compressed_body(tmp_path, h, compression, fraction, n):
    records = _records(n)
    path = tmp_path / f"data.{compression}"
    h.write_file(path, records, compression)
    data = path.read_bytes()
    at = int(len(data) * fraction)
    damaged = bytearray(data)
    damaged[at] ^= 0x55
    path.write_bytes(bytes(damaged))
    out, err = h.read_until_error(path, compression=compression)
    _check_prefix_delivered(h, out, err, records, data, at, compression, path)


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_flipped_bytes_anywhere_in_a_small_stream(tmp_path, h, compression):
    # Every byte position of a small stream: always located data loss, never anything else.
    records = _records(12)
    path = tmp_path / f"small.{compression}"
    h.write_file(path, records, compression)
    data = path.read_bytes()
    # Bytes 4-9 of a gzip header (MTIME, XFL, OS) are informational: damage there is benign.
    benign = range(4, 10) if compression == "gzip" else range(0)
    for at in range(len(data)):
        if at in benign:
            continue
        damaged = bytearray(data)
        damaged[at] ^= 0xA5
        path.write_bytes(bytes(damaged))
        out, err = h.read_until_error(path, compression=compression)
        assert err is not None, f"damage at byte {at} went unnoticed"
        assert isinstance(err, tfr.DataLossError), f"byte {at}: {type(err).__name__}: {err}"
        assert isinstance(err.offset, int)
        assert out == records[: len(out)]


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("n", [40, 3000])
def test_truncated_compressed_file(tmp_path, h, compression, fraction, n):
    records = _records(n)
    path = tmp_path / f"data.{compression}"
    h.write_file(path, records, compression)
    data = path.read_bytes()
    cut = max(1, int(len(data) * fraction))
    path.write_bytes(data[:cut])
    out, err = h.read_until_error(path, compression=compression)
    _check_prefix_delivered(h, out, err, records, data, cut, compression, path)
    assert isinstance(err, tfr.TruncatedRecordError) or "stream" in err.message


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_trailing_garbage_after_compressed_stream(tmp_path, h, compression):
    records = _records(30)
    path = tmp_path / f"data.{compression}"
    h.write_file(path, records, compression)
    path.write_bytes(path.read_bytes() + b"\x00garbage!")
    out, err = h.read_until_error(path, compression=compression)
    assert out == records
    assert isinstance(err, tfr.DataLossError), repr(err)
    assert err.path == str(path) and isinstance(err.offset, int)


def test_gzip_with_bad_trailer_crc(tmp_path, h):
    records = _records(30)
    path = tmp_path / "data.gz"
    h.write_file(path, records, "gzip")
    data = bytearray(path.read_bytes())
    data[-6] ^= 0xFF  # inside the member's CRC32
    path.write_bytes(bytes(data))
    out, err = h.read_until_error(path)
    assert out == records
    assert isinstance(err, tfr.DataLossError), repr(err)
    assert (err.path, err.record_index) == (str(path), len(records))
    assert isinstance(err.offset, int)


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_skip_on_broken_stream_ends_the_file(tmp_path, h, compression):
    records = _records(3000)
    path = tmp_path / f"data.{compression}"
    h.write_file(path, records, compression)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    out = list(tfr.read_records(path, compression=compression, on_error="skip"))
    assert 0 < len(out) < len(records)
    assert out == records[: len(out)]
    with pytest.warns(tfr.DataLossWarning):
        assert list(tfr.read_records(path, compression=compression, on_error="warn")) == out


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_data_crc_damage_inside_an_intact_compressed_stream(tmp_path, h, compression):
    records = _records(50)
    raw = bytearray(b"".join(h.frame(r) for r in records))
    k = 17
    at = h.offsets(records)[k]
    raw[at + h.HEADER] ^= 0x08
    path = tmp_path / f"data.{compression}"
    path.write_bytes(h.compress(bytes(raw), compression))
    out, err = h.read_until_error(path)
    assert out == records[:k]
    # Offsets are in the decompressed stream when the compressed stream itself is fine.
    h.assert_located(err, tfr.CorruptRecordError, path=path, offset=at, record_index=k)
    assert list(tfr.read_records(path, on_error="skip")) == records[:k] + records[k + 1 :]
