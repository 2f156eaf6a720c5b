"""One set of read options, taken the same way by every reader: as ``options=`` or as
keyword arguments, never both with two values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr

N = 40


@pytest.fixture
def damaged(tmp_path: Path) -> str:
    """A file of N Examples whose record 7 has a damaged data byte, and whose record 20
    has a damaged length."""
    path = tmp_path / "d.tfrecord"
    records = [
        tfr.encode_example({"i": i, "v": np.arange(i % 4, dtype=np.float32)}) for i in range(N)
    ]
    with tfr.RecordWriter(path) as w:
        w.write_many(records)
    data = bytearray(path.read_bytes())
    starts = np.cumsum([0] + [len(r) + 16 for r in records])
    data[starts[7] + 14] ^= 0xFF
    data[starts[20] + 2] ^= 0xFF
    path.write_bytes(data)
    return str(path)


SCHEMA = {"i": tfr.FixedLen([], "int64"), "v": tfr.VarLen("float32")}


def test_read_arrow_takes_the_error_policy_and_a_report(damaged):
    with pytest.raises(tfr.CorruptRecordError) as info:
        tfr.read_table(damaged, SCHEMA, batch_size=8)
    assert (info.value.path, info.value.record_index) == (damaged, 7)
    report = tfr.ReadReport()
    table = tfr.read_table(
        damaged, SCHEMA, batch_size=8, on_error="skip", resync=True, report=report
    )
    ids = table.column("i").to_pylist()
    assert ids == [i for i in range(N) if i not in (7, 20)]
    assert report.records == N - 2 and report.skipped == 2
    assert table.column("v").to_pylist()[3] == [0.0, 1.0, 2.0]


def test_options_are_one_value_every_reader_takes(damaged):
    opts = tfr.ReadOptions(on_error="skip", resync=True)
    expected = [i for i in range(N) if i not in (7, 20)]
    assert len(list(tfr.read_records(damaged, options=opts))) == N - 2
    assert sum(len(b) for b in tfr.read_batches(damaged, 16, options=opts)) == N - 2
    got = np.concatenate([b["i"] for b in tfr.read_examples(damaged, SCHEMA, 16, options=opts)])
    assert got.tolist() == expected
    assert tfr.read_table(damaged, SCHEMA, options=opts).column("i").to_pylist() == expected
    ds = tfr.Dataset.from_files(damaged, options=opts).parse(SCHEMA)
    assert [int(e["i"]) for e in ds] == expected
    listed = tfr.Dataset.list_files(damaged, options=opts).interleave().parse(SCHEMA)
    assert sorted(int(e["i"]) for e in listed) == expected


def test_a_field_given_twice_with_two_values_is_refused(damaged):
    opts = tfr.ReadOptions(on_error="skip")
    with pytest.raises(TypeError, match="on_error is given twice"):
        list(tfr.read_records(damaged, on_error="warn", options=opts))
    # The same value both ways is no conflict.
    assert (
        len(
            list(
                tfr.read_records(
                    damaged, on_error="skip", resync=True, options=opts.replace(resync=True)
                )
            )
        )
        == N - 2
    )
    with pytest.raises(TypeError, match=r"tfr\.ReadOptions"):
        list(tfr.read_records(damaged, options={"on_error": "skip"}))


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("compression", "zstd", "compression"),
        ("on_error", "ignore", "on_error"),
        ("max_record_bytes", 0, "max_record_bytes"),
    ],
)
def test_bad_options_are_refused_when_made(field, value, match):
    with pytest.raises(ValueError, match=match):
        tfr.ReadOptions(**{field: value})


def test_a_dataset_says_it_fills_no_report(damaged):
    with pytest.raises(ValueError, match="ReadReport"):
        tfr.Dataset.from_files(damaged, options=tfr.ReadOptions(report=tfr.ReadReport()))


def test_count_and_indexed_reads_take_the_fields_that_apply(tmp_path):
    path = tmp_path / "c.tfrecord.gz"
    with tfr.RecordWriter(path, "gzip") as w:
        w.write_many(tfr.encode_example({"i": i}) for i in range(N))
    assert tfr.count(path, options=tfr.ReadOptions(compression="gzip")) == N
    with pytest.raises(tfr.DataLossError):
        tfr.count(path, options=tfr.ReadOptions(compression=None))
    with pytest.raises(TypeError, match="given twice"):
        tfr.count(path, compression="zlib", options=tfr.ReadOptions(compression="gzip"))

    plain = tmp_path / "p.tfrecord"
    with tfr.RecordWriter(plain, index=True) as w:
        w.write_many(tfr.encode_example({"i": i}) for i in range(N))
    data = bytearray(plain.read_bytes())
    data[-6] ^= 0xFF  # the last record's data
    plain.write_bytes(data)
    with pytest.raises(tfr.CorruptRecordError):
        tfr.IndexedDataset(plain)[N - 1]
    lenient = tfr.IndexedDataset(plain, options=tfr.ReadOptions(verify=False))
    assert len(lenient) == N and lenient[N - 1] != tfr.encode_example({"i": N - 1})
    with pytest.raises(TypeError, match="given twice"):
        tfr.IndexedDataset(plain, verify=False, options=tfr.ReadOptions(verify=True))
