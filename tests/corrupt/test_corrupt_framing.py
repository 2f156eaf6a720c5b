"""Damage to the record framing of uncompressed (and intact-compressed) files."""

from __future__ import annotations

import struct

import pytest
import tfrecordkit as tfr
from tfrecordkit._core import masked_crc32c

# ---------------------------------------------------------------- clean ends


@pytest.mark.parametrize("compression", ["auto", None])
def test_empty_file_has_no_records(tmp_path, compression, h):
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    out, err = h.read_until_error(path, compression=compression)
    assert err is None
    assert out == []
    assert tfr.count(path) == 0


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_empty_file_read_as_compressed_has_no_records(tmp_path, compression, h):
    # A 0-byte file is an empty TFRecord file whatever the compression (TensorFlow reads
    # it as zero records); it is not a truncated compressed stream.
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    out, err = h.read_until_error(path, compression=compression)
    assert err is None, f"{type(err).__name__}: {err}"
    assert out == []


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_writer_with_no_records_reads_back_empty(tmp_path, compression, h):
    path = h.write_file(tmp_path / "none.tfrecord", [], compression)
    out, err = h.read_until_error(path, compression=compression)
    assert (out, err) == ([], None)
    assert tfr.count(path, compression=compression) == 0


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_eof_on_every_record_boundary_is_a_clean_end(tmp_path, compression, h, records):
    raw = b"".join(h.frame(r) for r in records)
    ends = h.offsets(records)
    for k in range(len(records) + 1):
        path = tmp_path / f"cut{k}"
        path.write_bytes(h.compress(raw[: ends[k]], compression))
        out, err = h.read_until_error(path, compression=compression)
        assert err is None, f"cut after {k} records: {err}"
        assert out == records[:k]


def test_framing_helper_matches_the_writer(tmp_path, h, records):
    path = h.write_file(tmp_path / "w.tfrecord", records)
    with open(path, "rb") as f:
        assert f.read() == b"".join(h.frame(r) for r in records)


# ---------------------------------------------------------------- truncation


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
@pytest.mark.parametrize("keep", range(1, 12))
def test_short_header_at_end(tmp_path, h, records, keep, compression):
    raw = b"".join(h.frame(r) for r in records) + h.frame(b"lost record")[:keep]
    path = tmp_path / "short_header"
    path.write_bytes(h.compress(raw, compression))
    out, err = h.read_until_error(path, compression=compression)
    assert out == records
    h.assert_located(
        err,
        tfr.TruncatedRecordError,
        path=path,
        offset=h.offsets(records)[-1],
        record_index=len(records),
    )
    assert isinstance(err, tfr.DataLossError)
    assert f"{keep} of 12" in err.message


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
@pytest.mark.parametrize("missing", [1, 5, 10, 19])
def test_short_data(tmp_path, h, records, missing, compression):
    last = b"x" * 20
    full = h.frame(last)
    raw = b"".join(h.frame(r) for r in records) + full[: len(full) - 4 - missing]
    path = tmp_path / "short_data"
    path.write_bytes(h.compress(raw, compression))
    out, err = h.read_until_error(path, compression=compression)
    assert out == records
    h.assert_located(
        err,
        tfr.TruncatedRecordError,
        path=path,
        offset=h.offsets(records)[-1],
        record_index=len(records),
    )


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
@pytest.mark.parametrize("footer_bytes", [0, 1, 2, 3])
def test_short_footer(tmp_path, h, records, footer_bytes, compression):
    full = h.frame(b"last record")
    raw = b"".join(h.frame(r) for r in records) + full[: len(full) - 4 + footer_bytes]
    path = tmp_path / "short_footer"
    path.write_bytes(h.compress(raw, compression))
    out, err = h.read_until_error(path, compression=compression)
    assert out == records
    h.assert_located(
        err,
        tfr.TruncatedRecordError,
        path=path,
        offset=h.offsets(records)[-1],
        record_index=len(records),
    )
    assert "footer" in err.message


