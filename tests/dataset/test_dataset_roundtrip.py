"""Round trips through ``write_dataset`` from every kind of input it takes."""

from __future__ import annotations

import decimal
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import tfrecordkit as tfr


def _rows_from_columns(columns: dict, n: int) -> list[dict]:
    out = []
    for i in range(n):
        row = {}
        for k, col in columns.items():
            v = col[i]
            row[k] = v.tolist() if isinstance(v, np.ndarray) else v
        out.append(row)
    return out


# ---------------------------------------------------------------------------------------------
# dict of NumPy columns
# ---------------------------------------------------------------------------------------------


def test_numpy_columns_round_trip(tmp_path, ds):
    n = 23
    rng = np.random.default_rng(0)
    columns = {
        "flag": rng.random(n) < 0.5,
        "i8": rng.integers(-128, 128, n, dtype=np.int8),
        "u64": np.array([0, 1, 2**63 - 1] + [7] * (n - 3), dtype=np.uint64),
        "f64": rng.standard_normal(n) * 1e3,
        "mat": rng.integers(-5, 5, (n, 2, 3)).astype(np.int32),
        "emb": rng.standard_normal((n, 4)).astype(np.float32),
        "raw": np.array([b"a\x00b", b"", b"xyz\x00", b"\xff\xfe"] * 5 + [b"q"] * 3, dtype="S5"),
        "uni": np.array(["héllo", "", "日本語"] * 7 + ["z", "🙂"], dtype="U5"),
        "names": [f"name-{i}" for i in range(n)],
        "tags": [["a", "bb"][: i % 3] for i in range(n)],
    }
    m = ds.write(columns, tmp_path / "np", num_shards=3)
    assert m.records == n
    got = ds.decoded(m.files)
    expected = []
    for i in range(n):
        expected.append(
            {
                "flag": int(columns["flag"][i]),
                "i8": int(columns["i8"][i]),
                "u64": int(columns["u64"][i]),
                "f64": np.float32(columns["f64"][i]).item(),
                "mat": columns["mat"][i].ravel().tolist(),
                "emb": columns["emb"][i].tolist(),
                "raw": columns["raw"][i],  # NumPy drops trailing NULs of 'S' values
                "uni": columns["uni"][i],
                "names": columns["names"][i],
                "tags": columns["tags"][i],
            }
        )
    # Empty str lists are present but empty: compare those rows separately.
    for g, e in zip(got, expected, strict=True):
        assert list(g["tags"]) == [t.encode() for t in e.pop("tags")]
        g.pop("tags")
    ds.assert_rows_equal(got, expected)
    assert got[0]["raw"] == [b"a\x00b"]
    assert got[3]["raw"] == [b"\xff\xfe"]
    assert got[2]["uni"] == ["日本語".encode()]

    schema = m.schema
    assert schema["mat"] == tfr.FixedLen([2, 3], "int64")
    assert schema["emb"] == tfr.FixedLen([4], "float32")
    assert schema["flag"] == tfr.FixedLen([], "int64")
    assert schema["f64"] == tfr.FixedLen([], "float32")
    assert schema["raw"].dtype == "bytes"
    assert schema["tags"] == tfr.VarLen("bytes")
    batches = list(tfr.read_examples(m.files, schema, batch_size=1000))
    assert len(batches) == 1
    (b,) = batches
    np.testing.assert_array_equal(b["mat"], columns["mat"].astype(np.int64))
    np.testing.assert_array_equal(b["emb"], columns["emb"])
    np.testing.assert_array_equal(b["u64"], columns["u64"].astype(np.int64))
    np.testing.assert_array_equal(b["f64"], columns["f64"].astype(np.float32))
    assert b["tags"].to_list() == [[t.encode() for t in row] for row in columns["tags"]]


def test_numpy_uint64_beyond_int64_is_refused_and_writes_nothing(tmp_path, ds):
    with pytest.raises(OverflowError):
        ds.write({"u": np.array([2**63], dtype=np.uint64)}, tmp_path / "big")
    assert ds.listing(tmp_path) == []


def test_numpy_order_preserved_over_many_shards(tmp_path, ds):
    n = 1000
    m = ds.write({"i": np.arange(n), "s": np.arange(n).astype("S")}, tmp_path / "o", num_shards=7)
    got = ds.decoded(m.files)
    assert [int(r["i"][0]) for r in got] == list(range(n))
    assert [r["s"][0] for r in got] == [str(i).encode() for i in range(n)]


# ---------------------------------------------------------------------------------------------
# pandas
# ---------------------------------------------------------------------------------------------


