"""Damage in one file of several: the error names that file, skipping goes on to the next."""

from __future__ import annotations

import pytest
import tfrecordkit as tfr


def _three_files(tmp_path, h, damage, compression=None):
    """Writes a, b, c; damages b with ``damage(raw_bytes, records) -> (bytes, offset, index)``."""
    files, contents = [], []
    for i, name in enumerate("abc"):
        records = h.make_records(6, seed=i)
        path = tmp_path / f"{name}.tfrecord"
        raw = b"".join(h.frame(r) for r in records)
        where = None
        if name == "b":
            raw, *where = damage(bytearray(raw), records)
        path.write_bytes(h.compress(bytes(raw), compression))
        files.append(path)
        contents.append((records, where))
    return files, contents


def _data_crc(raw, records, h_offsets, k=2):
    at = h_offsets(records)[k]
    raw[at + 12] ^= 0x01
    return raw, at, k


def _length_crc(raw, records, h_offsets, k=2):
    at = h_offsets(records)[k]
    raw[at + 9] ^= 0x01
    return raw, at, k


def _truncated(raw, records, h_offsets, k=4):
    at = h_offsets(records)[k]
    return raw[: at + 7], at, k


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_data_crc_in_middle_file(tmp_path, h, compression):
    files, contents = _three_files(
        tmp_path, h, lambda raw, recs: _data_crc(raw, recs, h.offsets), compression
    )
    (a, _), (b, (at, k)), (c, _) = contents
    out, err = h.read_until_error(files)
    assert out == a + b[:k]
    h.assert_located(err, tfr.CorruptRecordError, path=files[1], offset=at, record_index=k)
    expected = a + b[:k] + b[k + 1 :] + c
    assert list(tfr.read_records(files, on_error="skip")) == expected
    with pytest.warns(tfr.DataLossWarning, match="b.tfrecord"):
        assert list(tfr.read_records(files, on_error="warn")) == expected


@pytest.mark.parametrize(
    ("damage", "cls"),
    [(_length_crc, tfr.CorruptRecordError), (_truncated, tfr.TruncatedRecordError)],
)
def test_unframeable_damage_skips_to_the_next_file(tmp_path, h, damage, cls):
    files, contents = _three_files(tmp_path, h, lambda raw, recs: damage(raw, recs, h.offsets))
    (a, _), (b, (at, k)), (c, _) = contents
    out, err = h.read_until_error(files)
    assert out == a + b[:k]
    h.assert_located(err, cls, path=files[1], offset=at, record_index=k)
    assert list(tfr.read_records(files, on_error="skip")) == a + b[:k] + c
    with pytest.warns(tfr.DataLossWarning) as caught:
        assert list(tfr.read_records(files, on_error="warn")) == a + b[:k] + c
    assert len(caught) == 1


def test_damaged_compressed_stream_skips_to_the_next_file(tmp_path, h):
    files = []
    contents = []
    for i, name in enumerate("abc"):
        records = h.make_records(200, seed=i)
        path = tmp_path / f"{name}.tfrecord.gz"
        h.write_file(path, records, "gzip")
        files.append(path)
        contents.append(records)
    data = files[1].read_bytes()
    files[1].write_bytes(data[: len(data) // 2])
    out, err = h.read_until_error(files)
    assert isinstance(err, tfr.DataLossError) and err.path == str(files[1])
    assert out[:200] == contents[0]
    skipped = list(tfr.read_records(files, on_error="skip"))
    assert skipped[:200] == contents[0]
    assert skipped[-200:] == contents[2]
    middle = skipped[200:-200]
    assert middle == contents[1][: len(middle)] and len(middle) < 200


def test_several_files_each_damaged(tmp_path, h):
    files, expected = [], []
    for i in range(5):
        records = h.make_records(10, seed=i)
        raw = bytearray(b"".join(h.frame(r) for r in records))
        k = i * 2  # a different record in each file
        raw[h.offsets(records)[k] + 12] ^= 0x02
        path = tmp_path / f"part-{i}.tfrecord"
        path.write_bytes(bytes(raw))
        files.append(path)
        expected += records[:k] + records[k + 1 :]
    with pytest.warns(tfr.DataLossWarning) as caught:
        assert list(tfr.read_records(str(tmp_path / "part-*.tfrecord"), on_error="warn")) == (
            expected
        )
    assert [str(w.message).count("part-") for w in caught] == [1] * 5
    report = tfr.verify(files)
    assert [r.records for r in report] == [9] * 5
    assert [(d.offset, d.record_index) for r in report for d in r.damage] == [
        (h.offsets(h.make_records(10, seed=i))[i * 2], i * 2) for i in range(5)
    ]


def test_empty_and_damaged_files_mixed(tmp_path, h):
    empty = tmp_path / "0.tfrecord"
    empty.write_bytes(b"")
    good = tmp_path / "1.tfrecord"
    h.write_file(good, [b"one", b"two"])
    bad = tmp_path / "2.tfrecord"
    bad.write_bytes(h.frame(b"three") + h.frame(b"four")[:5])
    last = tmp_path / "3.tfrecord"
    h.write_file(last, [b"five"])
    paths = [empty, good, bad, last]
    out, err = h.read_until_error(paths)
    assert out == [b"one", b"two", b"three"]
    h.assert_located(err, tfr.TruncatedRecordError, path=bad, offset=21, record_index=1)
    assert list(tfr.read_records(paths, on_error="skip")) == [b"one", b"two", b"three", b"five"]