def test_truncated_file_written_by_the_writer(tmp_path, h, records):
    # Cut a real file at every byte inside its last record.
    path = h.write_file(tmp_path / "w.tfrecord", records)
    with open(path, "rb") as f:
        data = f.read()
    ends = h.offsets(records)
    for cut in range(ends[-2] + 1, ends[-1]):
        p = tmp_path / f"cut{cut}"
        p.write_bytes(data[:cut])
        out, err = h.read_until_error(p)
        assert out == records[:-1]
        h.assert_located(
            err, tfr.TruncatedRecordError, path=p, offset=ends[-2], record_index=len(records) - 1
        )


# ---------------------------------------------------------------- length checksum


@pytest.mark.parametrize("k", [0, 2, 7])
@pytest.mark.parametrize("byte", [0, 3, 7, 8, 11])
def test_length_crc_mismatch(tmp_path, h, records, k, byte):
    data = bytearray(b"".join(h.frame(r) for r in records))
    at = h.offsets(records)[k]
    data[at + byte] ^= 0x10
    path = tmp_path / "bad_len_crc"
    path.write_bytes(bytes(data))
    out, err = h.read_until_error(path)
    assert out == records[:k]
    h.assert_located(err, tfr.CorruptRecordError, path=path, offset=at, record_index=k)
    assert "length" in err.message


@pytest.mark.parametrize("on_error", ["skip", "warn"])
def test_length_crc_mismatch_ends_the_file_when_skipping(tmp_path, h, records, on_error):
    data = bytearray(b"".join(h.frame(r) for r in records))
    k = 4
    data[h.offsets(records)[k] + 2] ^= 0xFF
    path = tmp_path / "bad_len_crc"
    path.write_bytes(bytes(data))
    if on_error == "warn":
        with pytest.warns(tfr.DataLossWarning, match="length checksum"):
            out = list(tfr.read_records(path, on_error=on_error))
    else:
        out = list(tfr.read_records(path, on_error=on_error))
    # The rest of the file cannot be framed: what came before is kept, nothing invented.
    assert out == records[:k]


def test_huge_damaged_length_is_a_checksum_error_not_an_allocation(tmp_path, h, records):
    data = bytearray(b"".join(h.frame(r) for r in records))
    k = 5
    at = h.offsets(records)[k]
    data[at : at + 8] = struct.pack("<Q", 2**63 + 12345)  # CRC left stale
    path = tmp_path / "huge_len"
    path.write_bytes(bytes(data))
    out, err = h.read_until_error(path)
    assert out == records[:k]
    h.assert_located(err, tfr.CorruptRecordError, path=path, offset=at, record_index=k)


# ---------------------------------------------------------------- data checksum


def _damage_data(h, records, k, where="data"):
    data = bytearray(b"".join(h.frame(r) for r in records))
    at = h.offsets(records)[k]
    if where == "data":
        data[at + h.HEADER] ^= 0x01
    else:  # the footer CRC
        data[h.offsets(records)[k + 1] - 2] ^= 0x80
    return bytes(data), at


@pytest.mark.parametrize("where", ["data", "footer"])
@pytest.mark.parametrize("k", [0, 5, 7])
def test_data_crc_mismatch_raises(tmp_path, h, records, k, where):
    data, at = _damage_data(h, records, k, where)
    path = tmp_path / "bad_data_crc"
    path.write_bytes(data)
    out, err = h.read_until_error(path)
    assert out == records[:k]
    h.assert_located(err, tfr.CorruptRecordError, path=path, offset=at, record_index=k)
    assert "data checksum" in err.message


@pytest.mark.parametrize("k", [0, 5, 7])
def test_data_crc_mismatch_skip_steps_over_one_record(tmp_path, h, records, k):
    data, _ = _damage_data(h, records, k)
    path = tmp_path / "bad_data_crc"
    path.write_bytes(data)
    out = list(tfr.read_records(path, on_error="skip"))
    assert out == records[:k] + records[k + 1 :]