def test_pandas_round_trip_with_nulls_and_lists(tmp_path, ds):
    df = pd.DataFrame(
        {
            "i": np.arange(6, dtype=np.int64) * 3,
            "nullable": pd.array([1, None, 3, None, -5, 2**40], dtype="Int64"),
            "f": [1.5, np.nan, -2.25, 0.0, np.nan, 1e30],
            "obj": ["a", None, "ccc", "", None, "ключ"],
            "b": [b"x", b"y", None, b"\x00", b"zz", b""],
            "lists": [[1, 2], [], [3], None, [4, 5, 6], [7]],
            "flags": [True, False, True, True, False, False],
            "strs": pd.array(["p", pd.NA, "q", "r", "s", pd.NA], dtype="string"),
        }
    )
    m = ds.write(df, tmp_path / "pd", num_shards=2)
    got = ds.decoded(m.files)

    def null(v):
        return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))

    expected = []
    for _, row in df.iterrows():
        e = {}
        for k, v in row.items():
            e[k] = None if (not isinstance(v, list) and null(v)) else v
        e["flags"] = int(e["flags"])
        expected.append(e)
    ds.assert_rows_equal(got, expected)
    # Absent, not zero / empty:
    assert "nullable" not in got[1] and "f" not in got[1] and "obj" not in got[1]
    assert "lists" not in got[3] and "b" not in got[2] and "strs" not in got[5]
    # An empty list is a present, empty feature; an empty string a present b"".
    assert got[1]["lists"].tolist() == []
    assert got[3]["obj"] == [b""]
    assert got[5]["nullable"].tolist() == [2**40]

    schema = m.schema
    assert schema["i"] == tfr.FixedLen([], "int64")
    assert schema["flags"] == tfr.FixedLen([], "int64")
    for k in ("nullable", "f", "obj", "b", "lists", "strs"):
        assert isinstance(schema[k], tfr.VarLen), k
    (batch,) = tfr.read_examples(m.files, schema)
    assert batch["lists"].to_list() == [[1, 2], [], [3], [], [4, 5, 6], [7]]
    assert batch["nullable"].to_list() == [[1], [], [3], [], [-5], [2**40]]


def test_pandas_dense_columns_give_fixed_schema(tmp_path, ds):
    df = pd.DataFrame({"a": [1, 2, 3], "x": [0.5, 1.5, 2.5], "s": ["u", "v", "w"]})
    m = ds.write(df, tmp_path / "dense")
    assert dict(m.schema) == {
        "a": tfr.FixedLen([], "int64"),
        "x": tfr.FixedLen([], "float32"),
        "s": tfr.FixedLen([], "bytes"),
    }
    (batch,) = tfr.read_examples(m.files, m.schema)
    assert batch["a"].tolist() == [1, 2, 3]
    assert batch["x"].tolist() == [0.5, 1.5, 2.5]
    assert batch["s"].tolist() == [b"u", b"v", b"w"]


@pytest.mark.parametrize(
    "dtype",
    [
        "string[python]",
        "string[pyarrow]",
        pd.ArrowDtype(pa.string()),
        pd.ArrowDtype(pa.large_binary()),
        pd.ArrowDtype(pa.list_(pa.string())),
        pd.ArrowDtype(pa.list_(pa.int64())),
        pd.ArrowDtype(pa.int64()),
        pd.ArrowDtype(pa.bool_()),
    ],
    ids=str,
)
def test_pandas_string_and_arrow_columns_encode_as_their_values(dtype):
    # Columns that pandas keeps as Arrow arrays are encoded from them; each row encodes as
    # the same values do as Python objects.
    values = {
        "string": ["a", None, "ccc", "", "ключ"],
        "binary": [b"x", None, b"", b"\x00z", b"w"],
        "list<item: string>": [["a", "b"], [], None, [""], ["c"]],
        "list<item: int64>": [[1, 2], [], None, [3], [4, 5, 6]],
        "int64": [1, None, 3, -4, 2**40],
        "bool": [True, None, False, True, False],
    }
    name = str(getattr(dtype, "pyarrow_dtype", "string")).replace("large_", "")
    column = pd.Series(values[name], dtype=dtype)
    frame = pd.DataFrame({"c": column, "n": np.arange(5)})
    python = pd.DataFrame({"c": pd.Series(values[name], dtype=object), "n": np.arange(5)})
    assert tfr.encode_examples(frame) == tfr.encode_examples(python)


