"""Resynchronizing past damage, salvaging files with repair, and on_error callables."""

from __future__ import annotations

import json
import random

import pytest
import tfrecordkit as tfr
from click.testing import CliRunner
from tfrecordkit.cli import main


def write_raw(h, path, records):
    path.write_bytes(b"".join(h.frame(r) for r in records))
    return path


def damage_header(path, at):
    data = bytearray(path.read_bytes())
    data[at + 3] ^= 0xFF  # a length byte: the length checksum no longer holds
    path.write_bytes(bytes(data))


def test_resync_continues_after_a_damaged_header(tmp_path, h):
    records = h.make_records(40)
    path = write_raw(h, tmp_path / "h.tfrecord", records)
    offs = h.offsets(records)
    damage_header(path, offs[10])

    # Without resync the rest of the file is given up.
    assert list(tfr.read_records(path, on_error="skip")) == records[:10]

    errors = []
    got = list(tfr.read_records(path, on_error=errors.append, resync=True))
    assert got == records[:10] + records[11:]
    (err,) = errors
    assert isinstance(err, tfr.CorruptRecordError)
    assert err.offset == offs[10]
    assert err.lost == (offs[10], offs[11])


def test_resync_recovers_records_after_a_splice(tmp_path, h):
    records = h.make_records(60, seed=3)
    offs = h.offsets(records)
    raw = b"".join(h.frame(r) for r in records)
    cut = raw[: offs[20] + 5] + raw[offs[23] + 9 :]
    path = tmp_path / "splice.tfrecord"
    path.write_bytes(cut)
    got = list(tfr.read_records(path, on_error="skip", resync=True))
    assert got == records[:20] + records[24:]


def test_resync_with_random_damage_only_returns_real_records(tmp_path, h):
    rng = random.Random(5)
    records = h.make_records(200, seed=9)
    clean = b"".join(h.frame(r) for r in records)
    originals = set(records)
    for trial in range(30):
        data = bytearray(clean)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        if trial % 3 == 0:
            start = rng.randrange(len(data) - 50)
            del data[start : start + rng.randint(1, 50)]
        path = tmp_path / f"r{trial}.tfrecord"
        path.write_bytes(bytes(data))
        got = list(tfr.read_records(path, on_error="skip", resync=True))
        assert set(got) <= originals
        assert len(got) >= len(records) - 30


def test_on_error_callable_can_stop_reading(tmp_path, h):
    records = h.make_records(10)
    path = write_raw(h, tmp_path / "c.tfrecord", records)
    data = bytearray(path.read_bytes())
    data[h.offsets(records)[4] + 12] ^= 1  # the data of record 4
    path.write_bytes(bytes(data))

    class Stop(Exception):
        pass

    def stop(err):
        raise Stop(err.record_index)

    out = []
    with pytest.raises(Stop) as info:
        for r in tfr.read_records(path, on_error=stop):
            out.append(r)
    assert info.value.args == (4,)
    assert out == records[:4]
    with pytest.raises(ValueError, match="on_error"):
        tfr.read_records(path, on_error=42)


def test_verify_reports_lost_byte_ranges(tmp_path, h):
    records = h.make_records(30)
    offs = h.offsets(records)
    path = write_raw(h, tmp_path / "v.tfrecord", records)
    damage_header(path, offs[5])
    data = bytearray(path.read_bytes())
    data[offs[20] + 12] ^= 0x10
    path.write_bytes(bytes(data))
    (report,) = tfr.verify(path)
    assert report.records == 28
    assert [d.lost for d in report.damage] == [(offs[5], offs[6]), (offs[20], offs[21])]
    assert report.lost_bytes == (offs[6] - offs[5]) + (offs[21] - offs[20])


