"""tfr.verify and the command line (through click's CliRunner)."""

from __future__ import annotations

import base64
import json
import os

import pytest
import tfrecordkit as tfr
from click.testing import CliRunner
from tfrecordkit.cli import main


@pytest.fixture
def files(tmp_path, u):
    """A good file, a file with one bad data CRC, a truncated file, a good gzip file."""
    good_records = [
        tfr.encode_example({"id": i, "name": f"n{i}", "x": [0.5, 1.5]}) for i in range(6)
    ]
    good = u.write_file(tmp_path / "good.tfrecord", good_records)
    raw = bytearray(b"".join(u.frame(r) for r in good_records))
    bad_offset = sum(16 + len(r) for r in good_records[:2])
    raw[bad_offset + 14] ^= 0x01
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(raw))
    trunc = tmp_path / "trunc.tfrecord"
    trunc_offset = sum(16 + len(r) for r in good_records[:5])
    trunc.write_bytes(b"".join(u.frame(r) for r in good_records)[:-3])
    gz = u.write_file(tmp_path / "good.tfrecord.gz", good_records, "gzip")
    return SimpleFiles(good, str(bad), str(trunc), gz, good_records, bad_offset, trunc_offset)


class SimpleFiles:
    def __init__(self, good, bad, trunc, gz, records, bad_offset, trunc_offset):
        self.good, self.bad, self.trunc, self.gz = good, bad, trunc, gz
        self.records, self.bad_offset, self.trunc_offset = records, bad_offset, trunc_offset


# ---------------------------------------------------------------- verify()


def test_verify_reports_per_file(files):
    reports = tfr.verify([files.good, files.bad, files.trunc, files.gz])
    assert [r.path for r in reports] == [files.good, files.bad, files.trunc, files.gz]
    assert all(isinstance(r, tfr.FileReport) for r in reports)
    good, bad, trunc, gz = reports
    assert (good.ok, good.records, good.damage, good.failure) == (True, 6, [], None)
    assert (gz.ok, gz.records) == (True, 6)
    assert not bad.ok and bad.records == 5
    (d,) = bad.damage
    assert (d.offset, d.record_index, d.error) == (files.bad_offset, 2, "CorruptRecordError")
    assert not trunc.ok and trunc.records == 5
    (d,) = trunc.damage
    assert (d.offset, d.record_index, d.error) == (files.trunc_offset, 5, "TruncatedRecordError")
    as_dict = bad.to_dict()
    assert as_dict["ok"] is False and as_dict["damage"][0]["offset"] == files.bad_offset
    json.dumps(as_dict)


def test_verify_glob_and_errors(files, tmp_path):
    reports = tfr.verify(str(tmp_path / "*.tfrecord"))
    assert [os.path.basename(r.path) for r in reports] == [
        "bad.tfrecord",
        "good.tfrecord",
        "trunc.tfrecord",
    ]
    with pytest.raises(FileNotFoundError):
        tfr.verify(tmp_path / "nothing.tfrecord")


def test_verify_several_damaged_records(tmp_path, u):
    records = [b"%d" % i * 5 for i in range(20)]
    raw = bytearray(b"".join(u.frame(r) for r in records))
    offsets = [sum(16 + len(r) for r in records[:k]) for k in (3, 4, 17)]
    for at in offsets:
        raw[at + 12] ^= 0x20
    path = tmp_path / "multi.tfrecord"
    path.write_bytes(bytes(raw))
    (report,) = tfr.verify(path)
    assert report.records == 17
    assert [(d.offset, d.record_index) for d in report.damage] == list(
        zip(offsets, (3, 4, 17), strict=True)
    )


# ---------------------------------------------------------------- CLI


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_cli_head(files):
    res = invoke("head", files.good, "-n", "2")
    assert res.exit_code == 0, res.output
    assert "record 0" in res.output and "record 1" in res.output and "record 2" not in res.output
    assert "n0" in res.output and "id" in res.output
    res = invoke("head", files.good)
    assert res.exit_code == 0
    assert sum(line.startswith("record ") for line in res.output.splitlines()) == 5