@pytest.mark.parametrize(
    "column",
    [
        ["a", None, "ccc", "", "ключ"],
        [b"x", None, b"", b"\x00"],
        ["a", float("nan"), "b", pd.NA],
        ["a", b"b", bytearray(b"c"), np.str_("d"), np.bytes_(b"e")],
        [None, "a"],
    ],
    ids=["str", "bytes", "nan-and-na", "mixed", "leading-null"],
)
def test_a_list_of_strings_encodes_each_row_as_its_value(column):
    # A column given as a Python list of str or bytes (read through Arrow when it can be)
    # encodes each row as encode_example encodes that value alone; nulls leave it out.
    def null(v):
        return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))

    rows = [{} if null(v) else {"c": v} for v in column]
    assert tfr.encode_examples({"c": column}) == [tfr.encode_example(r) for r in rows]


@pytest.mark.parametrize(
    "column",
    [
        [[1, 2], None, [3], (4, 5, 6)],
        [[1.5, float("nan")], [2.0], [-0.0]],
        [[True, False], [True]],
        [[1, 2.5], [3.5]],
        [np.array([1, 2]), [3], np.array([4, 5], np.int32)],
        [["a", "b"], None, ["", "ключ"]],
        [[b"x"], [b"", b"\x00"]],
        [["a", b"b"], ["c"]],
    ],
    ids=["ints", "floats-with-nan", "bools", "mixed-numbers", "arrays", "str", "bytes", "mixed"],
)
def test_a_list_of_lists_encodes_each_row_as_its_value(column):
    # A column of lists of one type (read through Arrow when it can be) encodes each row
    # as encode_example encodes that list alone; a NaN inside a list is a value.
    rows = [{} if v is None else {"c": v} for v in column]
    assert tfr.encode_examples({"c": column}) == [tfr.encode_example(r) for r in rows]


@pytest.mark.parametrize(
    "column",
    [[2**63, 1], [[2**63], [1]], [[1], None, [-(2**63) - 1]], [np.uint64(2**63), 1], [2**64]],
)
def test_a_column_of_ints_beyond_int64_is_refused_not_rounded(column):
    # NumPy holds such a list as floats; the column is refused, as encode_example
    # refuses the row, rather than written as float32 values.
    with pytest.raises(OverflowError, match="int64 range"):
        tfr.encode_examples({"c": column})


@pytest.mark.parametrize(
    "arr",
    [
        np.array(["a\x00", "b\x00c", "", "ключ€😀"]),
        np.array(["x", "yz"]).astype(">U2"),
        np.array(["ab", "c", "def"])[::-1],
        np.array(["a", "b", "c"])[::2],
        np.array(["a"])[:0],
        np.array([b"a\x00", b"", b"b\x00c"]),
        np.array([b"a"])[:0],
    ],
    ids=["text", "big-endian", "reversed", "strided", "empty", "bytes", "empty-bytes"],
)
def test_numpy_text_and_bytes_arrays_encode_as_their_values(arr):
    # Fixed-width text and bytes are encoded natively from their rows; each row encodes as
    # its value does, NumPy's trailing NULs dropped.
    rows = [{"c": v} for v in arr.tolist()]
    assert tfr.encode_examples({"c": arr}) == [tfr.encode_example(r) for r in rows]


def test_numpy_text_that_utf8_cannot_encode_is_refused():
    with pytest.raises(ValueError, match='column "c": row 1 holds code point 0xd800'):
        tfr.encode_examples({"c": np.array(["ok", "\ud800"])})


@pytest.mark.parametrize(
    "column",
    [
        [1, 2, 3],
        [1, None, 3],
        [1.5, float("nan"), 2.5],
        [True, False, None],
        [np.int64(3), 4, np.int32(5)],
        [float("inf"), -0.0],
    ],
    ids=["ints", "ints-with-null", "floats-with-nan", "bools", "numpy-ints", "special-floats"],
)
def test_a_list_of_numbers_encodes_each_row_as_its_value(column):
    # A column of Python numbers (read through Arrow when it can be) encodes each row as
    # encode_example encodes that number alone, NaN included, as a NumPy column and rows
    # of dicts do; None leaves it out.
    rows = [{} if v is None else {"c": v} for v in column]
    assert tfr.encode_examples({"c": column}) == [tfr.encode_example(r) for r in rows]


