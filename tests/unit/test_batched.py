"""Batched reading (read_batches, read_examples) and columnar writing (write_examples)."""

from __future__ import annotations

import numpy as np
import pytest
import tfrecordkit as tfr


def write(path, records, compression=None):
    with tfr.RecordWriter(path, compression) as w:
        w.write_many(records)
    return path


@pytest.fixture
def two_files(tmp_path):
    a = [tfr.encode_example({"i": k, "s": f"a{k}"}) for k in range(7)]
    b = [tfr.encode_example({"i": 100 + k, "s": f"b{k}"}) for k in range(5)]
    return (
        [write(tmp_path / "a.tfrecord", a), write(tmp_path / "b.tfrecord.gz", b, "gzip")],
        a + b,
    )


SCHEMA = {"i": tfr.FixedLen([], "int64"), "s": tfr.VarLen("bytes")}


@pytest.mark.parametrize("batch_size", [1, 3, 7, 12, 100])
def test_read_batches_spans_files_in_order(two_files, batch_size):
    paths, records = two_files
    batches = list(tfr.read_batches(paths, batch_size))
    assert [r for b in batches for r in b] == records
    assert all(len(b) == batch_size for b in batches[:-1])
    assert 0 < len(batches[-1]) <= batch_size


@pytest.mark.parametrize("batch_size", [1, 4, 12, 50])
def test_read_examples_equals_parse_examples(two_files, batch_size):
    paths, records = two_files
    got = list(tfr.read_examples(paths, SCHEMA, batch_size))
    assert sum(len(b["i"]) for b in got) == len(records)
    expected = tfr.parse_examples(records, SCHEMA)
    np.testing.assert_array_equal(np.concatenate([b["i"] for b in got]), expected["i"])
    assert [row.tolist() for b in got for row in b["s"]] == expected["s"].to_list()


def test_read_examples_validates_eagerly(tmp_path):
    with pytest.raises(FileNotFoundError):
        tfr.read_examples(tmp_path / "missing.tfrecord", SCHEMA)
    with pytest.raises(ValueError, match="on_error"):
        tfr.read_examples(tmp_path, SCHEMA, on_error="ignore")
    with pytest.raises(FileNotFoundError):
        tfr.read_batches(tmp_path / "nothing-*.tfrecord")


def test_read_examples_schema_error_names_key_and_record(tmp_path):
    path = write(
        tmp_path / "x.tfrecord",
        [tfr.encode_example({"i": 1}), tfr.encode_example({"i": [1, 2]})],
    )
    with pytest.raises(tfr.SchemaError) as info:
        list(tfr.read_examples(path, {"i": tfr.FixedLen([], "int64")}))
    assert info.value.key == "i"
    assert info.value.record_index == 1


def test_read_examples_skips_damaged_records(tmp_path):
    records = [tfr.encode_example({"i": k, "s": b"x"}) for k in range(10)]
    path = write(tmp_path / "d.tfrecord", records)
    data = bytearray(path.read_bytes())
    record_len = 16 + len(records[0])
    data[3 * record_len + 14] ^= 0xFF  # data of record 3
    path.write_bytes(bytes(data))
    with pytest.raises(tfr.CorruptRecordError):
        list(tfr.read_examples(path, SCHEMA))
    got = np.concatenate([b["i"] for b in tfr.read_examples(path, SCHEMA, 4, on_error="skip")])
    assert got.tolist() == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    with pytest.warns(tfr.DataLossWarning):
        list(tfr.read_examples(path, SCHEMA, on_error="warn"))


class Table:
    """A minimal DataFrame stand-in: anything with .items() is a table."""

    def __init__(self, **cols):
        self.cols = cols

    def items(self):
        return self.cols.items()


@pytest.mark.parametrize("chunk_rows", [1, 3, 1000])
def test_write_examples_matches_encode_example(tmp_path, chunk_rows):
    rng = np.random.default_rng(0)
    n = 11
    cols = {
        "flag": rng.choice([False, True], n),
        "i8": rng.integers(-100, 100, n).astype(np.int8),
        "u64": np.arange(n, dtype=np.uint64),
        "f64": rng.standard_normal(n),
        "vec": rng.standard_normal((n, 3)).astype(np.float32),
        "mat": rng.integers(0, 9, (n, 2, 2)),
        "name": [f"row{i}" for i in range(n)],
        "raw": [bytes([i, 0]) for i in range(n)],
        "np_bytes": np.array([b"x%d" % i for i in range(n)]),
        "unicode": np.array([f"é{i}" for i in range(n)]),
    }
    path = tmp_path / "cols.tfrecord"
    with tfr.RecordWriter(path) as w:
        assert w.write_examples(Table(**cols), chunk_rows=chunk_rows) == n
        assert w.records_written == n
    records = list(tfr.read_records(path))
    assert records == tfr.encode_examples(cols)
    for i, record in enumerate(records):
        row = {k: v[i] for k, v in cols.items()}
        expected = tfr.decode_example(tfr.encode_example(row))
        got = tfr.decode_example(record)
        assert list(got) == list(expected)
        for key in expected:
            if isinstance(expected[key], np.ndarray):
                np.testing.assert_array_equal(got[key], expected[key])
                assert got[key].dtype == expected[key].dtype
            else:
                assert got[key] == expected[key]
    assert tfr.decode_example(records[3])["raw"] == [b"\x03\x00"]


def test_write_examples_rejects_bad_tables(tmp_path):
    with tfr.RecordWriter(tmp_path / "bad.tfrecord", atomic=False) as w:
        with pytest.raises(ValueError, match="rows"):
            w.write_examples({"a": np.arange(3), "b": np.arange(4)})
        with pytest.raises(TypeError, match="column 'c'"):
            w.write_examples({"c": [b"x", 1]})
        with pytest.raises(TypeError):
            w.write_examples({"d": np.array([1 + 2j, 3j])})
        with pytest.raises(OverflowError):
            w.write_examples({"e": np.array([2**64 - 1], dtype=np.uint64)})
        with pytest.raises(ValueError, match="scalar"):
            w.write_examples({"f": np.int64(3)})
        with pytest.raises(TypeError, match="names"):
            w.write_examples({1: np.arange(3)})
        assert w.records_written == 0


def test_encode_examples_empty_table():
    assert tfr.encode_examples({}) == []
    assert tfr.encode_examples({"a": np.zeros(0, dtype=np.int64)}) == []
