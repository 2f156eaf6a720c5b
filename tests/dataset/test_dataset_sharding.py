"""How ``write_dataset`` splits data into shards, and what it names them."""

from __future__ import annotations

import gzip
import os
import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tfrecordkit as tfr

MiB = 1 << 20


def _flat(lists) -> list:
    return [x for sub in lists for x in sub]


def _ids(files) -> list[list[int]]:
    return [[int(tfr.decode_example(r)["i"][0]) for r in tfr.read_records(f)] for f in files]


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 3, 12])
def test_shard_names_and_counts(tmp_path, ds, n):
    m = ds.write({"i": np.arange(40)}, tmp_path / "sub" / "train", num_shards=n)
    names = [f"train-{i:05d}-of-{n:05d}.tfrecord" for i in range(n)]
    assert [s.file for s in m.shards] == names
    assert m.files == [os.path.join(str(tmp_path / "sub"), x) for x in names]
    expected = sorted([*names, *(x + ".idx" for x in names), "train.manifest.json"])
    assert ds.listing(tmp_path / "sub") == expected


@pytest.mark.parametrize(
    ("compression", "ext", "check"),
    [
        ("gzip", ".tfrecord.gz", lambda raw: raw[:2] == b"\x1f\x8b"),
        (
            "zlib",
            ".tfrecord.zz",
            lambda raw: raw[0] & 0x0F == 8 and (raw[0] * 256 + raw[1]) % 31 == 0,
        ),
    ],
)
def test_compressed_shards(tmp_path, ds, compression, ext, check):
    n = 300
    columns = {"i": np.arange(n), "text": np.array([b"abcabcabc" * 10] * n)}
    m = ds.write(columns, tmp_path / "c", num_shards=3, compression=compression)
    assert [s.file for s in m.shards] == [f"c-{i:05d}-of-00003{ext}" for i in range(3)]
    # No index sidecars for compressed shards.
    assert not [x for x in ds.listing(tmp_path) if x.endswith(".idx")]
    assert m.compression == compression and m.index is False
    assert ds.manifest_json(tmp_path / "c")["compression"] == compression
    plain = []
    for f in m.files:
        raw = Path(f).read_bytes()
        assert check(raw), f"{f} does not look {compression}-compressed"
        data = gzip.decompress(raw) if compression == "gzip" else zlib.decompress(raw)
        assert len(data) > len(raw)  # repetitive data really was compressed
        plain.append([p for _, _, p in ds.frames(data)])
    assert [len(p) for p in plain] == [100, 100, 100]
    assert [b for p in plain for b in p] == ds.records(m.files)
    assert _ids(m.files) == [list(range(0, 100)), list(range(100, 200)), list(range(200, 300))]
    assert tfr.count(m.files) == n