def test_a_nan_is_a_value_among_numbers_and_missing_in_text_or_pandas():
    decoded = [tfr.decode_example(r) for r in tfr.encode_examples({"c": [1.0, math.nan]})]
    assert np.isnan(decoded[1]["c"][0])
    assert tfr.encode_examples({"c": [1.0, math.nan]}) == tfr.encode_examples(
        {"c": np.array([1.0, math.nan])}
    )
    assert tfr.encode_examples({"c": [math.nan, "a"]})[0] == tfr.encode_example({})
    # pandas means NaN as a missing value, in a float column and in one of objects.
    for column in (pd.Series([1.0, math.nan]), pd.Series([1.0, math.nan], dtype=object)):
        assert tfr.encode_examples(pd.DataFrame({"c": column}))[1] == tfr.encode_example({})


def test_a_list_of_strings_that_are_not_utf8_is_refused():
    with pytest.raises(UnicodeEncodeError):
        tfr.encode_examples({"c": ["ok", "\ud800"]})


# ---------------------------------------------------------------------------------------------
# pyarrow
# ---------------------------------------------------------------------------------------------


def _arrow_table() -> pa.Table:
    return pa.table(
        {
            "i": pa.array([1, None, 3, 4, None, 6], pa.int64()),
            "f": pa.array([0.5, 1.5, None, float("nan"), 2.0, -0.0], pa.float64()),
            "s": pa.array(["a", "bb", None, "", "日本", "z"], pa.string()),
            "bin": pa.array([b"\x00", None, b"x", b"yy", b"", b"\xff"], pa.binary()),
            "l": pa.array([[1, 2], [], None, [3], [4, 5, 6], [7]], pa.list_(pa.int64())),
            "ls": pa.array([["a"], ["b", "c"], [], None, ["d"], []], pa.list_(pa.string())),
            "fs": pa.array(
                [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0], [11.0, 12.0]],
                pa.list_(pa.float32(), 2),
            ),
            "i16": pa.array([-1, 2, -3, 4, -5, 6], pa.int16()),
        }
    )


def test_arrow_round_trip_with_nulls(tmp_path, ds):
    table = _arrow_table()
    m = ds.write(table, tmp_path / "pa", num_shards=4)
    got = ds.decoded(m.files)
    expected = [
        {k: (None if v is None else (int(v) if isinstance(v, bool) else v)) for k, v in row.items()}
        for row in table.to_pylist()
    ]
    ds.assert_rows_equal(got, expected)
    assert "i" not in got[1] and "l" not in got[2] and "ls" not in got[3]
    # NaN in an Arrow float column is a value, not a null.
    assert np.isnan(got[3]["f"][0])
    assert m.schema["fs"] == tfr.FixedLen([2], "float32")
    assert m.schema["i16"] == tfr.FixedLen([], "int64")
    assert m.schema["l"] == tfr.VarLen("int64")
    assert m.schema["i"] == tfr.VarLen("int64")
    (batch,) = tfr.read_examples(m.files, m.schema)
    np.testing.assert_array_equal(batch["fs"], np.arange(1, 13, dtype=np.float32).reshape(6, 2))
    assert batch["ls"].to_list() == [[b"a"], [b"b", b"c"], [], [], [b"d"], []]


def test_arrow_bool_column(tmp_path, ds):
    # Booleans become int64 0/1, as they do from NumPy and pandas.
    table = pa.table({"b": pa.array([True, False, True])})
    m = ds.write(table, tmp_path / "pb")
    assert [r["b"].tolist() for r in ds.decoded(m.files)] == [[1], [0], [1]]
    assert m.schema["b"] == tfr.FixedLen([], "int64")


def test_arrow_bool_column_with_nulls(tmp_path, ds):
    table = pa.table({"b": pa.array([True, None, False])})
    m = ds.write(table, tmp_path / "pbn")
    got = ds.decoded(m.files)
    assert [r.get("b", np.array([])).tolist() for r in got] == [[1], [], [0]]
    assert "b" not in got[1]


def test_arrow_chunked_and_sliced_tables(tmp_path, ds):
    table = _arrow_table()
    chunked = pa.concat_tables([table, table, table])
    assert chunked.column("l").num_chunks == 3
    sliced = chunked.slice(4, 9)
    m = ds.write(sliced, tmp_path / "sl", num_shards=2)
    got = ds.decoded(m.files)
    expected = [
        {k: (None if v is None else (int(v) if isinstance(v, bool) else v)) for k, v in row.items()}
        for row in sliced.to_pylist()
    ]
    ds.assert_rows_equal(got, expected)


def test_arrow_record_batch(tmp_path, ds):
    batch = pa.record_batch({"x": pa.array([1, 2, 3]), "y": pa.array(["a", "b", "c"])})
    m = ds.write(batch, tmp_path / "rb")
    ds.assert_rows_equal(ds.decoded(m.files), batch.to_pylist())