def test_cli_head_json(files, tmp_path):
    res = invoke("head", files.gz, "-n", "3", "--json")
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 3
    objs = [json.loads(line) for line in lines]
    assert objs[1] == {"id": [1], "name": ["n1"], "x": [0.5, 1.5]}
    # Non-UTF-8 bytes come out as base64; non-Examples are reported, not fatal.
    odd = tmp_path / "odd.tfrecord"
    with tfr.RecordWriter(odd) as w:
        w.write(tfr.encode_example({"raw": b"\xff\x00"}))
        w.write(b"\x0f not an example")
    res = invoke("head", str(odd), "--json")
    assert res.exit_code == 0, res.output
    first, second = (json.loads(line) for line in res.output.strip().splitlines())
    assert first == {"raw": [{"base64": base64.b64encode(b"\xff\x00").decode()}]}
    assert second["record"] == 1 and "error" in second


def test_cli_count(files):
    res = invoke("count", files.good)
    assert res.exit_code == 0 and res.output.strip() == "6"
    res = invoke("count", files.good, files.gz, files.bad)
    assert res.exit_code == 0
    assert res.output.strip().splitlines()[-1].split() == ["18", "total"]
    res = invoke("count", "--json", files.good, files.gz)
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert data == {"files": {files.good: 6, files.gz: 6}, "total": 12}


def test_cli_count_glob_and_missing(files, tmp_path):
    res = invoke("count", "--json", str(tmp_path / "good.*"))
    assert json.loads(res.output)["total"] == 12
    res = invoke("count", str(tmp_path / "missing.tfrecord"))
    assert res.exit_code == 1
    assert "missing.tfrecord" in res.output


def test_cli_verify_ok(files):
    res = invoke("verify", files.good, files.gz)
    assert res.exit_code == 0, res.output
    assert res.output.count("ok") >= 2


def test_cli_verify_damaged(files):
    res = invoke("verify", files.good, files.bad)
    assert res.exit_code == 1
    assert "DAMAGED" in res.output
    assert f"offset {files.bad_offset}" in res.output
    res = invoke("verify", "--json", files.trunc)
    assert res.exit_code == 1
    report = json.loads(res.output)
    assert report["ok"] is False
    assert report["damage"][0]["offset"] == files.trunc_offset


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["nope"],
        ["head"],
        ["count"],
        ["verify"],
        ["head", "x", "-n", "many"],
        ["count", "x", "--compression", "lz4"],
        ["head", "x", "--bogus"],
    ],
)
def test_cli_usage_errors_exit_2(args):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, (args, res.output)


def test_cli_head_missing_file_exits_1(tmp_path):
    res = invoke("head", str(tmp_path / "missing"))
    assert res.exit_code == 1
    assert "error" in res.output


def test_cli_demo(tmp_path):
    directory = tmp_path / "demo"
    res = invoke("demo", "--dir", str(directory), "-n", "500")
    assert res.exit_code == 0, res.output
    assert "all checks passed" in res.output
    assert tfr.count(str(directory / "sample.tfrecord")) == 500
    assert tfr.count(str(directory / "sample.tfrecord.gz")) == 500
    assert "24 Examples in shuffled batches of 8, ok" in res.output
    assert "24 images equal to their source files" in res.output
    assert "[(8, 32, 32, 3)], ok" in res.output
    train = tfr.load(directory / "converted", "train")
    assert sum(1 for _ in train) == 24
    # Run again, it replaces what it wrote; a directory of other files is refused.
    assert invoke("demo", "--dir", str(directory), "-n", "50").exit_code == 0
    assert tfr.count(str(directory / "sample.tfrecord")) == 50
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "sample.tfrecord").write_bytes(b"my own records")
    res = invoke("demo", "--dir", str(mine))
    assert res.exit_code == 2
    assert "holds files the demo did not write" in res.output
    assert (mine / "sample.tfrecord").read_bytes() == b"my own records"


def test_cli_help_and_version():
    res = invoke("--help")
    assert res.exit_code == 0
    for command in ("head", "count", "verify", "demo"):
        assert command in res.output
    res = invoke("--version")
    assert res.exit_code == 0 and tfr.__version__ in res.output
