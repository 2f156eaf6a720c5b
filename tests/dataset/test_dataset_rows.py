"""Iterables of rows past the first thousand, which the shard writers encode natively a
list at a time: each record is what ``encode_example`` makes of its row, in every way of
sharding, with skipped items, odd item types and bad rows as before."""

from __future__ import annotations

import types

import numpy as np
import pytest
import tfrecordkit as tfr
from tfrecordkit.datasets.sources import SKIPPED

N = 2_600


def _row(i: int) -> dict:
    row = {
        "id": i,
        "score": i / 4,
        "name": f"n{i}",
        "vec": np.arange(3, dtype=np.float32) * i,
        "opt": None if i % 3 else i,
        # Empty in some rows: once the kind is known (from row 1 on), an empty list of it.
        "tags": ["t"] * (i % 3),
    }
    if i % 7 == 0:
        row["only_some"] = [i, -i]
    return row


def _expected(i: int) -> bytes:
    present = {k: v for k, v in _row(i).items() if v is not None}
    if i > 1 and not present["tags"]:
        present["tags"] = np.array([], dtype=object)
    return tfr.encode_example(present)


def _items(n: int = N) -> list:
    """Rows, a few of them as a Mapping that is not a dict (encoded in Python)."""
    return [types.MappingProxyType(_row(i)) if i % 997 == 5 else _row(i) for i in range(n)]


def test_rows_fill_shards_in_order(tmp_path, ds):
    m = ds.write(ds.gen(_items()), tmp_path / "fill", max_shard_bytes=20_000)
    assert len(m.files) > 5
    assert ds.records(m.files) == [_expected(i) for i in range(N)]
    assert m.records == N
    # The manifest's schema describes every row.
    assert m.schema["vec"] == tfr.FixedLen([3], "float32")
    assert m.schema["tags"] == tfr.VarLen("bytes")
    sizes = [len(r) + 16 for r in ds.records(m.files[:1])]
    assert sum(sizes) >= 20_000 > sum(sizes[:-1]), "a shard ends once it holds the bound"


def test_rows_the_native_writer_leaves_to_python_fill_shards_too(tmp_path, ds):
    items = [types.MappingProxyType(_row(i)) for i in range(N)]
    m = ds.write(ds.gen(items), tmp_path / "proxies", max_shard_bytes=5_000)
    assert len(m.files) > 20
    assert ds.records(m.files) == [_expected(i) for i in range(N)]


def test_rows_deal_round_robin_to_a_fixed_number_of_shards(tmp_path, ds):
    m = ds.write(ds.gen(_items()), tmp_path / "rr", num_shards=3)
    want = [_expected(i) for i in range(N)]
    assert [ds.records([f]) for f in m.files] == [want[k::3] for k in range(3)]


