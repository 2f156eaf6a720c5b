"""Index sidecars and random access: .idx for plain files, seekable gzip with .gzi."""

from __future__ import annotations

import gzip
import itertools
import random

import numpy as np
import pytest
import tfrecordkit as tfr
from click.testing import CliRunner
from tfrecordkit.cli import main


def records(n, seed=0):
    rng = random.Random(seed)
    return [bytes([i % 251]) * rng.randint(0, 300) + b"%d" % i for i in range(n)]


def test_plain_file_index_written_while_writing_and_rebuilt(tmp_path):
    recs = records(500)
    path = tmp_path / "p.tfrecord"
    with tfr.RecordWriter(path, index=True) as w:
        w.write_many(recs)
    written = (tmp_path / "p.tfrecord.idx").read_text()
    idx = tfr.RecordIndex(path)
    assert len(idx) == 500
    order = list(range(500))
    random.Random(1).shuffle(order)
    assert [idx[i] for i in order] == [recs[i] for i in order]
    assert idx[-1] == recs[-1] and idx[3:6] == recs[3:6]
    with pytest.raises(IndexError):
        idx[500]
    (tmp_path / "p.tfrecord.idx").unlink()
    assert tfr.build_index(path) == str(path) + ".idx"
    assert (tmp_path / "p.tfrecord.idx").read_text() == written


def test_seekable_gzip_is_ordinary_gzip_with_member_index(tmp_path):
    recs = records(20_000, seed=2)
    path = tmp_path / "s.tfrecord.gz"
    with tfr.RecordWriter(path, "gzip", seekable=True, index=True) as w:
        w.write_many(recs)
    sidecar = (tmp_path / "s.tfrecord.gz.gzi").read_text().splitlines()
    members = [tuple(map(int, line.split())) for line in sidecar]
    assert len(members) > 1
    assert sum(m[3] for m in members) == len(recs)
    # Members tile the file and each starts with the gzip magic.
    data = path.read_bytes()
    assert members[0][0] == 0 and members[-1][0] + members[-1][1] == len(data)
    for (o, n, _, _), (o2, _, _, _) in itertools.pairwise(members):
        assert o + n == o2
        assert data[o2 : o2 + 2] == b"\x1f\x8b"
    assert gzip.decompress(data)  # one stream to any gzip reader
    assert list(tfr.read_records(path)) == recs
    idx = tfr.RecordIndex(path)
    assert len(idx) == len(recs)
    for i in (0, 1, 9999, 19_999, 1234, 1235):
        assert idx[i] == recs[i]
    assert tfr.count(path) == len(recs)


def test_write_dataset_seekable_shards(tmp_path):
    n = 30_000
    m = tfr.write_dataset(
        {"i": np.arange(n), "pad": [b"x" * 40] * n},
        tmp_path / "d",
        num_shards=3,
        compression="gzip",
        seekable=True,
        progress=False,
    )
    for f in m.files:
        idx = tfr.RecordIndex(f)
        first = tfr.decode_example(idx[0])["i"][0]
        last = tfr.decode_example(idx[len(idx) - 1])["i"][0]
        assert last - first == len(idx) - 1
    with pytest.raises(ValueError, match="gzip"):
        tfr.write_dataset({"i": np.arange(3)}, tmp_path / "e", seekable=True)


def test_stale_or_damaged_index_is_data_loss(tmp_path):
    path = tmp_path / "x.tfrecord"
    with tfr.RecordWriter(path, index=True) as w:
        w.write_many(records(20))
    with open(path, "ab") as f:
        f.write(b"junk")
    with pytest.raises(tfr.DataLossError, match="rebuild"):
        tfr.RecordIndex(path)
    path2 = tmp_path / "y.tfrecord"
    with tfr.RecordWriter(path2, index=True) as w:
        w.write_many(records(20))
    lines = (tmp_path / "y.tfrecord.idx").read_text().splitlines()
    offset, length = map(int, lines[5].split())
    lines[5] = f"{offset + 1} {length}"
    (tmp_path / "y.tfrecord.idx").write_text("\n".join(lines) + "\n")
    # An entry that does not start where the one before it ends is refused on opening.
    with pytest.raises(tfr.DataLossError, match="index entry 5 starts at byte") as info:
        tfr.RecordIndex(path2)
    assert info.value.path == str(path2) + ".idx"
    # So is an index that lists a file's records in another order, or some twice: counts
    # and byte ranges scan the file instead of trusting it.
    lines[5] = f"{offset} {length}"
    (tmp_path / "y.tfrecord.idx").write_text("\n".join(lines[1:2] + lines[:1] + lines[2:]) + "\n")
    with pytest.raises(tfr.DataLossError, match="index entry 0 starts at byte"):
        tfr.RecordIndex(path2)
    assert tfr.count(str(path2)) == 20
    (tmp_path / "y.tfrecord.idx").write_text("\n".join(lines[:1] * 1000 + lines[1:]) + "\n")
    assert tfr.count(str(path2)) == 20
    spans = tfr.byte_ranges([str(path2)], target_bytes=200)
    with pytest.raises(tfr.DataLossError, match="index entry 1 starts at byte"):
        [r for span in spans for r in tfr.read_records(span)]
    with pytest.raises(FileNotFoundError):
        tfr.RecordIndex(tmp_path / "nothing.tfrecord")


def test_cli_index(tmp_path):
    a, b = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord.gz"
    with tfr.RecordWriter(a) as w:
        w.write_many(records(10))
    with tfr.RecordWriter(b, "gzip") as w:
        w.write_many(records(10))
    result = CliRunner().invoke(main, ["index", str(a)])
    assert result.exit_code == 0, result.output
    assert len(tfr.RecordIndex(a)) == 10
    result = CliRunner().invoke(main, ["index", str(b)])
    assert result.exit_code == 1


def test_index_replaces_an_index_but_not_another_file_at_its_name(tmp_path):
    a = tmp_path / "a.tfrecord"
    with tfr.RecordWriter(a) as w:
        w.write_many(records(10))
    sidecar = tmp_path / "a.tfrecord.idx"
    sidecar.write_text("0 1\n")  # a stale index: replaced
    tfr.build_index(a)
    assert len(tfr.RecordIndex(a)) == 10
    sidecar.write_text("notes I keep here\n")
    result = CliRunner().invoke(main, ["index", str(a)])
    assert result.exit_code == 1
    assert "exists and is not an index (it starts with 'notes I keep here')" in result.output
    assert sidecar.read_text() == "notes I keep here\n"
