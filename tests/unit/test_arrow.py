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


def test_features_arrow_does_not_take_yet_are_refused_by_name(data):
    path, _ = data
    spec = {"s": tfr.SparseFeature("tok", "tok", "int64", 4)}
    with pytest.raises(TypeError, match="feature 's': read_arrow takes FixedLen and VarLen"):
        tfr.read_arrow(path, spec)


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