def test_rows_of_a_sized_collection_in_contiguous_runs_with_skipped_items(tmp_path, ds):
    items = _items()
    for i in range(0, N, 11):
        items[i] = SKIPPED
    m = ds.write(items, tmp_path / "runs", num_shards=4)
    bounds = [N * k // 4 for k in range(5)]
    for k, f in enumerate(m.files):
        kept = [i for i in range(bounds[k], bounds[k + 1]) if i % 11]
        assert ds.records([f]) == [_expected(i) for i in kept]
    m = ds.write(items, tmp_path / "hosts", hosts=1, max_shard_bytes=50_000)
    assert ds.records(m.files) == [_expected(i) for i in range(N) if i % 11]


def test_records_and_bytes_like_items_past_the_first_thousand(tmp_path, ds):
    recs = ds.payloads(N, 40)
    items = [
        memoryview(r) if i % 500 == 3 else bytearray(r) if i % 3 else r for i, r in enumerate(recs)
    ]
    m = ds.write(ds.gen(items), tmp_path / "raw", max_shard_bytes=30_000)
    assert ds.records(m.files) == recs
    assert m.schema is None


def test_a_bad_row_late_in_the_stream_is_refused_and_leaves_nothing(tmp_path, ds):
    items = _items()
    items[2_000] = 12
    with pytest.raises(TypeError, match="rows must be dicts or serialized records"):
        ds.write(ds.gen(items), tmp_path / "bad", max_shard_bytes=20_000)
    items[2_000] = {"x": object()}
    with pytest.raises(TypeError, match='feature "x": cannot store object'):
        ds.write(ds.gen(items), tmp_path / "bad", num_shards=2)
    assert ds.listing(tmp_path) == []


def test_a_sized_collection_that_miscounts_is_refused(tmp_path, ds):
    class Miscounted(list):
        def __init__(self, items, claimed):
            super().__init__(items)
            self.claimed = claimed

        def __len__(self):
            return self.claimed

    for claimed, why in ((N + 5, "fewer"), (N - 5, "more")):
        with pytest.raises(ValueError, match=f"yielded {why} items"):
            ds.write(Miscounted(_items(), claimed), tmp_path / "m", num_shards=3)
    assert ds.listing(tmp_path) == []


def test_large_rows_are_taken_a_few_at_a_time(tmp_path, ds, monkeypatch):
    from tfrecordkit.datasets import sources

    lists = []

    class Watched(sources._Items):
        def write(self, w, items, encoded, *args, **kwargs):
            lists.append(sum(x is not SKIPPED for x in items))
            return super().write(w, items, encoded, *args, **kwargs)

    monkeypatch.setattr(sources, "_Items", Watched)
    rows = ({"i": i, "blob": b"x" * 200_000} for i in range(1_200))
    m = ds.write(rows, tmp_path / "big", max_shard_bytes="50MB")
    assert m.records == 1_200
    # Each list handed to a writer holds about 4 MiB of rows, not hundreds of them.
    assert len(lists) > 40 and max(lists) <= 25


def _late(n: int, at: int, odd: dict) -> list[dict]:
    """``n`` rows of one int ``x``, row ``at`` replaced by ``odd``: past the first
    thousand, it is encoded by the shard writers."""
    return [odd if i == at else {"x": i} for i in range(n)]


def test_the_manifest_schema_describes_rows_past_the_first_thousand(tmp_path, ds):
    # A row that has two values, or none, makes the feature VarLen for every reader.
    for name, odd in (("pair", {"x": [7, 7]}), ("missing", {})):
        m = ds.write(_late(N, 2_000, odd), tmp_path / name)
        assert m.schema == tfr.Schema({"x": tfr.VarLen("int64")})
        batches = tfr.read_examples(m.files, m.schema, 1000)
        values = np.concatenate([b["x"].values for b in batches]).tolist()
        assert values == [v for i in range(N) for v in (odd.get("x", []) if i == 2_000 else [i])]
    # Values of another type: no schema fits, and the writer says so.
    with pytest.warns(tfr.SchemaWarning, match="'x' is int64 in some .* and bytes"):
        m = ds.write(_late(N, 2_000, {"x": "seven"}), tmp_path / "text")
    assert m.schema is None
    assert ds.records(m.files)[2_000] == tfr.encode_example({"x": "seven"})


@pytest.mark.parametrize(
    ("at", "odd", "spec", "message"),
    [
        (1, {"x": "a"}, tfr.FixedLen([], "int64"), "'x' is int64 in some"),
        (2_000, {"x": "a"}, tfr.FixedLen([], "int64"), "'x' is int64 in some"),
        (2_000, {"x": [1, 2]}, tfr.FixedLen([], "int64"), "'x' has 2 values in some rows"),
        (2_000, {}, tfr.FixedLen([], "int64"), "'x' is missing from 1 row,"),
        (2_000, {"x": 0.5}, tfr.FixedLen([], "int64"), "'x' is int64 in some"),
        (5, {"y": 1}, tfr.VarLen("bytes"), "'x' holds int64 values, and the schema says bytes"),
    ],
)
def test_rows_that_do_not_fit_the_schema_given_are_refused_and_leave_nothing(
    tmp_path, ds, at, odd, spec, message
):
    with pytest.raises(tfr.SchemaError, match=message):
        ds.write(_late(N, at, odd), tmp_path / "bad", schema={"x": spec})
    assert list(tmp_path.iterdir()) == []


def test_rows_fit_the_schema_given_as_tensorflow_parses_them(tmp_path, ds):
    import tensorflow as tf

    # Whole numbers where the schema says float32 are written as floats; a FixedLen with
    # a default may be missing.
    rows = [{"x": i} if i % 500 else {} for i in range(N)]
    schema = {"x": tfr.FixedLen([], "float32", default=-1.0)}
    m = ds.write(rows, tmp_path / "floats", schema=schema)
    assert m.schema == tfr.Schema(schema)
    spec = {"x": tf.io.FixedLenFeature([], tf.float32, default_value=-1.0)}
    parsed = tf.io.parse_example(ds.records(m.files), spec)["x"].numpy()
    assert parsed.tolist() == [float(i) if i % 500 else -1.0 for i in range(N)]


@pytest.mark.parametrize("at", [1, 2_000])
def test_rows_and_serialized_records_together_are_refused_and_leave_nothing(tmp_path, ds, at):
    items: list = _late(N, at, {})
    items[at] = tfr.encode_example({"x": at})
    with pytest.raises(TypeError, match=r"the items mix rows \(dicts\) with serialized records"):
        ds.write(ds.gen(items), tmp_path / "mixed")
    assert list(tmp_path.iterdir()) == []