@pytest.mark.parametrize("k", [0, 5, 7])
def test_data_crc_mismatch_warn(tmp_path, h, records, k):
    data, at = _damage_data(h, records, k)
    path = tmp_path / "bad_data_crc"
    path.write_bytes(data)
    with pytest.warns(tfr.DataLossWarning) as caught:
        out = list(tfr.read_records(path, on_error="warn"))
    assert out == records[:k] + records[k + 1 :]
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"offset {at}" in message and f"record {k}" in message


def test_data_crc_mismatch_verify_false_returns_the_damaged_bytes(tmp_path, h, records):
    k = 5
    data, at = _damage_data(h, records, k)
    path = tmp_path / "bad_data_crc"
    path.write_bytes(data)
    out, err = h.read_until_error(path, verify=False)
    assert err is None
    assert len(out) == len(records)
    damaged = data[at + h.HEADER : at + h.HEADER + len(records[k])]
    assert out[k] == damaged != records[k]
    assert out[:k] + out[k + 1 :] == records[:k] + records[k + 1 :]


def test_several_damaged_records_skipped_and_warned(tmp_path, h, records):
    data = bytearray(b"".join(h.frame(r) for r in records))
    ends = h.offsets(records)
    bad = [1, 2, 6]
    for k in bad:
        data[ends[k] + h.HEADER] ^= 0x40
    path = tmp_path / "many_bad"
    path.write_bytes(bytes(data))
    good = [r for i, r in enumerate(records) if i not in bad]
    assert list(tfr.read_records(path, on_error="skip")) == good
    with pytest.warns(tfr.DataLossWarning) as caught:
        assert list(tfr.read_records(path, on_error="warn")) == good
    assert len(caught) == len(bad)
    for w, k in zip(caught, bad, strict=True):
        assert f"offset {ends[k]}" in str(w.message)


@pytest.mark.parametrize("k", [511, 512, 700])
def test_damage_past_the_first_batch(tmp_path, h, k):
    # The Python iterator reads in batches of 512: damage in a later batch, or on its edge,
    # must still deliver every record before it and lose no record after it.
    records = [b"r%d" % i for i in range(1000)]
    data = bytearray(b"".join(h.frame(r) for r in records))
    at = h.offsets(records)[k]
    data[at + h.HEADER] ^= 0x01
    path = tmp_path / "big"
    path.write_bytes(bytes(data))
    out, err = h.read_until_error(path)
    assert out == records[:k]
    h.assert_located(err, tfr.CorruptRecordError, path=path, offset=at, record_index=k)
    assert list(tfr.read_records(path, on_error="skip")) == records[:k] + records[k + 1 :]


# ---------------------------------------------------------------- impossible lengths


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
@pytest.mark.parametrize("extra", [1, 1000, 2**31 - 100])
def test_valid_length_larger_than_the_rest_of_the_file(tmp_path, h, records, extra, compression):
    tail = b"y" * 30
    raw = b"".join(h.frame(r) for r in records) + h.frame(tail, length=len(tail) + extra)
    path = tmp_path / "too_long"
    path.write_bytes(h.compress(raw, compression))
    out, err = h.read_until_error(path, compression=compression)
    assert out == records
    assert isinstance(err, tfr.DataLossError), repr(err)
    assert err.path == str(path)
    assert err.offset == h.offsets(records)[-1]
    assert err.record_index == len(records)


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_length_above_the_default_maximum(tmp_path, h, records, compression):
    raw = b"".join(h.frame(r) for r in records) + h.frame(b"z" * 8, length=2**40)
    path = tmp_path / "over_max"
    path.write_bytes(h.compress(raw, compression))
    out, err = h.read_until_error(path, compression=compression)
    assert out == records
    assert isinstance(err, tfr.DataLossError), repr(err)
    assert (err.path, err.offset, err.record_index) == (
        str(path),
        h.offsets(records)[-1],
        len(records),
    )


