"""The manifest, the ``.idx`` sidecars, and ``count`` answering from them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr
import tfrecordkit._core


def _columns(n: int = 120) -> dict:
    rng = np.random.default_rng(7)
    return {
        "i": np.arange(n),
        "x": rng.standard_normal((n, 3)).astype(np.float32),
        "s": [("w" * int(k)).encode() for k in rng.integers(0, 50, n)],
    }


# ---------------------------------------------------------------------------------------------
# Manifest contents
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_manifest_matches_files(tmp_path, ds, compression):
    m = ds.write(_columns(), tmp_path / "m", num_shards=4, compression=compression)
    d = ds.manifest_json(tmp_path / "m")
    assert d["format"] == "tfrecordkit.manifest/1"
    assert d["version"] == tfr.__version__
    assert d["prefix"] == "m"
    assert d["compression"] == compression
    assert d["index"] is (compression is None)
    assert d["records"] == 120 == m.records
    assert len(d["shards"]) == 4
    for shard, path in zip(d["shards"], m.files, strict=True):
        raw = Path(path).read_bytes()
        assert shard["file"] == os.path.basename(path)
        assert shard["bytes"] == len(raw) == os.path.getsize(path)
        assert shard["crc32c"] == f"{ds.crc32c(raw):08x}"
        assert shard["records"] == sum(1 for _ in tfr.read_records(path))
    assert d["bytes"] == sum(s["bytes"] for s in d["shards"]) == m.bytes
    # The returned Manifest and the loaded one agree.
    loaded = tfr.Manifest.load(tmp_path / "m")
    assert loaded == m
    assert loaded.to_dict() == d


def test_manifest_crc_of_stream_and_dicts(tmp_path, ds):
    m = ds.write(ds.gen(ds.payloads(300, 70)), tmp_path / "s", max_shard_bytes=5000)
    assert len(m.shards) > 3
    for s, f in zip(m.shards, m.files, strict=True):
        raw = Path(f).read_bytes()
        assert s.crc32c == f"{ds.crc32c(raw):08x}" and s.bytes == len(raw)
        assert s.records == len(ds.frames(raw))
    m = ds.write([{"a": i} for i in range(50)], tmp_path / "d", num_shards=2, compression="gzip")
    for s, f in zip(m.shards, m.files, strict=True):
        assert s.crc32c == f"{ds.crc32c(Path(f).read_bytes()):08x}"


def test_manifest_schema_round_trips(tmp_path, ds):
    m = ds.write(_columns(), tmp_path / "sch", num_shards=2)
    d = ds.manifest_json(tmp_path / "sch")
    schema = tfr.Schema.from_dict(d["schema"])
    assert schema == m.schema
    assert dict(schema) == {
        "i": tfr.FixedLen([], "int64"),
        "x": tfr.FixedLen([3], "float32"),
        "s": tfr.FixedLen([], "bytes"),
    }
    (batch,) = tfr.read_examples(m.files, schema, batch_size=500)
    cols = _columns()
    np.testing.assert_array_equal(batch["i"], cols["i"])
    np.testing.assert_array_equal(batch["x"], cols["x"])
    assert batch["s"].tolist() == cols["s"]


def test_explicit_schema_overrides_inferred_dtype(tmp_path, ds):
    schema = {"i": tfr.FixedLen([], "float32"), "x": tfr.VarLen("float32")}
    m = ds.write({"i": np.arange(5), "x": np.ones((5, 2))}, tmp_path / "ov", schema=schema)
    assert dict(m.schema) == schema
    assert tfr.Schema.from_dict(ds.manifest_json(tmp_path / "ov")["schema"]) == schema
    got = ds.decoded(m.files)
    assert [r["i"].dtype for r in got] == [np.float32] * 5
    assert [r["i"].tolist() for r in got] == [[float(i)] for i in range(5)]


def test_manifest_load_by_prefix_or_path(tmp_path, ds, monkeypatch):
    m = ds.write({"i": np.arange(10)}, tmp_path / "ld", num_shards=2)
    by_prefix = tfr.Manifest.load(str(tmp_path / "ld"))
    by_path = tfr.Manifest.load(tmp_path / "ld.manifest.json")
    assert by_prefix == by_path == m
    assert by_prefix.files == by_path.files == m.files
    assert by_prefix.records == 10 and by_prefix.bytes == m.bytes
    # A relative prefix resolves beside the manifest.
    monkeypatch.chdir(tmp_path)
    rel = tfr.Manifest.load("ld")
    assert [os.path.abspath(f) for f in rel.files] == [os.path.abspath(f) for f in m.files]
    assert sum(1 for _ in tfr.read_records(rel.files)) == 10
    with pytest.raises(FileNotFoundError):
        tfr.Manifest.load(tmp_path / "missing")


def test_manifest_load_rejects_other_json(tmp_path):
    (tmp_path / "x.manifest.json").write_text(json.dumps({"format": "other", "shards": []}))
    with pytest.raises(ValueError):
        tfr.Manifest.load(tmp_path / "x")


def test_relative_prefix(tmp_path, ds, monkeypatch):
    monkeypatch.chdir(tmp_path)
    m = ds.write({"i": np.arange(6)}, "rel", num_shards=2)
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["rel.manifest.json"]
        + [f"rel-0000{i}-of-00002.tfrecord{e}" for i in range(2) for e in ("", ".idx")]
    )
    assert tfr.count(m.files) == 6
    m = ds.write({"i": np.arange(6)}, "nested/dir/rel", num_shards=1)
    assert os.path.exists("nested/dir/rel-00000-of-00001.tfrecord")
    assert tfr.Manifest.load("nested/dir/rel").records == 6


# ---------------------------------------------------------------------------------------------
# Index sidecars
# ---------------------------------------------------------------------------------------------


def _idx(path: str) -> list[tuple[int, int]]:
    lines = Path(path + ".idx").read_text().splitlines()
    return [tuple(int(x) for x in line.split()) for line in lines]


@pytest.mark.parametrize(
    "make",
    [
        lambda ds, p: ds.write(_columns(), p, num_shards=3),
        lambda ds, p: ds.write(ds.gen(ds.payloads(200, 50)), p, max_shard_bytes=3000),
        lambda ds, p: ds.write(ds.gen(ds.payloads(20, 9)), p, num_shards=3),
        lambda ds, p: ds.write([{"i": i, "t": "x" * i} for i in range(30)], p, num_shards=2),
    ],
    ids=["table", "stream-bytes", "round-robin", "dict-rows"],
)
def test_index_matches_framing(tmp_path, ds, make):
    m = make(ds, str(tmp_path / "ix"))
    assert m.index is True
    for f in m.files:
        raw = Path(f).read_bytes()
        framing = [(off, length) for off, length, _ in ds.frames(raw)]
        assert _idx(f) == framing
        if framing:
            assert framing[-1][0] + framing[-1][1] == len(raw)
        # Each indexed slice is one whole record that the reader agrees with.
        payloads = [raw[o + 12 : o + n - 4] for o, n in framing]
        assert payloads == list(tfr.read_records(f))


def test_index_false_writes_no_sidecars(tmp_path, ds):
    m = ds.write(_columns(), tmp_path / "noidx", num_shards=2, index=False)
    assert m.index is False
    assert not [n for n in ds.listing(tmp_path) if n.endswith(".idx")]
    assert ds.manifest_json(tmp_path / "noidx")["index"] is False


# ---------------------------------------------------------------------------------------------
# count from the manifest and the sidecars
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def no_scan(monkeypatch):
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise AssertionError("count scanned a file it should have known")

    monkeypatch.setattr(tfrecordkit._core, "count_records", refuse)
    return calls


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_count_uses_manifest(tmp_path, ds, monkeypatch, compression):
    m = ds.write(_columns(), tmp_path / "cm", num_shards=5, compression=compression)
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise AssertionError("scanned")

    monkeypatch.setattr(tfrecordkit._core, "count_records", refuse)
    assert tfr.count(m.files) == 120
    ext = ".tfrecord.gz" if compression else ".tfrecord"
    assert tfr.count(str(tmp_path / f"cm-*{ext}")) == 120
    assert tfr.count(m.files[1]) == m.shards[1].records
    assert calls == []


def test_count_uses_index_without_manifest(tmp_path, ds, no_scan):
    m = ds.write(_columns(), tmp_path / "ci", num_shards=3)
    os.remove(tmp_path / "ci.manifest.json")
    assert tfr.count(m.files) == 120
    assert [tfr.count(f) for f in m.files] == [s.records for s in m.shards]
    assert no_scan == []


def test_count_uses_index_after_rename(tmp_path, ds, no_scan):
    # A shard moved away from its dataset (and its sidecar with it) is still known.
    m = ds.write({"i": np.arange(33)}, tmp_path / "mv", num_shards=3)
    os.rename(m.files[0], tmp_path / "alone.tfrecord")
    os.rename(m.files[0] + ".idx", tmp_path / "alone.tfrecord.idx")
    assert tfr.count(tmp_path / "alone.tfrecord") == 11
    assert no_scan == []


def test_count_falls_back_after_append(tmp_path, ds):
    m = ds.write({"i": np.arange(30)}, tmp_path / "ap", num_shards=3)
    extra = tmp_path / "extra.tfrecord"
    with tfr.RecordWriter(extra) as w:
        w.write(tfr.encode_example({"i": 99}))
        w.write(tfr.encode_example({"i": 100}))
    with open(m.files[1], "ab") as f:
        f.write(extra.read_bytes())
    assert os.path.getsize(m.files[1]) != m.shards[1].bytes
    assert tfr.count(m.files[1]) == 12
    assert tfr.count(m.files) == 32
    assert tfr.count(str(tmp_path / "ap-*")) == 32


def test_count_falls_back_after_append_without_manifest(tmp_path, ds):
    m = ds.write({"i": np.arange(30)}, tmp_path / "ap2", num_shards=3)
    os.remove(tmp_path / "ap2.manifest.json")
    with open(m.files[2], "ab") as f:
        f.write(ds.frame(tfr.encode_example({"i": 1})))
    assert tfr.count(m.files) == 31


def test_count_falls_back_after_truncation(tmp_path, ds):
    m = ds.write({"i": np.arange(30)}, tmp_path / "tr", num_shards=3)
    size = os.path.getsize(m.files[0])
    os.truncate(m.files[0], size - 3)
    with pytest.raises(tfr.TruncatedRecordError):
        tfr.count(m.files[0])
    # Cut exactly at a record boundary: a correct, smaller count.
    last_offset = _idx(m.files[1])[-1][0]
    os.truncate(m.files[1], last_offset)
    assert tfr.count(m.files[1]) == m.shards[1].records - 1


def test_count_falls_back_for_compressed_shard_changed(tmp_path, ds):
    m = ds.write({"i": np.arange(30)}, tmp_path / "cz", num_shards=2, compression="gzip")
    extra = tmp_path / "extra.tfrecord.gz"
    with tfr.RecordWriter(extra, "gzip") as w:
        w.write(tfr.encode_example({"i": 99}))
    # Concatenated gzip members are one valid gzip stream.
    with open(m.files[0], "ab") as f:
        f.write(extra.read_bytes())
    assert tfr.count(m.files[0]) == 16
    assert tfr.count(m.files) == 31


def test_count_with_stale_index_scans(tmp_path, ds):
    m = ds.write({"i": np.arange(10)}, tmp_path / "si", num_shards=1)
    os.remove(tmp_path / "si.manifest.json")
    Path(m.files[0] + ".idx").write_text("0 10\n")  # describes a 10-byte file
    assert tfr.count(m.files[0]) == 10


def test_count_cli_uses_manifest(tmp_path, ds, no_scan):
    from click.testing import CliRunner
    from tfrecordkit.cli import main

    ds.write({"i": np.arange(25)}, tmp_path / "cl", num_shards=5)
    result = CliRunner().invoke(main, ["count", "--json", str(tmp_path / "cl-*")])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["total"] == 25 and len(out["files"]) == 5
    assert no_scan == []


def test_no_more_shards_than_their_names_count(tmp_path):
    with pytest.raises(ValueError, match="num_shards must be 1 to 99,999, not 100000"):
        tfr.write_dataset({"a": [1, 2]}, tmp_path / "n" / "s", num_shards=100_000)
    with pytest.raises(ValueError, match=r"would take .* shards, more than the 99,999"):
        tfr.write_dataset({"a": np.arange(200_000)}, tmp_path / "b" / "s", max_shard_bytes=1)
    assert not list(tmp_path.rglob("*.tfrecord"))


def test_convert_refuses_an_image_size_past_the_pixel_bound(tmp_path):
    with pytest.raises(ValueError, match="more than the 67,108,864 pixels"):
        tfr.convert("missing.csv", tmp_path, image_size=(9000, 9000))
    with pytest.raises(ValueError, match="two positive ints"):
        tfr.convert("missing.csv", tmp_path, image_size=(0, 5))


def test_a_manifest_cannot_claim_more_records_than_its_shards_hold(tmp_path):
    manifest = tfr.write_dataset({"a": np.arange(10)}, tmp_path / "s", num_shards=1)
    path = tmp_path / "s.manifest.json"
    doc = json.loads(path.read_text())
    doc["shards"][0]["records"] = 2**62
    path.write_text(json.dumps(doc))
    shard = str(tmp_path / manifest.shards[0].file)
    assert tfr.count(shard) == 10
    assert len(list(tfr.Dataset.from_files(shard))) == 10
