"""Large records read straight into their ``bytes`` (one copy): every size around the
reader's buffer and direct-read thresholds, damage inside a large record, and a file cut
short while it is read."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tfrecordkit as tfr

# The reader's first buffer is 64 KiB; records of 64 KiB and more are read past it.
SIZES = [0, 1, 3, 65_535 - 16, 65_536 - 12, 65_535, 65_536, 65_537, 131_072, 1_000_003, 7, 0]


def _records(seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(n) for n in SIZES] * 2


@pytest.fixture
def mixed(tmp_path):
    path = tmp_path / "mixed.tfrecord"
    records = _records()
    with tfr.RecordWriter(path) as w:
        w.write_many(records)
    return path, records


def test_every_size_reads_back_whole(mixed):
    path, records = mixed
    assert list(tfr.read_records(path)) == records
    assert [r for b in tfr.read_batches(path, 5) for r in b] == records
    assert list(tfr.Dataset.from_files(path)) == records
    got = list(tfr.read_records(path, verify=False))
    assert got == records and all(type(r) is bytes for r in got)


def _offsets(records: list[bytes]) -> list[int]:
    return list(np.cumsum([0] + [len(r) + 16 for r in records])[:-1])


@pytest.mark.parametrize("policy", ["skip", "warn"])
def test_damage_inside_a_large_record_is_stepped_over(mixed, policy):
    path, records = mixed
    data = bytearray(path.read_bytes())
    damaged = SIZES.index(1_000_003)
    data[_offsets(records)[damaged] + 12 + 500_000] ^= 0x55
    path.write_bytes(bytes(data))
    with pytest.raises(tfr.CorruptRecordError, match="checksum") as info:
        list(tfr.read_records(path))
    assert info.value.record_index == damaged and info.value.path == str(path)
    # A pipeline's reader threads read large records in place too, and name the damage.
    with pytest.raises(tfr.CorruptRecordError, match="checksum") as info:
        list(tfr.Dataset.from_files(path))
    assert info.value.record_index == damaged and info.value.path == str(path)
    if policy == "warn":
        with pytest.warns(tfr.DataLossWarning):
            got = list(tfr.read_records(path, on_error=policy))
    else:
        got = list(tfr.read_records(path, on_error=policy))
    assert got == records[:damaged] + records[damaged + 1 :]
    assert list(tfr.Dataset.from_files(path, on_error="skip")) == got


def test_a_file_cut_inside_a_large_record(mixed):
    path, records = mixed
    cut = _offsets(records)[SIZES.index(131_072)] + 12 + 70_000
    with open(path, "r+b") as f:
        f.truncate(cut)
    got = []
    with pytest.raises(tfr.TruncatedRecordError) as info:
        for r in tfr.read_records(path):
            got.append(r)
    assert got == records[: SIZES.index(131_072)]
    assert info.value.path == str(path)
    got = []
    with pytest.raises(tfr.TruncatedRecordError) as info:
        for r in tfr.Dataset.from_files(path):
            got.append(r)
    assert got == records[: SIZES.index(131_072)]
    assert info.value.path == str(path)


def test_a_file_truncated_while_it_is_read(tmp_path):
    path = tmp_path / "shrinking.tfrecord"
    records = [bytes([i]) * 300_000 for i in range(20)]
    with tfr.RecordWriter(path) as w:
        w.write_many(records)
    reader = tfr.read_records(path)
    assert next(reader) == records[0]
    os.truncate(path, 5 * 300_016 + 100)
    with pytest.raises(tfr.DataLossError):
        for r in reader:
            assert r in records


def test_a_length_the_file_cannot_hold_is_not_allocated(tmp_path):
    # A header claiming 1 GiB in a file of 100 bytes: reported as truncated, not allocated.
    from tfrecordkit import _core

    path = tmp_path / "claim.tfrecord"
    claim = (1 << 30).to_bytes(8, "little")
    path.write_bytes(claim + _core.masked_crc32c(claim).to_bytes(4, "little") + b"\0" * 100)
    with pytest.raises(tfr.TruncatedRecordError, match="declares 1073741824 bytes"):
        list(tfr.read_records(path))


def test_schema_inference_reads_a_bounded_sample(tmp_path, monkeypatch):
    from tfrecordkit.schema import reading

    monkeypatch.setattr(reading, "SAMPLE_BYTES", 1000)
    path = tmp_path / "wide.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"a": b"x" * 600}))
        w.write(tfr.encode_example({"a": b"y" * 600}))
        w.write(tfr.encode_example({"b": 1}))
    # The first two records hold the sample's 1,000 bytes; the third is not read.
    assert list(tfr.infer_schema(path)) == ["a"]


def test_indexed_reads_of_large_records(mixed):
    path, records = mixed
    tfr.build_index(path)
    ds = tfr.IndexedDataset(path)
    order = list(range(len(records)))[::-1]
    assert ds.__getitems__(order) == [records[i] for i in order]
    assert [ds[i] for i in range(len(records))] == records


def test_indexed_reads_name_damage_in_a_large_record(mixed):
    path, records = mixed
    tfr.build_index(path)
    big = SIZES.index(131_072)
    at = _offsets(records)[big]
    data = bytearray(path.read_bytes())
    data[at + 12 + 100_000] ^= 1
    path.write_bytes(bytes(data))
    ds = tfr.IndexedDataset(path)
    with pytest.raises(tfr.CorruptRecordError, match="data checksum") as info:
        ds.__getitems__([0, big])
    assert info.value.offset == at and info.value.path == str(path)
    with pytest.raises(tfr.CorruptRecordError, match="data checksum") as one:
        ds[big]
    assert one.value.offset == at and one.value.path == str(path)
    assert tfr.IndexedDataset(path, verify=False)[big] != records[big]
    # A stale index whose entry no longer frames a record is data loss, not a wrong read.
    data[at : at + 8] = (131_000).to_bytes(8, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(tfr.DataLossError):
        tfr.IndexedDataset(path)[big]


def _two_files(tmp_path) -> tuple[list, list[bytes]]:
    """Small records, then large ones mixed with small (the reader starts reading ahead
    and meets its first large record in the first file), then a second such file."""
    rng = np.random.default_rng(5)
    small = [rng.bytes(int(n)) for n in rng.integers(0, 300, 40)]
    paths, records = [], []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.tfrecord"
        these = small + _records(len(paths))
        with tfr.RecordWriter(path) as w:
            w.write_many(these)
        paths.append(path)
        records += these
    return paths, records


@pytest.mark.parametrize(("batch_size", "batch_bytes"), [(7, 300_000), (1024, 4 << 20), (3, 1)])
def test_batches_of_large_records_keep_their_bounds(tmp_path, batch_size, batch_bytes):
    # Read ahead until the first large record, then each straight into its bytes: the
    # batches are those the bounds make, whichever way each record was read.
    paths, records = _two_files(tmp_path)
    report = tfr.ReadReport()
    batches = list(tfr.read_batches(paths, batch_size, batch_bytes=batch_bytes, report=report))
    assert [r for b in batches for r in b] == records
    assert all(type(r) is bytes for b in batches for r in b)
    for batch in batches[:-1]:
        full = len(batch) == batch_size or sum(map(len, batch)) >= batch_bytes
        assert full and sum(map(len, batch[:-1])) < batch_bytes
    assert report.records == len(records)


def test_damage_in_a_large_record_read_in_place_is_named_and_skipped(tmp_path):
    paths, records = _two_files(tmp_path)
    per_file = len(records) // 2
    big = 40 + SIZES.index(1_000_003)
    at = _offsets(records[:per_file])[big]
    data = bytearray(paths[1].read_bytes())
    data[at + 12 + 999_000] ^= 0x10
    paths[1].write_bytes(bytes(data))
    got = []
    with pytest.raises(tfr.CorruptRecordError, match="checksum") as info:
        for batch in tfr.read_batches(paths, 5):
            got += batch
    assert (info.value.path, info.value.record_index) == (str(paths[1]), big)
    assert info.value.offset == at
    assert got == records[: per_file + big]
    report = tfr.ReadReport()
    got = [r for b in tfr.read_batches(paths, 5, on_error="skip", report=report) for r in b]
    assert got == records[: per_file + big] + records[per_file + big + 1 :]
    assert (report.records, report.skipped) == (len(records) - 1, 1)


def _example_files(tmp_path, damage: bool = False) -> tuple[list, list[dict]]:
    """Examples with a bytes feature of a few bytes to 1 MB and an int label: small ones
    first (read ahead), then large ones mixed with small (each parsed as it is read)."""
    rng = np.random.default_rng(9)
    paths, rows = [], []
    for name in ("a", "b"):
        sizes = [int(n) for n in rng.integers(0, 200, 30)] + SIZES
        these = [{"blob": rng.bytes(n), "label": i} for i, n in enumerate(sizes)]
        path = tmp_path / f"{name}.tfrecord"
        with tfr.RecordWriter(path) as w:
            w.write_many(tfr.encode_example(r) for r in these)
        paths.append(path)
        rows += these
    return paths, rows


SCHEMA = {"blob": tfr.FixedLen([], "bytes"), "label": tfr.FixedLen([], "int64")}


@pytest.mark.parametrize(("batch_size", "batch_bytes"), [(7, 300_000), (1024, 4 << 20), (2, 1)])
def test_examples_with_large_values_parse_as_they_are_read(tmp_path, batch_size, batch_bytes):
    paths, rows = _example_files(tmp_path)
    report = tfr.ReadReport()
    batches = list(
        tfr.read_examples(paths, SCHEMA, batch_size, batch_bytes=batch_bytes, report=report)
    )
    assert [v for b in batches for v in b["blob"]] == [r["blob"] for r in rows]
    assert [int(v) for b in batches for v in b["label"]] == [r["label"] for r in rows]
    assert all(len(b["label"]) <= batch_size for b in batches)
    assert report.records == len(rows)
    table = tfr.read_arrow(paths, SCHEMA, batch_size=batch_size, batch_bytes=batch_bytes)
    table = table.read_all()
    assert table.column("blob").to_pylist() == [r["blob"] for r in rows]
    assert table.column("label").to_pylist() == [r["label"] for r in rows]


def test_a_bad_example_among_large_ones_is_named(tmp_path):
    paths, _ = _example_files(tmp_path)
    # A record of the second file that is no Example: named by its file and index.
    records = list(tfr.read_records(paths[1]))
    bad = 30 + SIZES.index(131_072)
    records[bad] = b"\xff" * 70_000
    with tfr.RecordWriter(paths[1]) as w:
        w.write_many(records)
    with pytest.raises(tfr.ExampleDecodeError) as info:
        for _ in tfr.read_arrow(paths, SCHEMA, batch_size=5):
            pass
    assert (info.value.path, info.value.record_index) == (str(paths[1]), bad)


def test_damage_in_a_large_example_is_skipped_with_its_neighbours_kept(tmp_path):
    paths, rows = _example_files(tmp_path)
    per_file = len(rows) // 2
    big = 30 + SIZES.index(1_000_003)
    records = list(tfr.read_records(paths[0]))
    at = _offsets(records)[big]
    data = bytearray(paths[0].read_bytes())
    data[at + 12 + 900_000] ^= 0x08
    paths[0].write_bytes(bytes(data))
    with pytest.raises(tfr.CorruptRecordError) as info:
        list(tfr.read_examples(paths, SCHEMA, 5))
    assert (info.value.path, info.value.record_index, info.value.offset) == (
        str(paths[0]),
        big,
        at,
    )
    report = tfr.ReadReport()
    batches = list(tfr.read_examples(paths, SCHEMA, 5, on_error="skip", report=report))
    kept = rows[:big] + rows[big + 1 :]
    assert [v for b in batches for v in b["blob"]] == [r["blob"] for r in kept]
    assert (report.records, report.skipped) == (len(rows) - 1, 1)
    assert per_file == 30 + len(SIZES)


def test_a_file_cut_inside_a_large_example_read_ahead(tmp_path):
    """read_examples reads Examples of up to 1 MiB ahead, each into a buffer of its own: a
    file cut inside one gives every Example before the cut, then the cut, named."""
    paths, rows = _example_files(tmp_path)
    records = list(tfr.read_records(paths[0]))
    cut = 30 + SIZES.index(131_072)
    with open(paths[0], "r+b") as f:
        f.truncate(_offsets(records)[cut] + 12 + 70_000)
    got = []
    with pytest.raises(tfr.TruncatedRecordError) as info:
        for batch in tfr.read_examples(paths[0], SCHEMA, 4):
            got += list(batch["blob"])
    assert got == [r["blob"] for r in rows[:cut]]
    assert info.value.path == str(paths[0])


def test_a_large_value_starting_its_batch_reaches_arrow_where_it_was_read(tmp_path):
    """A record larger than 1 MiB that starts a batch is parsed where it was read: its
    value is not moved, and Arrow's offsets begin past the record's bytes before it."""
    rng = np.random.default_rng(4)
    rows = [{"label": i, "blob": rng.bytes(n)} for i, n in enumerate([3 << 20, 5, 2 << 20])]
    path = tmp_path / "big.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write_many(tfr.encode_example(r) for r in rows)
    batches = list(tfr.read_arrow(path, SCHEMA, batch_bytes=1))
    assert [b.num_rows for b in batches] == [1, 1, 1]
    for batch, row in zip(batches, rows, strict=True):
        column = batch.column("blob")
        assert column.to_pylist() == [row["blob"]]
        if len(row["blob"]) > 1 << 20:
            offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)
            assert offsets[column.offset] > 0
    table = tfr.read_arrow(path, SCHEMA).read_all()
    assert table.column("blob").to_pylist() == [r["blob"] for r in rows]
    assert table.column("label").to_pylist() == [0, 1, 2]


def test_a_record_over_1_mib_starts_its_batch(tmp_path):
    """Within the byte bound, a batch ends before a record over 1 MiB, which starts the
    next one read in place; read_examples cuts its batches the same way."""
    rng = np.random.default_rng(5)
    sizes = [10, 20, 2 << 20, 30, 3 << 20, 1 << 19]
    rows = [{"label": i, "blob": rng.bytes(n)} for i, n in enumerate(sizes)]
    path = tmp_path / "mixed.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write_many(tfr.encode_example(r) for r in rows)
    batches = list(tfr.read_arrow(path, SCHEMA))
    assert [b.num_rows for b in batches] == [2, 2, 2]
    got = [v for b in batches for v in b.column("blob").to_pylist()]
    assert got == [r["blob"] for r in rows]
    for batch in batches[1:]:
        offsets = np.frombuffer(batch.column("blob").buffers()[1], dtype=np.int64)
        assert offsets[0] > 0
    parsed = list(tfr.read_examples(path, SCHEMA, 1024))
    assert [len(b["label"]) for b in parsed] == [2, 2, 2]
    assert [v for b in parsed for v in b["blob"]] == [r["blob"] for r in rows]


def test_large_values_after_the_first_batch_land_in_their_own_column(tmp_path):
    """With the large value in the schema's second bytes feature, the batches after the
    first read each record into that feature's column, where the value stays put."""
    rng = np.random.default_rng(6)
    rows = [{"caption": b"photo %d" % i, "image": rng.bytes(2 << 20)} for i in range(3)]
    path = tmp_path / "captioned.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write_many(tfr.encode_example(r) for r in rows)
    schema = {"caption": tfr.FixedLen([], "bytes"), "image": tfr.FixedLen([], "bytes")}
    batches = list(tfr.read_arrow(path, schema))
    assert [b.num_rows for b in batches] == [1, 1, 1]
    for key in schema:
        got = [v for b in batches for v in b.column(key).to_pylist()]
        assert got == [r[key] for r in rows]
    firsts = [
        int(np.frombuffer(b.column("image").buffers()[1], dtype=np.int64)[0]) for b in batches
    ]
    assert all(f > 0 for f in firsts[1:]), firsts
