"""DuckDB and Hugging Face datasets, both directions, through Arrow."""

from __future__ import annotations

import datasets
import duckdb
import numpy as np
import pytest
import tfrecordkit as tfr

N = 2_000


@pytest.fixture
def shards(tmp_path):
    rng = np.random.default_rng(3)
    columns = {
        "id": np.arange(N),
        "label": rng.integers(0, 4, N),
        "score": rng.standard_normal(N).astype(np.float32),
        "name": np.array([f"item-{i}".encode() for i in range(N)], dtype=object),
        "vec": rng.standard_normal((N, 3)).astype(np.float32),
    }
    manifest = tfr.write_dataset(columns, str(tmp_path / "data" / "train"), num_shards=4)
    return manifest, columns


def test_duckdb_runs_sql_over_a_glob_of_shards(shards):
    manifest, columns = shards
    glob = str(manifest.files[0]).rsplit("-", 3)[0] + "-*.tfrecord"
    con = duckdb.connect()
    con.register("stream", tfr.read_arrow(glob, strings=True))
    got = con.sql(
        "SELECT label, count(*), sum(id), max(name) FROM stream GROUP BY label ORDER BY label"
    ).fetchall()
    want = []
    for label in range(4):
        ids = columns["id"][columns["label"] == label]
        names = sorted(f"item-{i}" for i in ids)
        want.append((label, len(ids), int(ids.sum()), names[-1]))
    assert got == want


def test_duckdb_results_stream_into_write_dataset(tmp_path, shards):
    manifest, columns = shards
    con = duckdb.connect()
    con.register("stream", tfr.read_arrow(manifest.files))
    query = con.sql("SELECT id, score * 2 AS doubled, vec FROM stream WHERE label = 1")
    written = tfr.write_dataset(query.to_arrow_reader(256), str(tmp_path / "q" / "train"))
    mask = columns["label"] == 1
    assert written.records == int(mask.sum())
    back = tfr.read_table(written.files).sort_by("id")
    np.testing.assert_array_equal(back["id"].to_numpy(), columns["id"][mask])
    np.testing.assert_array_equal(back["doubled"].to_numpy(), columns["score"][mask] * 2)
    vec = np.asarray(back["vec"].combine_chunks().flatten()).reshape(-1, 3)
    np.testing.assert_array_equal(vec, columns["vec"][mask])


def test_hugging_face_dataset_from_our_arrow(shards):
    manifest, columns = shards
    hf = datasets.Dataset(tfr.read_table(manifest.files))
    assert len(hf) == N
    assert hf.features["score"] == datasets.Value("float32")
    assert hf.features["vec"] == datasets.List(datasets.Value("float32"), length=3)
    row = hf[17]
    assert row["id"] == 17 and row["name"] == b"item-17"
    np.testing.assert_array_equal(np.asarray(row["vec"], np.float32), columns["vec"][17])
    torch_batch = hf.with_format("numpy")[:8]
    np.testing.assert_array_equal(torch_batch["label"], columns["label"][:8])


def test_write_dataset_streams_a_hugging_face_dataset_as_it_stands(tmp_path):
    hf = datasets.Dataset.from_dict(
        {
            "id": list(range(500)),
            "text": [f"row {i}" for i in range(500)],
            "tokens": [list(range(i % 5)) for i in range(500)],
        }
    )
    view = hf.shuffle(seed=1).select(range(300)).filter(lambda r: r["id"] % 3 != 0)
    written = tfr.write_dataset(view, str(tmp_path / "hf" / "train"))
    assert written.records == len(view)
    assert set(written.schema) == {"id", "text", "tokens"}
    back = tfr.read_table(written.files, written.schema, strings=True)
    # The rows of the view, in its order: not those of the table underneath.
    assert back["id"].to_pylist() == view["id"]
    assert back["text"].to_pylist() == view["text"]
    assert back["tokens"].to_pylist() == view["tokens"]


def test_a_hugging_face_dataset_is_written_a_batch_at_a_time(tmp_path, monkeypatch):
    from tfrecordkit.datasets import sources

    seen: list[int] = []
    as_table = sources.as_table

    def spy(batch, schema=None):
        seen.append(batch.num_rows)
        return as_table(batch, schema)

    monkeypatch.setattr(sources, "as_table", spy)
    hf = datasets.Dataset.from_dict({"x": list(range(150_000))})
    written = tfr.write_dataset(hf, str(tmp_path / "big" / "train"))
    assert written.records == 150_000
    assert len(seen) >= 3 and max(seen) <= 65_536 and sum(seen) == 150_000


def test_a_dataset_dict_asks_for_one_split(tmp_path):
    both = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"x": [1]})})
    with pytest.raises(TypeError, match=r"DatasetDict of splits \['train'\]: write one split"):
        tfr.write_dataset(both, str(tmp_path / "t"), progress=False)
    assert not list(tmp_path.iterdir())


def _categories():
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    values = ["cat", "dog", None, "cat"]
    return {
        "pandas": pd.DataFrame({"c": pd.Categorical(values)}),
        "polars": pl.DataFrame({"c": values}, schema={"c": pl.Categorical}),
        "arrow": pa.table({"c": pa.array(values).dictionary_encode()}),
    }


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_categorical_columns_are_written_as_their_values(tmp_path, kind):
    m = tfr.write_dataset(_categories()[kind], str(tmp_path / "t"), progress=False)
    rows = [tfr.decode_example(r) for r in tfr.read_records(m.files)]
    assert [r.get("c") for r in rows] == [[b"cat"], [b"dog"], None, [b"cat"]]


@pytest.mark.parametrize("kind", ["pandas", "arrow"])
def test_a_column_named_twice_is_refused_naming_it(tmp_path, kind):
    import pandas as pd
    import pyarrow as pa

    data = (
        pd.DataFrame([[1, 2]], columns=["a", "a"])
        if kind == "pandas"
        else pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    )
    with pytest.raises(ValueError, match="column 'a' appears twice"):
        tfr.write_dataset(data, str(tmp_path / "t"), progress=False)
    assert not list(tmp_path.iterdir())


def test_a_frame_without_columns_is_that_many_empty_examples(tmp_path):
    import pandas as pd
    import tensorflow as tf

    m = tfr.write_dataset(pd.DataFrame(index=range(3)), str(tmp_path / "t"), progress=False)
    assert m.records == 3
    for record in tfr.read_records(m.files):
        assert tfr.decode_example(record) == {}
        assert not tf.train.Example.FromString(record).features.feature


@pytest.mark.parametrize("kind", ["arrow", "arrow-chunked", "pandas", "polars"])
def test_a_column_of_a_dict_keeps_its_type_and_nulls_as_in_a_frame(tmp_path, kind):
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    values = [31, None, 45]
    column = {
        "arrow": lambda: pa.array(values),
        "arrow-chunked": lambda: pa.chunked_array([values[:1], values[1:]]),
        "pandas": lambda: pd.Series(values, dtype="Int64"),
        "polars": lambda: pl.Series(values),
    }[kind]()
    m = tfr.write_dataset({"age": column, "id": [1, 2, 3]}, str(tmp_path / "t"), progress=False)
    rows = [tfr.decode_example(r) for r in tfr.read_records(m.files)]
    assert [r.get("age") for r in rows] == [[31], None, [45]]
    assert rows[0]["age"].dtype == np.int64  # not float32 with a NaN for the null
    back = tfr.read_table(m.files, nullable=True)
    assert back.column("age").to_pylist() == values
