"""Byte ranges: one large file shared by several readers through its index sidecar."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr
from hypothesis import given, settings
from hypothesis import strategies as st
from tfrecordkit.io.ranges import TO_END

N = 3000


def _payload(i: int) -> bytes:
    return bytes([i % 251]) * (i % 97)


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[str, list[bytes]]:
    """One indexed file of ``N`` records of differing lengths."""
    path = str(tmp_path_factory.mktemp("ranges") / "big.tfrecord")
    records = [_payload(i) for i in range(N)]
    with tfr.RecordWriter(path, index=True) as w:
        for r in records:
            w.write(r)
    return path, records


def test_ranges_cover_every_record_once_in_every_reader(big) -> None:
    path, records = big
    size = os.path.getsize(path)
    for target in (size // 9, size // 2, 1000, 99):
        parts = tfr.byte_ranges(path, target_bytes=target)
        assert len(parts) == -(-size // target)
        assert all(isinstance(p, tfr.ByteRange) for p in parts)
        assert parts[0].start == 0 and parts[-1].end == TO_END
        assert [p.end for p in parts[:-1]] == [p.start for p in parts[1:]]
        assert [r for p in parts for r in tfr.read_records(p)] == records
        assert [r for b in tfr.read_batches(parts, 100) for r in b] == records


def test_read_arrow_and_table_take_ranges(tmp_path: Path) -> None:
    ids = np.arange(5000)
    written = tfr.write_dataset(
        {"id": ids, "name": [b"x" * (i % 40) for i in ids]}, str(tmp_path / "d"), num_shards=1
    )
    (path,) = written.files
    parts = tfr.byte_ranges(path, target_bytes=-(-os.path.getsize(path) // 5))
    assert len(parts) == 5
    tables = [tfr.read_table(p) for p in parts]
    assert all(t.num_rows for t in tables)
    assert np.concatenate([t["id"].to_numpy() for t in tables]).tolist() == ids.tolist()
    whole = tfr.read_arrow(parts, batch_size=777).read_all()
    assert whole["id"].to_pylist() == ids.tolist()
    assert tfr.infer_schema(parts[2]) == tfr.infer_schema(path)


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(0, 200_000), max_size=12))
def test_ranges_cut_anywhere_read_each_record_once(big, cuts: list[int]) -> None:
    path, records = big
    bounds = [0, *sorted(cuts), TO_END]
    parts = [tfr.ByteRange(path, a, b) for a, b in itertools.pairwise(bounds)]
    assert [r for b in tfr.read_batches(parts, 64) for r in b] == records


def test_small_compressed_and_unindexed_files_stay_whole(tmp_path: Path) -> None:
    data = {"id": np.arange(2000)}
    indexed = tfr.write_dataset(data, str(tmp_path / "a"), num_shards=1).files[0]
    gz = tfr.write_dataset(data, str(tmp_path / "b"), num_shards=1, compression="gzip").files[0]
    bare = str(tmp_path / "c.tfrecord")
    with tfr.RecordWriter(bare) as w:
        w.write_many([b"x" * 50] * 2000)
    parts = tfr.byte_ranges([indexed, gz, bare], target_bytes=4096)
    assert parts.count(gz) == 1 and parts.count(bare) == 1
    assert sum(isinstance(p, tfr.ByteRange) for p in parts) > 1
    assert tfr.byte_ranges(indexed, target_bytes=1 << 30) == [indexed]
    assert tfr.byte_ranges(indexed, target_bytes=4096, compression="gzip") == [indexed]
    with pytest.raises(ValueError, match="target_bytes"):
        tfr.byte_ranges(indexed, target_bytes=0)


def test_a_stale_index_keeps_the_file_whole(big, tmp_path: Path) -> None:
    path, records = big
    grown = tmp_path / "grown.tfrecord"
    grown.write_bytes(Path(path).read_bytes())
    Path(str(grown) + ".idx").write_bytes(Path(path + ".idx").read_bytes())
    with tfr.RecordWriter(str(tmp_path / "more.tfrecord")) as w:
        w.write(b"appended")
    with open(grown, "ab") as f:
        f.write((tmp_path / "more.tfrecord").read_bytes())
    assert tfr.byte_ranges(str(grown), target_bytes=1000) == [str(grown)]
    assert list(tfr.read_records(str(grown))) == [*records, b"appended"]


def test_damage_in_a_range_names_the_file_offset_and_record(tmp_path: Path) -> None:
    path = str(tmp_path / "d.tfrecord")
    with tfr.RecordWriter(path, index=True) as w:
        for i in range(100):
            w.write(_payload(i))
    offsets = [int(line.split()[0]) for line in Path(path + ".idx").read_text().splitlines()]
    raw = bytearray(Path(path).read_bytes())
    raw[offsets[70] + 12] ^= 0xFF  # the first data byte of record 70
    Path(path).write_bytes(bytes(raw))
    part = tfr.ByteRange(path, offsets[60] - 3, TO_END)
    with pytest.raises(tfr.CorruptRecordError) as caught:
        list(tfr.read_records(part))
    err = caught.value
    assert (err.path, err.offset, err.record_index) == (path, offsets[70], 70)
    skipped = list(tfr.read_records(part, on_error="skip"))
    assert skipped == [_payload(i) for i in range(60, 100) if i != 70]


def test_a_range_needs_its_index_and_an_uncompressed_file(big, tmp_path: Path) -> None:
    bare = str(tmp_path / "bare.tfrecord")
    with tfr.RecordWriter(bare) as w:
        w.write(b"x")
    with pytest.raises(FileNotFoundError, match="index sidecar") as caught:
        list(tfr.read_records(tfr.ByteRange(bare, 0, 10)))
    assert caught.value.filename == bare + ".idx"
    gz = str(tmp_path / "z.tfrecord.gz")
    with tfr.RecordWriter(gz, compression="gzip") as w:
        w.write(b"x")
    Path(gz + ".idx").write_text("0 17\n")
    with pytest.raises(ValueError, match="uncompressed"):
        list(tfr.read_records(tfr.ByteRange(gz, 0, 10)))
    with pytest.raises(ValueError, match="from 0 up"):
        list(tfr.read_records(tfr.ByteRange(bare, 5, 2)))
    with pytest.raises(ValueError, match="whole files"):
        list(tfr.read_records([tfr.ByteRange(big[0], 0, 1)], follow=True))