# ---------------------------------------------------------------------------------------------
# iterables of dicts, iterables of bytes
# ---------------------------------------------------------------------------------------------


def test_iterable_of_dicts_round_trip(tmp_path, ds):
    rows = [
        {"id": i, "score": i / 4, "name": f"n{i}", "vec": [i, i + 1], "opt": None if i % 3 else i}
        for i in range(20)
    ]
    m = ds.write(ds.gen(rows), tmp_path / "rows")
    ds.assert_rows_equal(ds.decoded(m.files), rows)
    assert m.records == 20
    # Schema described from the rows: "opt" is missing in some rows.
    assert dict(m.schema) == {
        "id": tfr.FixedLen([], "int64"),
        "score": tfr.FixedLen([], "float32"),
        "name": tfr.FixedLen([], "bytes"),
        "vec": tfr.FixedLen([2], "int64"),
        "opt": tfr.VarLen("int64"),
    }
    (batch,) = tfr.read_examples(m.files, m.schema)
    assert batch["vec"].tolist() == [[i, i + 1] for i in range(20)]


def test_iterable_of_dicts_explicit_schema_recorded(tmp_path, ds):
    schema = {"id": tfr.FixedLen([], "int64"), "tags": tfr.VarLen("bytes")}
    rows = [{"id": i, "tags": ["t"] * (i % 3)} for i in range(9)]
    m = ds.write(rows, tmp_path / "sch", schema=schema)
    assert dict(m.schema) == schema
    assert dict(tfr.Manifest.load(tmp_path / "sch").schema) == schema
    (batch,) = tfr.read_examples(m.files, m.schema)
    assert batch["id"].tolist() == list(range(9))
    assert [len(r) for r in batch["tags"]] == [i % 3 for i in range(9)]


def test_iterable_of_bytes_round_trip(tmp_path, ds):
    recs = [b"", b"\x00", *ds.payloads(50, 33), bytes(range(256))]
    items = [bytearray(recs[0]), memoryview(recs[1]), *recs[2:]]
    m = ds.write(ds.gen(items), tmp_path / "raw")
    assert ds.records(m.files) == recs
    assert m.schema is None
    assert ds.manifest_json(tmp_path / "raw")["schema"] is None


def test_non_row_items_are_refused(tmp_path, ds):
    with pytest.raises(TypeError):
        ds.write([b"ok", 12], tmp_path / "bad")
    with pytest.raises(TypeError):
        ds.write(b"a string is not a dataset", tmp_path / "bad")
    assert ds.listing(tmp_path) == []


def test_empty_inputs_write_one_empty_shard(tmp_path, ds):
    m = ds.write({"x": np.zeros(0, np.int64)}, tmp_path / "et")
    assert m.records == 0 and len(m.files) == 1
    assert ds.records(m.files) == []
    assert tfr.count(m.files) == 0
    m = ds.write(ds.gen([]), tmp_path / "eg")
    assert m.records == 0 and len(m.files) == 1
    assert tfr.count(m.files) == 0


def test_default_progress_writes_nothing_to_stdout(tmp_path, capsys):
    m = tfr.write_dataset({"i": np.arange(10)}, tmp_path / "pr")
    assert m.records == 10 and tfr.count(m.files) == 10
    assert capsys.readouterr().out == ""
    m = tfr.write_dataset(iter([b"a", b"b"]), tmp_path / "pr2", num_shards=2)
    assert m.records == 2
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (pd.Series(pd.to_datetime(["2020-01-01", "2021-06-01"])), "holds Timestamp values"),
        ([decimal.Decimal("1.5"), decimal.Decimal("2")], "holds Decimal values"),
        ([1, decimal.Decimal("2")], "mixes numbers with Decimal values"),
        ([{"a": 1}, {"a": 2}], "holds dict values"),
    ],
)
def test_a_column_of_values_no_feature_holds_says_what_they_are(column, message):
    data = pd.DataFrame({"c": column}) if isinstance(column, pd.Series) else {"c": column}
    with pytest.raises(TypeError, match=f"column 'c' {message}"):
        tfr.encode_examples(data)


@pytest.mark.parametrize(
    ("column", "row"),
    [([[[1, 2], [3]], [[4]]], 0), ([[1, 2], [[3]]], 1), ([np.zeros((2, 2))] * 2, 0)],
)
def test_a_column_of_lists_of_lists_names_the_row(column, row):
    with pytest.raises(TypeError, match=f"column 'c': row {row} holds lists in its list"):
        tfr.encode_examples({"c": column})