def test_max_record_bytes(tmp_path, h):
    records = [b"a" * 10, b"b" * 20, b"c" * 100, b"d" * 5]
    path = h.write_file(tmp_path / "sizes.tfrecord", records)
    out, err = h.read_until_error(path, max_record_bytes=50)
    assert out == records[:2]
    assert type(err) is tfr.DataLossError
    assert (err.path, err.offset, err.record_index) == (path, h.offsets(records)[2], 2)
    assert "100" in err.message and "50" in err.message
    # The limit is inclusive.
    assert list(tfr.read_records(path, max_record_bytes=100)) == records


def test_length_near_u64_max_with_a_huge_limit_does_not_panic(tmp_path, h, records):
    # A compressed stream cannot be checked against the file size, so only the length
    # arithmetic stands between a hostile length and an overflow.
    raw = b"".join(h.frame(r) for r in records) + h.frame(b"q" * 20, length=2**64 - 8)
    path = tmp_path / "u64.gz"
    path.write_bytes(h.compress(raw, "gzip"))
    out, err = h.read_until_error(path, max_record_bytes=2**64 - 1)
    assert out == records
    assert isinstance(err, tfr.DataLossError), f"{type(err).__name__}: {err}"
    assert err.offset == h.offsets(records)[-1]
    assert err.record_index == len(records)


# ---------------------------------------------------------------- memory


_LIMITED_READ = r"""
import json, resource, sys
import tfrecordkit as tfr

def vm_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")

limit = vm_bytes() + (384 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
results = []
for path, compression in json.loads(sys.argv[1]):
    n = 0
    try:
        for _ in tfr.read_records(path, compression=compression):
            n += 1
        results.append([n, None, None, None])
    except BaseException as err:
        results.append([n, type(err).__name__, getattr(err, "offset", None), str(err)])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"results": results, "rss_growth_kib": after - before}))
"""


def test_hostile_lengths_do_not_allocate(tmp_path, h, records):
    """Lengths with valid CRCs that the stream cannot hold, read under a 384 MiB cap."""
    import json
    import subprocess
    import sys

    body = b"".join(h.frame(r) for r in records)
    cases = []
    for i, (declared, compression, length_crc) in enumerate(
        [
            (2**31 - 64, None, None),
            (2**31 - 64, "gzip", None),
            (2**31 - 64, "zlib", None),
            (2**30, "gzip", None),
            (2**40, None, None),
            (2**40, "zlib", None),
            (2**62, None, 0xDEADBEEF),  # a damaged length: its CRC does not match
            (2**62, "gzip", 0xDEADBEEF),
        ]
    ):
        raw = body + h.frame(b"w" * 64, length=declared, length_crc=length_crc)
        path = tmp_path / f"hostile{i}"
        path.write_bytes(h.compress(raw, compression))
        cases.append([str(path), compression])
    proc = subprocess.run(
        [sys.executable, "-c", _LIMITED_READ, json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    for (path, compression), (n, err_type, offset, message) in zip(
        cases, report["results"], strict=True
    ):
        assert n == len(records), (path, compression, message)
        assert err_type in ("DataLossError", "TruncatedRecordError", "CorruptRecordError"), (
            path,
            compression,
            err_type,
            message,
        )
        assert offset == h.offsets(records)[-1], (path, compression, message)
    assert report["rss_growth_kib"] < 128 * 1024, report


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


@pytest.mark.parametrize("data", [b"", b"\0" * 8, b"123456789", bytes(range(256)) * 3])
def test_masked_crc_is_the_tfrecord_one(data):
    assert _crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    crc = _crc32c(data)
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    assert masked_crc32c(data) == masked