# ---------------------------------------------------------------------------------------------
# Fixed number of shards
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_rows", [10, 11, 99])
def test_table_fixed_shards_contiguous(tmp_path, ds, n_rows):
    m = ds.write(pd.DataFrame({"i": np.arange(n_rows)}), tmp_path / "t", num_shards=4)
    ids = _ids(m.files)
    bounds = [n_rows * k // 4 for k in range(5)]
    assert ids == [list(range(bounds[k], bounds[k + 1])) for k in range(4)]
    assert [s.records for s in m.shards] == [len(x) for x in ids]
    assert max(map(len, ids)) - min(map(len, ids)) <= 1


def test_table_more_shards_than_rows(tmp_path, ds):
    m = ds.write({"i": np.arange(3)}, tmp_path / "few", num_shards=5)
    assert len(m.shards) == 5
    assert _flat(_ids(m.files)) == [0, 1, 2]
    assert sum(s.records for s in m.shards) == 3
    assert tfr.count(m.files) == 3


def test_sized_iterable_fixed_shards_contiguous(tmp_path, ds):
    rows = [{"i": i} for i in range(10)]
    m = ds.write(rows, tmp_path / "rows", num_shards=3)
    assert _ids(m.files) == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    recs = ds.example_bytes(10)
    m = ds.write(recs, tmp_path / "recs", num_shards=3)
    assert ds.per_shard(m) == [recs[0:3], recs[3:6], recs[6:10]]


def test_generator_fixed_shards_round_robin(tmp_path, ds):
    m = ds.write(ds.gen({"i": i} for i in range(10)), tmp_path / "rr", num_shards=3)
    assert _ids(m.files) == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert [s.records for s in m.shards] == [4, 3, 3]
    recs = ds.payloads(7)
    m = ds.write(iter(recs), tmp_path / "rrb", num_shards=3)
    assert ds.per_shard(m) == [recs[0::3], recs[1::3], recs[2::3]]


def test_generator_fewer_items_than_shards(tmp_path, ds):
    m = ds.write(ds.gen(ds.payloads(2)), tmp_path / "g", num_shards=4)
    assert [s.records for s in m.shards] == [1, 1, 0, 0]
    assert len(m.files) == 4 and all(os.path.exists(f) for f in m.files)
    assert tfr.count(m.files) == 2


def test_sized_iterable_longer_than_its_len_is_refused(tmp_path, ds):
    class Liar:
        def __len__(self):
            return 3

        def __iter__(self):
            return iter(ds.payloads(5))

    with pytest.raises(ValueError):
        ds.write(Liar(), tmp_path / "liar", num_shards=2)
    assert ds.listing(tmp_path) == []


def test_sized_iterable_shorter_than_its_len_is_refused(tmp_path, ds):
    class Liar:
        def __len__(self):
            return 8

        def __iter__(self):
            return iter(ds.payloads(5))

    # A clear error (not a bare StopIteration escaping write_dataset), and nothing written.
    with pytest.raises(ValueError):
        ds.write(Liar(), tmp_path / "liar", num_shards=2)
    assert ds.listing(tmp_path) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_shards": 0},
        {"compression": "lz4"},
        {"max_shard_bytes": "12 parsecs"},
        {"max_shard_bytes": 0},
        {"max_shard_bytes": "-5MiB"},
    ],
)
def test_bad_arguments_write_nothing(tmp_path, ds, kwargs):
    with pytest.raises(ValueError):
        ds.write({"i": np.arange(5)}, tmp_path / "bad", **kwargs)
    assert ds.finals(tmp_path) == [] and ds.hidden(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# Shards from a byte limit
# ---------------------------------------------------------------------------------------------


def test_table_max_shard_bytes(tmp_path, ds):
    n, width = 1000, 100
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, width, n)
    text = [bytes(rng.integers(97, 123, k).astype(np.uint8)) for k in lengths]
    columns = {"i": np.arange(n), "text": np.array(text, dtype=object)}
    frames = [16 + len(tfr.encode_example({"i": i, "text": t})) for i, t in enumerate(text)]
    total, biggest = sum(frames), max(frames)
    limit = 10_000
    m = ds.write(columns, tmp_path / "mb", max_shard_bytes=limit)
    assert len(m.shards) == -(-total // limit)
    assert m.bytes == total
    for s in m.shards:
        assert s.bytes <= limit + biggest, s
    assert _flat(_ids(m.files)) == list(range(n))
    # A string limit means the same.
    m2 = ds.write(columns, tmp_path / "mb2", max_shard_bytes=f"{limit / 1000}kB")
    assert [s.records for s in m2.shards] == [s.records for s in m.shards]


def test_stream_max_shard_bytes(tmp_path, ds):
    size, n, limit = 84, 500, 4096  # 100 bytes framed
    recs = ds.payloads(n, size)
    m = ds.write(ds.gen(recs), tmp_path / "sb", max_shard_bytes=limit)
    per = -(-limit // (size + 16))  # records until a shard reaches the limit
    expected = [per] * (n // per) + ([n % per] if n % per else [])
    assert [s.records for s in m.shards] == expected
    for s in m.shards:
        assert s.bytes <= limit + size + 16 - 1
    assert [s.bytes for s in m.shards][:-1] == [per * (size + 16)] * (len(expected) - 1)
    assert ds.records(m.files) == recs
    n_sh = len(expected)
    assert [s.file for s in m.shards] == [f"sb-{i:05d}-of-{n_sh:05d}.tfrecord" for i in range(n_sh)]


def test_stream_max_shard_bytes_one_record_overshoot(tmp_path, ds):
    recs = [b"a" * 10, b"b" * 5000, b"c" * 10, b"d" * 10]
    m = ds.write(iter(recs), tmp_path / "big", max_shard_bytes=1000)
    # A record larger than the limit gets a shard of its own; no record is split or dropped.
    assert ds.per_shard(m) == [recs[:2], recs[2:]]
    assert m.shards[0].bytes == 26 + 5016


def test_default_limit_gives_one_shard(tmp_path, ds):
    m = ds.write({"i": np.arange(100)}, tmp_path / "one")
    assert len(m.shards) == 1 and m.shards[0].file == "one-00000-of-00001.tfrecord"


# ---------------------------------------------------------------------------------------------
# hosts
# ---------------------------------------------------------------------------------------------


def _big_table(total_bytes: int) -> dict:
    width = 4000
    n = total_bytes // (width + 30)
    return {"i": np.arange(n), "blob": np.full(n, b"x" * width, dtype=f"S{width}")}


def test_hosts_large_data_gets_ten_shards_per_host(tmp_path, ds):
    m = ds.write(_big_table(12 * MiB), tmp_path / "h1", hosts=1)
    assert len(m.shards) >= 10
    m = ds.write(_big_table(25 * MiB), tmp_path / "h2", hosts=2, workers=4)
    assert len(m.shards) >= 20
    for s in m.shards:
        assert s.bytes >= MiB * 0.9
    assert _flat(_ids(m.files)) == list(range(m.records))


def test_hosts_small_data_gets_fewer_shards(tmp_path, ds):
    m = ds.write(_big_table(3 * MiB + 1000), tmp_path / "small", hosts=4)
    assert 1 <= len(m.shards) < 40
    assert len(m.shards) == 3  # no shard under 1 MiB to reach the per-host count
    for s in m.shards:
        assert s.bytes >= MiB * 0.9
    m = ds.write({"i": np.arange(10)}, tmp_path / "tiny", hosts=8)
    assert len(m.shards) == 1


def test_hosts_with_num_shards_uses_num_shards(tmp_path, ds):
    m = ds.write(_big_table(12 * MiB), tmp_path / "hn", hosts=4, num_shards=2)
    assert len(m.shards) == 2


def test_hosts_sized_collection_of_records(tmp_path, ds):
    # The docs promise ten shards per host for large data; a sized collection qualifies
    # (only unsized iterables are refused, with a message saying so).
    recs = [b"r" * 4000] * (12 * MiB // 4016)
    m = ds.write(recs, tmp_path / "hs", hosts=1)
    assert len(m.shards) >= 10
    assert ds.records(m.files) == recs


def test_hosts_with_skipped_items_keeps_every_record(tmp_path, ds):
    # Items that turned out to hold nothing (conversion's rows whose image would not load)
    # keep their places in the runs: the shard bounds still add up to len(data).
    from tfrecordkit.datasets.sources import SKIPPED

    recs = [b"r" * 4000 if i % 5 else SKIPPED for i in range(12 * MiB // 4016)]
    m = ds.write(recs, tmp_path / "hk", hosts=1)
    kept = [r for r in recs if r is not SKIPPED]
    assert len(m.shards) >= 8 and ds.records(m.files) == kept


def test_hosts_unsized_iterable_without_num_shards_refused(tmp_path, ds):
    with pytest.raises(ValueError, match="hosts"):
        ds.write(ds.gen(ds.payloads(5)), tmp_path / "hu", hosts=2)
    assert ds.listing(tmp_path) == []
    m = ds.write(ds.gen(ds.payloads(5)), tmp_path / "hu", hosts=2, num_shards=2)
    assert [s.records for s in m.shards] == [3, 2]


def test_shard_re_matches_every_written_name(tmp_path, ds):
    from tfrecordkit.datasets.manifest import SHARD_RE

    for comp in (None, "gzip", "zlib"):
        m = ds.write({"i": np.arange(4)}, tmp_path / f"x{comp}", num_shards=2, compression=comp)
        for s in m.shards:
            g = SHARD_RE.match(s.file)
            assert g and g.group("prefix") == f"x{comp}" and g.group("count") == "00002"
            assert re.fullmatch(r"x\w+-0000[01]-of-00002\.tfrecord(\.gz|\.zz)?", s.file)


def test_table_max_shard_bytes_with_one_large_row_has_no_empty_shards(tmp_path, ds):
    # One row far larger than the limit among small ones: every shard written should hold
    # records (an empty shard keeps nothing under the limit; it is only a file to skip).
    rows = [b"a" * 10] * 50 + [b"b" * 10_000] + [b"c" * 10] * 50
    limit = 2000
    m = ds.write({"s": rows}, tmp_path / "lr", max_shard_bytes=limit)
    assert ds.records(m.files) == [tfr.encode_example({"s": r}) for r in rows]
    biggest = max(len(tfr.encode_example({"s": r})) for r in rows) + 16
    for s in m.shards:
        assert s.bytes <= limit + biggest
    assert all(s.records > 0 for s in m.shards), [(s.records, s.bytes) for s in m.shards]


def test_compression_is_spelled_as_the_readers_spell_it(tmp_path):
    columns = {"i": np.arange(10)}
    m = tfr.write_dataset(columns, tmp_path / "a", num_shards=2, compression="GZIP", progress=False)
    assert m.compression == "gzip" and m.files[0].endswith(".tfrecord.gz")
    m = tfr.write_dataset(columns, tmp_path / "b", num_shards=2, compression="none", progress=False)
    assert m.compression is None and m.files[0].endswith(".tfrecord")
    with pytest.raises(ValueError, match="names its shards after the compression"):
        tfr.write_dataset(columns, tmp_path / "c", compression="auto", progress=False)
    with pytest.raises(ValueError, match='must be None, "gzip" or "zlib"'):
        tfr.write_dataset(columns, tmp_path / "d", compression="lz4", progress=False)