def test_repair_salvages_every_intact_record(tmp_path, h):
    records = h.make_records(50)
    offs = h.offsets(records)
    raw = bytearray(b"".join(h.frame(r) for r in records))
    raw[offs[7] + 2] ^= 0x40  # header of record 7
    raw[offs[30] + 14] ^= 0x01  # data of record 30
    torn = bytes(raw[: offs[50] - 3])  # and a torn tail
    src = tmp_path / "broken.tfrecord"
    src.write_bytes(torn)
    dst = tmp_path / "fixed.tfrecord"
    report = tfr.repair(src, dst)
    kept = list(tfr.read_records(dst))
    assert kept == [r for i, r in enumerate(records) if i not in (7, 30, 49)]
    assert report.records == len(kept)
    assert not report.ok and len(report.damage) == 3
    assert tfr.verify(dst)[0].ok
    with pytest.raises(FileExistsError):
        tfr.repair(src, dst)
    with pytest.raises(FileNotFoundError):
        tfr.repair(tmp_path / "nope.tfrecord", tmp_path / "out.tfrecord")


def test_repair_of_a_gzip_file_and_the_cli(tmp_path, h):
    records = h.make_records(20)
    src = tmp_path / "g.tfrecord.gz"
    with tfr.RecordWriter(src, "gzip") as w:
        w.write_many(records)
    dst = tmp_path / "g-fixed.tfrecord"
    result = CliRunner().invoke(main, ["repair", str(src), "-o", str(dst), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["records"] == 20 and report["ok"]
    assert list(tfr.read_records(dst)) == records

    bad = tmp_path / "bad.tfrecord"
    write_raw(h, bad, records)
    damage_header(bad, h.offsets(records)[2])
    result = CliRunner().invoke(main, ["repair", str(bad), "-o", str(tmp_path / "b2.tfrecord")])
    assert result.exit_code == 1
    assert "kept 19 records" in result.output
    assert "lost    record 2, bytes" in result.output


def test_repair_of_what_is_not_a_tfrecord_file_writes_nothing(tmp_path):
    for name, data in (("picture.png", b"\x89PNG\r\n\x1a\n" + bytes(40)), ("t.csv", b"a,b\n1,2\n")):
        src, dst = tmp_path / name, tmp_path / f"{name}.tfrecord"
        src.write_bytes(data)
        with pytest.raises(tfr.NotTFRecordError, match="no intact record to salvage") as err:
            tfr.repair(src, dst)
        assert err.value.path == str(src) and err.value.record_index == 0
        assert not dst.exists() and not any(tmp_path.glob(".*"))
        result = CliRunner().invoke(main, ["repair", str(src), "-o", str(dst)])
        assert result.exit_code == 1 and result.output.count("\n") == 1
        assert result.output.startswith("error: no intact record to salvage")
        assert "not a TFRecord file" in result.output and not dst.exists()


def test_read_report_counts_records_and_skipped_damage_per_file(tmp_path, h):
    a = h.make_records(30)
    b = h.make_records(12, seed=4)
    pa = write_raw(h, tmp_path / "a.tfrecord", a)
    pb = write_raw(h, tmp_path / "b.tfrecord", b)
    damage_header(pa, h.offsets(a)[8])
    data = bytearray(pb.read_bytes())
    data[h.offsets(b)[5] + 12] ^= 4
    pb.write_bytes(bytes(data))
    report = tfr.ReadReport()
    got = list(tfr.read_records([pa, pb], on_error="skip", resync=True, report=report))
    assert len(got) == 29 + 11
    fa, fb = report.files[str(pa)], report.files[str(pb)]
    assert (fa.records, len(fa.damage), fb.records, len(fb.damage)) == (29, 1, 11, 1)
    assert report.records == 40 and report.skipped == 2 and not report.ok
    assert report.lost_bytes == (h.offsets(a)[9] - h.offsets(a)[8]) + (
        h.offsets(b)[6] - h.offsets(b)[5]
    )
    batches = tfr.ReadReport()
    with pytest.warns(tfr.DataLossWarning):
        read = sum(len(x) for x in tfr.read_batches(pa, 7, on_error="warn", report=batches))
    assert read == 8
    assert batches.skipped == 1 and batches.records == 8
