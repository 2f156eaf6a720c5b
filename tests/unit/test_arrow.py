"""Examples as Arrow record batches: read_arrow, read_table and Dataset.to_arrow."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import tfrecordkit as tfr


@pytest.fixture
def data(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    rows = [
        {"id": i, "vec": np.arange(6, dtype=np.float32) + i, "name": f"n{i}", "tok": [i] * (i % 3)}
        for i in range(10)
    ]
    with tfr.RecordWriter(path) as w:
        w.write_many(tfr.encode_example(r) for r in rows)
    return path, rows


SCHEMA = {
    "id": tfr.FixedLen([], "int64"),
    "vec": tfr.FixedLen([2, 3], "float32"),
    "name": tfr.FixedLen([], "bytes"),
    "tok": tfr.VarLen("int64"),
}


def test_read_arrow_streams_batches_of_the_parsed_columns(data):
    path, rows = data
    reader = tfr.read_arrow(path, SCHEMA, batch_size=4)
    assert reader.schema == pa.schema(
        [
            ("id", pa.int64()),
            ("vec", pa.list_(pa.list_(pa.float32(), 3), 2)),
            ("name", pa.large_binary()),
            ("tok", pa.large_list(pa.int64())),
        ]
    )
    batches = list(reader)
    assert [b.num_rows for b in batches] == [4, 4, 2]
    table = pa.Table.from_batches(batches)
    assert table.column("id").to_pylist() == list(range(10))
    assert table.column("vec").to_pylist()[1] == [[1, 2, 3], [4, 5, 6]]
    assert table.column("name").to_pylist() == [r["name"].encode() for r in rows]
    assert table.column("tok").to_pylist() == [r["tok"] for r in rows]


def test_read_table_infers_the_schema_and_picks_columns(data):
    path, _ = data
    table = tfr.read_table(path, columns=["name", "id"], strings=True)
    assert table.column_names == ["name", "id"]
    assert table.schema.field("name").type == pa.large_string()
    assert table.column("name").to_pylist()[:2] == ["n0", "n1"]
    with pytest.raises(KeyError, match="nope"):
        tfr.read_table(path, columns=["nope"])
    # A str is a name, not a list of its letters; a name once, and text only of bytes.
    with pytest.raises(TypeError, match="not the str 'id'"):
        tfr.read_table(path, columns="id")
    with pytest.raises(ValueError, match="columns names \\['id'\\] more than once"):
        tfr.read_table(path, columns=["id", "id"])
    with pytest.raises(ValueError, match="strings= names \\['id'\\], which are not bytes"):
        tfr.read_table(path, strings=["id"])


def test_nullable_features_are_null_where_an_example_lacks_them(tmp_path):
    path = str(tmp_path / "n.tfrecord")
    rows = [{"id": 0, "age": 30, "pos": [1.0, 2.0]}, {"id": 1}, {"id": 2, "age": 41, "name": "c"}]
    with tfr.RecordWriter(path) as w:
        w.write_many(tfr.encode_example(r) for r in rows)
    schema = {
        "id": tfr.FixedLen([], "int64"),
        "age": tfr.FixedLen([], "int64"),
        "pos": tfr.FixedLen([2], "float32"),
        "name": tfr.FixedLen([], "bytes"),
    }
    table = tfr.read_table(path, schema, nullable=["age", "pos", "name"], strings=True)
    assert table.schema.field("age").type == pa.int64()
    assert table.to_pylist() == [
        {"id": 0, "age": 30, "pos": [1.0, 2.0], "name": None},
        {"id": 1, "age": None, "pos": None, "name": None},
        {"id": 2, "age": 41, "pos": None, "name": "c"},
    ]
    # Inferred: a feature of one value wherever present is a nullable scalar column.
    inferred = tfr.read_table(path, nullable=True)
    assert inferred.schema.field("age").type == pa.int64()
    assert inferred.column("age").to_pylist() == [30, None, 41]
    assert inferred.column("pos").type == pa.large_list(pa.float32())  # not a scalar
    assert inferred.column("pos").to_pylist() == [[1.0, 2.0], None, None]
    picked = tfr.read_table(path, nullable=True, columns=["id", "name"])
    assert picked.column("name").to_pylist() == [None, None, b"c"]
    assert tfr.infer_schema(path, nullable=True)["age"] == tfr.FixedLen([], "int64")
    assert tfr.infer_schema(path)["age"] == tfr.VarLen("int64")
    assert tfr.read_table(path).schema.field("age").type == pa.large_list(pa.int64())
    # Without nullable, a missing FixedLen feature is an error, as in TensorFlow.
    with pytest.raises(tfr.SchemaError, match="required"):
        tfr.read_table(path, schema)


def test_a_nullable_feature_of_another_count_names_its_file_record_and_feature(tmp_path):
    path = str(tmp_path / "n.tfrecord")
    with tfr.RecordWriter(path) as w:
        w.write_many(tfr.encode_example(r) for r in [{"a": 1}, {}, {"a": [1, 2]}])
    with pytest.raises(
        tfr.SchemaError, match=r'"a" \(int64\) has 2 values; expected 1, or none'
    ) as info:
        tfr.read_table(path, {"a": tfr.FixedLen([], "int64")}, nullable=True)
    assert (info.value.path, info.value.record_index, info.value.key) == (path, 2, "a")
    spec = {"a": tfr.FixedLen([], "int64")}
    with pytest.raises(TypeError, match="list of feature names"):
        tfr.read_table(path, spec, nullable="a")
    with pytest.raises(KeyError, match="'b'"):
        tfr.read_table(path, spec, nullable=["b"])
    with pytest.raises(ValueError, match="FixedLen or VarLen"):
        tfr.read_table(path, {"a": tfr.FixedLenSequence([], "int64")}, nullable=["a"])
    with pytest.raises(ValueError, match="one or the other"):
        tfr.read_table(path, {"a": tfr.FixedLen([], "int64", default=0)}, nullable=["a"])


def test_reading_no_features_gives_one_row_per_record(data, tmp_path):
    path, rows = data
    other = str(tmp_path / "b.tfrecord")
    with tfr.RecordWriter(other) as w:
        w.write(tfr.encode_example({"id": 1}))
    batches = list(tfr.read_arrow([path, other], {}, batch_size=4))
    assert [b.num_rows for b in batches] == [4, 4, 3] and batches[0].num_columns == 0
    assert tfr.read_table(path, SCHEMA, columns=[]).num_rows == len(rows)


def test_a_pipeline_to_arrow_matches_read_arrow(data):
    path, _ = data
    table = tfr.read_table(path, SCHEMA, batch_size=3)
    piped = tfr.Dataset.from_files(path).parse(SCHEMA).batch(3).to_arrow().read_all()
    assert piped.equals(table)
    with pytest.raises(TypeError, match=r"call \.batch"):
        tfr.Dataset.from_files(path).parse(SCHEMA).to_arrow()


def test_errors_in_a_batch_name_their_file_and_record(data, tmp_path):
    path, _ = data
    other = str(tmp_path / "b.tfrecord")
    with tfr.RecordWriter(other) as w:
        w.write(tfr.encode_example({"id": 1.5, "vec": np.zeros(6), "name": "x"}))
    with pytest.raises(tfr.SchemaError) as info:
        tfr.read_table([path, other], SCHEMA)
    assert (info.value.path, info.value.record_index, info.value.key) == (other, 0, "id")


def test_polars_and_pandas_through_arrow(data):
    import polars

    path, _ = data
    frame = polars.from_arrow(tfr.read_table(path, SCHEMA, strings=True))
    assert frame["id"].sum() == sum(range(10))
    assert frame.filter(polars.col("name") == "n3")["tok"].to_list() == [[]]
    df = tfr.read_table(path, SCHEMA).to_pandas()
    assert df["id"].tolist() == list(range(10))


def _stream(n: int, per_batch: int) -> pa.RecordBatchReader:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("tok", pa.list_(pa.int64()))])

    def batches():
        for start in range(0, n, per_batch):
            ids = list(range(start, min(start + per_batch, n)))
            yield pa.RecordBatch.from_pydict(
                {"id": ids, "name": [f"n{i}" for i in ids], "tok": [[i] * (i % 3) for i in ids]},
                schema=schema,
            )

    return pa.RecordBatchReader.from_batches(schema, batches())


def test_write_dataset_streams_a_record_batch_reader(tmp_path):
    manifest = tfr.write_dataset(
        _stream(1000, 128), str(tmp_path / "s"), num_shards=3, progress=False
    )
    assert manifest.records == 1000 and len(manifest.shards) == 3
    assert dict(manifest.schema) == {
        "id": tfr.FixedLen([], "int64"),
        "name": tfr.FixedLen([], "bytes"),
        "tok": tfr.VarLen("int64"),
    }
    table = tfr.read_table(manifest.files, manifest.schema, strings=True)
    rows = sorted(zip(*(table.column(c).to_pylist() for c in ("id", "name", "tok")), strict=True))
    assert rows == [(i, f"n{i}", [i] * (i % 3)) for i in range(1000)]


def test_a_record_batch_reader_fills_shards_as_rows_do(tmp_path):
    # Filling shards up to max_shard_bytes cuts the stream where writing it row by row
    # would, whatever the record batches.
    def reader(per_batch):
        schema = pa.schema([("id", pa.int64()), ("v", pa.list_(pa.int64()))])
        batches = (
            pa.RecordBatch.from_pydict(
                {
                    "id": list(range(a, min(a + per_batch, 900))),
                    "v": [[i] * (i % 7) for i in range(a, min(a + per_batch, 900))],
                },
                schema=schema,
            )
            for a in range(0, 900, per_batch)
        )
        return pa.RecordBatchReader.from_batches(schema, batches)

    rows = ({"id": i, "v": np.full(i % 7, i, dtype=np.int64)} for i in range(900))
    by_rows = tfr.write_dataset(rows, str(tmp_path / "rows"), max_shard_bytes=4000, progress=False)
    assert len(by_rows.shards) > 3
    for per_batch in (1, 50, 1000):
        out = tfr.write_dataset(
            reader(per_batch),
            str(tmp_path / f"b{per_batch}"),
            max_shard_bytes=4000,
            progress=False,
        )
        assert [s.records for s in out.shards] == [s.records for s in by_rows.shards]
        for ours, theirs in zip(out.files, by_rows.files, strict=True):
            assert list(tfr.read_records(ours)) == list(tfr.read_records(theirs))


def test_a_record_batch_reader_is_dealt_evenly_across_num_shards(tmp_path):
    out = tfr.write_dataset(_stream(1001, 7), str(tmp_path / "s"), num_shards=4, progress=False)
    counts = [s.records for s in out.shards]
    assert sum(counts) == 1001 and max(counts) - min(counts) <= 1
    with pytest.raises(ValueError, match="hosts"):
        tfr.write_dataset(_stream(10, 5), str(tmp_path / "h"), hosts=2, progress=False)


@pytest.mark.parametrize("large", [False, True])
def test_arrow_strings_and_binaries_encode_as_their_python_values(large):
    # Arrow's string and binary columns are read from their buffers, offsets included:
    # slices, chunks, nulls and lists of them give the bytes that the same values give as
    # Python lists, and that each row gives alone.
    string, binary = (pa.large_string(), pa.large_binary()) if large else (pa.string(), pa.binary())
    columns = {
        "s": pa.array(["a", None, "ccc", "", "é€"], string),
        "b": pa.array([b"x", b"yy", None, b"", b"\x00z"], binary),
        "ls": pa.array([["a", "b"], [], None, ["c"], ["", "e", "f"]], pa.list_(string)),
        "i": pa.array([1, 2, 3, 4, 5]),
    }
    table = pa.table(columns)
    for arrow in (table, table.slice(1, 3), table.slice(5), pa.concat_tables([table, table[2:]])):
        python = {name: arrow.column(name).to_pylist() for name in arrow.column_names}
        encoded = tfr.encode_examples(arrow)
        assert encoded == tfr.encode_examples(python)
        assert encoded == [
            b"".join(tfr.encode_examples(arrow.slice(i, 1))) for i in range(len(arrow))
        ]


def test_packed_bytes_with_offsets_outside_their_data_are_refused():
    from tfrecordkit import _core

    data = np.frombuffer(b"abcd", np.uint8)
    for offsets in ([0, 9], [2, 1], [-1, 2]):
        packed = ((data, np.array(offsets, np.int64)), 1, None, None)
        with pytest.raises(ValueError, match='column "s": its value offsets'):
            _core.Table(["s"], [packed], 1)


def test_write_dataset_takes_arrow_datasets_and_polars_frames(tmp_path):
    import polars
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    table = pa.table({"x": np.arange(500), "y": np.linspace(0, 1, 500, dtype=np.float32)})
    pq.write_table(table.slice(0, 200), tmp_path / "a.parquet")
    pq.write_table(table.slice(200), tmp_path / "b.parquet")
    source = pads.dataset([str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")])
    manifest = tfr.write_dataset(source, str(tmp_path / "pq"), progress=False)
    back = tfr.read_table(manifest.files, manifest.schema)
    assert sorted(back.column("x").to_pylist()) == list(range(500))

    frame = polars.from_arrow(table)
    manifest = tfr.write_dataset(frame, str(tmp_path / "pl"), num_shards=2, progress=False)
    back = polars.from_arrow(tfr.read_table(manifest.files, manifest.schema))
    assert back.sort("x").equals(frame)


def test_read_arrow_output_writes_back_with_its_schema(data, tmp_path):
    path, _ = data
    manifest = tfr.write_dataset(
        tfr.read_arrow(path, SCHEMA, batch_size=3), str(tmp_path / "again"), progress=False
    )
    assert dict(manifest.schema) == SCHEMA
    assert tfr.read_table(manifest.files, SCHEMA).equals(tfr.read_table(path, SCHEMA))


R = tfr.RaggedFeature
COMPOSITE = {
    "words": R("bytes", "w", [R.RowLengths("wl")]),
    "pairs_of": R("int64", "v", [R.RowSplits("vs"), R.UniformRowLength(2)]),
    "sp": tfr.SparseFeature("i", "x", "float32", 10),
    "grid": tfr.SparseFeature(["i", "j"], "y", "bytes", [10, 3]),
    "points": tfr.FixedLenSequence([2], "float32", allow_missing=True),
}


def _composite_rows() -> list[dict]:
    return [
        {
            "w": [b"a", b"b", b"c"],
            "wl": [2, 0, 1],
            "v": [1, 2, 3, 4, 5, 6],
            "vs": [0, 1, 1, 3],
            "i": [7, 2],
            "j": [0, 1],
            "x": np.array([0.5, 1.5], np.float32),
            "y": [b"p", b"q"],
            "points": np.array([1, 2, 3, 4], np.float32),
        },
        {"other": 1},  # every feature missing
        {  # every feature present and empty
            "w": np.zeros(0, "S1"),
            "wl": np.zeros(0, np.int64),
            "v": np.zeros(0, np.int64),
            "vs": [0],
            "i": np.zeros(0, np.int64),
            "j": np.zeros(0, np.int64),
            "x": np.zeros(0, np.float32),
            "y": np.zeros(0, "S1"),
            "points": np.zeros(0, np.float32),
        },
        {"w": [b"z"], "wl": [1], "points": np.array([5, 6], np.float32)},
    ]


@pytest.fixture
def composite(tmp_path):
    rows = _composite_rows()
    paths = [str(tmp_path / "c0.tfrecord"), str(tmp_path / "c1.tfrecord")]
    for path, part in zip(paths, (rows[:3], rows[3:]), strict=True):
        with tfr.RecordWriter(path) as w:
            w.write_many(tfr.encode_example(r) for r in part)
    return paths


def test_composite_features_become_nested_arrow_columns(composite):
    reader = tfr.read_arrow(composite, COMPOSITE, batch_size=2)
    assert reader.schema == pa.schema(
        [
            ("words", pa.large_list(pa.large_list(pa.large_binary()))),
            ("pairs_of", pa.large_list(pa.large_list(pa.list_(pa.int64(), 2)))),
            (
                "sp",
                pa.struct(
                    [
                        ("indices", pa.large_list(pa.int64())),
                        ("values", pa.large_list(pa.float32())),
                    ]
                ),
            ),
            (
                "grid",
                pa.struct(
                    [
                        ("indices_0", pa.large_list(pa.int64())),
                        ("indices_1", pa.large_list(pa.int64())),
                        ("values", pa.large_list(pa.large_binary())),
                    ]
                ),
            ),
            ("points", pa.large_list(pa.list_(pa.float32(), 2))),
        ]
    )
    table = reader.read_all()
    assert table.column("words").to_pylist() == [[[b"a", b"b"], [], [b"c"]], [], [], [[b"z"]]]
    assert table.column("pairs_of").to_pylist() == [[[[1, 2]], [], [[3, 4], [5, 6]]], [], [], []]
    empty_sp = {"indices": [], "values": []}
    # Entries come sorted by index, as tf.io.SparseFeature sorts them.
    assert table.column("sp").to_pylist() == [
        {"indices": [2, 7], "values": [1.5, 0.5]},
        empty_sp,
        empty_sp,
        empty_sp,
    ]
    empty_grid = {"indices_0": [], "indices_1": [], "values": []}
    assert table.column("grid").to_pylist() == [
        {"indices_0": [2, 7], "indices_1": [1, 0], "values": [b"q", b"p"]},
        empty_grid,
        empty_grid,
        empty_grid,
    ]
    # Each row keeps its own elements: no padding.
    assert table.column("points").to_pylist() == [[[1, 2], [3, 4]], [], [], [[5, 6]]]
    # The Python results tell the same rows.
    parsed = tfr.parse_examples([tfr.encode_example(r) for r in _composite_rows()], COMPOSITE)
    assert table.column("words").to_pylist() == parsed["words"].to_list()
    assert table.column("pairs_of").to_pylist() == parsed["pairs_of"].to_list()
    dense = [np.zeros(10, np.float32)] * 4
    for row, entries in enumerate(table.column("sp").to_pylist()):
        dense[row] = np.zeros(10, np.float32)
        dense[row][entries["indices"]] = entries["values"]
    np.testing.assert_array_equal(np.stack(dense), parsed["sp"].to_dense())


def test_composite_columns_in_polars(composite):
    import polars

    frame = polars.from_arrow(tfr.read_table(composite, COMPOSITE, strings=True))
    words = frame.select(polars.col("words").list.eval(polars.element().list.len()))
    assert words["words"].to_list() == [[2, 0, 1], [], [], [1]]
    entries = frame.select(polars.col("grid").struct.unnest()).explode(
        ["indices_0", "indices_1", "values"]
    )
    assert entries.drop_nulls()["values"].to_list() == ["q", "p"]


def test_a_fixed_len_sequence_that_may_not_be_missing_is_checked(tmp_path):
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    with tfr.RecordWriter(paths[0]) as w:
        w.write_many(tfr.encode_example({"p": [1, 2, 3, 4][: 2 * k]}) for k in (1, 0, 2))
    with tfr.RecordWriter(paths[1]) as w:
        w.write(tfr.encode_example({"p": [9, 9]}))
        w.write(tfr.encode_example({"q": 1}))
    spec = {"p": tfr.FixedLenSequence([2], "int64")}
    with pytest.raises(tfr.SchemaError, match="required") as info:
        tfr.read_table(paths, spec, batch_size=2)
    assert (info.value.path, info.value.record_index, info.value.key) == (paths[1], 1, "p")
    table = tfr.read_table(paths[0], spec)
    assert table.column("p").to_pylist() == [[[1, 2]], [], [[1, 2], [3, 4]]]

    with tfr.RecordWriter(paths[1]) as w:
        w.write(tfr.encode_example({"p": [1, 2, 3]}))
    loose = {"p": tfr.FixedLenSequence([2], "int64", allow_missing=True)}
    with pytest.raises(tfr.SchemaError, match="3 values; expected a multiple of 2") as info:
        tfr.read_table(paths, loose)
    assert (info.value.path, info.value.record_index, info.value.key) == (paths[1], 0, "p")


def test_sparse_counts_that_disagree_name_the_file_and_record(composite, tmp_path):
    bad = str(tmp_path / "bad.tfrecord")
    with tfr.RecordWriter(bad) as w:
        w.write(tfr.encode_example({"i": [1, 2], "x": np.array([1.0], np.float32)}))
    with pytest.raises(tfr.SchemaError, match="has 2 values") as info:
        tfr.read_table([*composite, bad], {"sp": COMPOSITE["sp"]}, batch_size=3)
    assert (info.value.path, info.value.record_index, info.value.key) == (bad, 0, "sp")


@pytest.mark.parametrize(
    ("key", "spec"),
    [
        ("s", tfr.FixedLen([], "bytes")),
        ("s", tfr.VarLen("bytes")),
        ("f", tfr.SparseFeature("i", "s", "bytes", 4)),
        ("f", R("bytes", "s", [R.UniformRowLength(1)])),
    ],
)
def test_strings_that_are_not_utf8_name_the_file_the_record_and_the_feature(tmp_path, key, spec):
    path = str(tmp_path / "u.tfrecord")
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"s": "fine", "i": 0}))
        w.write(tfr.encode_example({"s": b"\xff\xfe", "i": 1}))
    assert tfr.read_table(path, {key: spec}).num_rows == 2
    with pytest.raises(tfr.SchemaError, match=r"not UTF-8.*leave it out of strings=") as info:
        tfr.read_table(path, {key: spec}, strings=True)
    assert (info.value.path, info.value.record_index, info.value.key) == (path, 1, key)


def _sequences(tmp_path) -> list[str]:
    paths = [str(tmp_path / "s0.tfrecord"), str(tmp_path / "s1.tfrecord")]
    examples = [
        ({"id": 0, "tag": "a"}, {"frames": [[1.0, 2.0], [3.0, 4.0]], "words": [[b"x"], []]}),
        ({"id": 1, "tag": "b"}, {}),
        ({"id": 2, "tag": "c"}, {"frames": [[5.0, 6.0]], "words": [[b"y", b"z"]]}),
    ]
    for path, part in zip(paths, (examples[:2], examples[2:]), strict=True):
        with tfr.RecordWriter(path) as w:
            w.write_many(tfr.encode_sequence_example(c, f) for c, f in part)
    return paths


def test_sequence_examples_give_context_and_feature_list_columns(tmp_path):
    paths = _sequences(tmp_path)
    # An inferred schema brings the feature lists along.
    table = tfr.read_table(paths, strings=True, batch_size=2)
    assert table.schema == pa.schema(
        [
            ("id", pa.int64()),
            ("tag", pa.large_string()),
            ("frames", pa.large_list(pa.list_(pa.float32(), 2))),
            ("words", pa.large_list(pa.large_list(pa.large_string()))),
        ]
    )
    assert table.to_pylist() == [
        {"id": 0, "tag": "a", "frames": [[1, 2], [3, 4]], "words": [["x"], []]},
        {"id": 1, "tag": "b", "frames": [], "words": []},
        {"id": 2, "tag": "c", "frames": [[5, 6]], "words": [["y", "z"]]},
    ]
    lists = {"words": R("bytes"), "frames": tfr.FixedLenSequence([2], "float32", True)}
    picked = tfr.read_table(paths, sequence_schema=lists, columns=["frames", "words"])
    assert picked.column_names == ["frames", "words"]
    assert picked.column("words").to_pylist() == [[[b"x"], []], [], [[b"y", b"z"]]]
    context = {"id": tfr.FixedLen([], "int64")}
    both = tfr.read_table(paths, context, sequence_schema=lists, columns=["words", "id"])
    assert both.column_names == ["words", "id"]
    assert both.column("id").to_pylist() == [0, 1, 2]


def test_sequence_schemas_are_checked(tmp_path):
    paths = _sequences(tmp_path)
    lists = {"frames": tfr.VarLen("float32")}
    with pytest.raises(ValueError, match=r"\['frames'\] name both"):
        tfr.read_arrow(paths, {"frames": tfr.VarLen("float32")}, sequence_schema=lists)
    with pytest.raises(ValueError, match="feature list 'id'"):
        tfr.read_arrow(paths, sequence_schema={"id": tfr.FixedLen([], "int64")})
    with pytest.raises(KeyError, match="nope"):
        tfr.read_arrow(paths, sequence_schema=lists, columns=["nope"])
    required = {"frames": tfr.FixedLenSequence([2], "float32")}
    with pytest.raises(tfr.SchemaError, match="required") as info:
        tfr.read_table(paths, sequence_schema=required)
    assert (info.value.path, info.value.record_index) == (paths[0], 1)


def test_a_pipeline_to_arrow_takes_composite_features(composite):
    table = tfr.read_table(composite, COMPOSITE, batch_size=3)
    piped = tfr.Dataset.from_files(composite).parse(COMPOSITE).batch(3).to_arrow().read_all()
    assert piped.schema == table.schema
    for key in ("words", "pairs_of", "sp", "grid"):
        assert piped.column(key).equals(table.column(key)), key
    # FixedLenSequence batches come padded to their longest, as the pipeline gives them.
    assert piped.column("points").to_pylist() == [
        [[1, 2], [3, 4]],
        [[0, 0], [0, 0]],
        [[0, 0], [0, 0]],
        [[5, 6]],
    ]
    texts = tfr.Dataset.from_files(composite).parse(COMPOSITE).batch(3).to_arrow(strings=True)
    assert texts.read_all().column("grid").to_pylist()[0]["values"] == ["q", "p"]
    with pytest.raises(TypeError, match=r"call \.batch"):
        tfr.Dataset.from_files(composite).parse({"sp": COMPOSITE["sp"]}).to_arrow()


def test_a_pipeline_of_sequence_examples_points_to_read_arrow(tmp_path):
    paths = _sequences(tmp_path)
    dataset = tfr.Dataset.from_files(paths).parse(None, {"words": tfr.VarLen("bytes")}).batch(2)
    with pytest.raises(TypeError, match="sequence_schema"):
        dataset.to_arrow()


def test_row_splits_become_list_offsets_without_a_copy():
    from tfrecordkit.schema.arrow import list_array

    splits = np.array([0, 2, 2, 5], dtype=np.int64)
    column = list_array(pa, splits, pa.array(np.arange(5)))
    assert column.buffers()[1].address == splits.ctypes.data
    assert column.to_pylist() == [[0, 1], [], [2, 3, 4]]


def test_a_shape_with_no_values_is_a_schema_error_naming_its_feature(tmp_path):
    path = tmp_path / "empty.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"a": np.array([], np.int64), "b": 1}))
    for schema in (None, {"a": tfr.FixedLen([0], "int64")}):
        with pytest.raises(tfr.SchemaError, match="feature 'a': Arrow has no fixed-size list"):
            tfr.read_arrow(str(path), schema=schema)
    as_lists = {"a": tfr.VarLen("int64"), "b": tfr.FixedLen([], "int64")}
    table = tfr.read_table(str(path), schema=as_lists)
    assert table.column("a").to_pylist() == [[]]


def test_a_nullable_list_is_null_where_missing_and_empty_where_empty(tmp_path):
    table = pa.table(
        {
            "tags": pa.array([["a", "b"], [], None, ["c"]], pa.list_(pa.string())),
            "ids": pa.array([[1], None, [], [2, 3]], pa.list_(pa.int64())),
        }
    )
    tfr.write_dataset(table, str(tmp_path / "d"))
    files = str(tmp_path / "d-*.tfrecord")
    schema = {"tags": tfr.VarLen("bytes"), "ids": tfr.VarLen("int64")}
    back = tfr.read_table(files, schema, nullable=True, strings=True)
    back.validate(full=True)
    assert back.to_pydict() == table.to_pydict()
    # As TensorFlow reads them, a missing list is an empty one.
    plain = tfr.read_table(files, schema, nullable=["ids"], strings=True)
    assert plain.column("tags").to_pylist() == [["a", "b"], [], [], ["c"]]
    assert plain.column("ids").to_pylist() == [[1], None, [], [2, 3]]
    # Sliced batches keep their nulls where they were.
    assert back.slice(1, 2).column("tags").to_pylist() == [[], None]
