"""tfr.Dataset: the tf.data vocabulary on native threads."""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import tfrecordkit as tfr


def test_from_files_reads_every_record_in_order(shards, helpers):
    paths = shards([5, 0, 7, 3])
    records = list(tfr.Dataset.from_files(paths))
    assert records == list(tfr.read_records(paths))
    assert helpers.ids_of(records) == list(range(15))


def test_list_files_yields_sorted_names_and_seeded_shuffles(shards):
    paths = shards([1, 1, 1, 1, 1])
    pattern = os.path.join(os.path.dirname(paths[0]), "part-*.tfrecord")
    assert list(tfr.Dataset.list_files(pattern)) == sorted(paths)
    a = list(tfr.Dataset.list_files(pattern, shuffle=True, seed=7))
    b = list(tfr.Dataset.list_files(pattern, shuffle=True, seed=7))
    assert a == b and sorted(a) == sorted(paths)
    orders = {tuple(tfr.Dataset.list_files(pattern, shuffle=True, seed=s)) for s in range(8)}
    assert len(orders) > 1


@pytest.mark.parametrize("cycle, block", [(1, 1), (2, 1), (3, 2), (4, 3), (8, 1)])
def test_interleave_follows_tf_data_order(shards, helpers, cycle, block):
    counts = [5, 1, 0, 9, 4, 6, 2]
    paths = shards(counts)
    ds = tfr.Dataset.list_files(paths).interleave(cycle_length=cycle, block_length=block)
    expected = helpers.reference_interleave(helpers.file_ranges(counts), cycle, block)
    assert helpers.ids_of(list(ds)) == expected


def test_nondeterministic_interleave_delivers_every_record_once(shards, helpers):
    counts = [300, 1, 700, 0, 250]
    paths = shards(counts)
    ds = tfr.Dataset.list_files(paths).interleave(cycle_length=3, deterministic=False)
    assert sorted(helpers.ids_of(list(ds))) == list(range(sum(counts)))


def test_parse_and_batch_match_parse_examples(shards, helpers):
    paths = shards([40, 37])
    records = list(tfr.read_records(paths))
    batches = list(tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).batch(16))
    assert [len(b["id"]) for b in batches] == [16, 16, 16, 16, 13]
    for i, batch in enumerate(batches):
        want = tfr.parse_examples(records[16 * i : 16 * (i + 1)], helpers.SCHEMA)
        np.testing.assert_array_equal(batch["id"], want["id"])
        np.testing.assert_array_equal(batch["x"], want["x"])
        assert batch["tokens"] == want["tokens"]
        assert list(batch["name"]) == list(want["name"])
    dropped = list(
        tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).batch(16, drop_remainder=True)
    )
    assert len(dropped) == 4


def test_unbatched_parse_yields_one_example_at_a_time(shards, helpers):
    paths = shards([6])
    examples = list(tfr.Dataset.from_files(paths).parse(helpers.SCHEMA))
    assert [int(e["id"]) for e in examples] == list(range(6))
    assert examples[3]["tokens"].tolist() == [0, 1, 2]
    assert examples[5]["x"].tolist() == [2.5, -5.0]
    assert examples[1]["name"] == b"r1"


def test_raw_batches_are_lists_of_records(shards):
    paths = shards([5])
    batches = list(tfr.Dataset.from_files(paths).batch(2))
    assert [len(b) for b in batches] == [2, 2, 1]
    assert all(b.dtype == object and isinstance(r, bytes) for b in batches for r in b)


def test_batches_of_large_records_end_at_max_bytes(tmp_path):
    # Records of 300 KB and 100 B: a batch ends at 16 records or once it holds 1 MB.
    path = tmp_path / "mixed.tfrecord"
    sizes = [100 if i % 3 == 0 else 300_000 for i in range(40)]
    with tfr.RecordWriter(path) as w:
        w.write_many(
            tfr.encode_example({"blob": bytes([i]) * n, "i": i}) for i, n in enumerate(sizes)
        )
    schema = {"blob": tfr.FixedLen([], "bytes"), "i": tfr.FixedLen([], "int64")}
    ds = tfr.Dataset.from_files(path).parse(schema).batch(16, max_bytes=1_000_000)
    batches = list(ds)
    assert [int(i) for b in batches for i in b["i"]] == list(range(40))
    for b in batches[:-1]:
        held = [sizes[int(i)] for i in b["i"]]
        assert sum(held) >= 1_000_000 and sum(held[:-1]) < 1_000_000
    assert ds.cardinality() == tfr.UNKNOWN_CARDINALITY
    assert [t.num_rows for t in ds.to_arrow()] == [len(b["i"]) for b in batches]
    raw = tfr.Dataset.from_files(path).batch(16, drop_remainder=True, max_bytes=1_000_000)
    assert [len(b) for b in raw] == [len(b["i"]) for b in batches[:-1]]
    with pytest.raises(TypeError, match="before a map"):
        tfr.Dataset.from_files(path).map(lambda r: r).batch(4, max_bytes=10)
    with pytest.raises(ValueError, match="max_bytes"):
        tfr.Dataset.from_files(path).batch(4, max_bytes=0)


def test_seeded_shuffle_repeats_across_runs_and_changes_across_epochs(shards, helpers):
    paths = shards([300, 200])

    def make():
        return tfr.Dataset.from_files(paths).shuffle(100, seed=3).parse(helpers.SCHEMA).batch(50)

    first = make()
    epoch0 = helpers.ids_of(list(first))
    epoch1 = helpers.ids_of(list(first))
    assert sorted(epoch0) == list(range(500)) and sorted(epoch1) == list(range(500))
    assert epoch0 != list(range(500))
    assert epoch0 != epoch1
    again = make()
    assert helpers.ids_of(list(again)) == epoch0
    assert helpers.ids_of(list(again)) == epoch1


def test_shuffle_buffer_bounds_how_far_records_move(shards, helpers):
    paths = shards([1000])
    ids = helpers.ids_of(list(tfr.Dataset.from_files(paths).shuffle(10, seed=1)))
    assert sorted(ids) == list(range(1000))
    # A record can leave the buffer no earlier than buffer_size - 1 places ahead.
    assert all(pos >= i - 9 for pos, i in enumerate(ids))
    assert helpers.ids_of(list(tfr.Dataset.from_files(paths).shuffle(1))) == list(range(1000))


def test_repeat_take_skip_shard(shards, helpers):
    paths = shards([4, 3])
    base = tfr.Dataset.from_files(paths)
    assert helpers.ids_of(list(base.repeat(3))) == list(range(7)) * 3
    assert helpers.ids_of(list(base.repeat().take(17))) == (list(range(7)) * 3)[:17]
    assert helpers.ids_of(list(base.skip(5))) == [5, 6]
    assert helpers.ids_of(list(base.take(0))) == []
    assert helpers.ids_of(list(base.shard(3, 1))) == [1, 4]
    assert helpers.ids_of(list(base.repeat(0))) == []
    files = tfr.Dataset.list_files(paths)
    assert list(files.shard(2, 1)) == [paths[1]]
    assert list(files.repeat(2)) == paths * 2
    assert helpers.ids_of(list(files.skip(1).interleave())) == [4, 5, 6]


def test_repeat_reshuffles_every_epoch(shards, helpers):
    paths = shards([50])
    ids = helpers.ids_of(list(tfr.Dataset.from_files(paths).shuffle(50, seed=9).repeat(2)))
    assert sorted(ids[:50]) == sorted(ids[50:]) == list(range(50))
    assert ids[:50] != ids[50:]


def test_repeat_of_an_empty_dataset_ends(shards):
    paths = shards([0])
    assert list(tfr.Dataset.from_files(paths).repeat()) == []
    assert list(tfr.Dataset.from_files(paths).map(lambda r: r).repeat()) == []


def test_memory_cache_replays_without_the_files(shards, helpers):
    paths = shards([30, 30])
    ds = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).cache().batch(25)
    first = helpers.ids_of(list(ds))
    for p in paths:
        os.remove(p)
    assert helpers.ids_of(list(ds)) == first == list(range(60))
    shuffled = (
        tfr.Dataset.from_files(shards([20], name="more")).cache().shuffle(20, seed=1).repeat(2)
    )
    ids = helpers.ids_of(list(shuffled))
    assert sorted(ids[:20]) == sorted(ids[20:]) and ids[:20] != ids[20:]


def test_file_cache_is_written_after_a_full_pass_only(shards, helpers, tmp_path):
    paths = shards([5000])
    cache = str(tmp_path / "cache.tfrecord")
    ds = tfr.Dataset.from_files(paths).cache(cache)
    it = iter(ds.batch(10))
    next(it)
    it.close()
    assert not os.path.exists(cache)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".cache")]
    assert helpers.ids_of(list(ds)) == list(range(5000))
    assert list(tfr.read_records(cache)) == list(tfr.read_records(paths))
    os.remove(paths[0])
    # A later pipeline (a later run) reads the cache file instead of the sources.
    again = tfr.Dataset.from_files([cache]).cache(cache)
    assert helpers.ids_of(list(again)) == list(range(5000))


def test_a_cache_file_at_a_url_is_refused_before_anything_runs(shards):
    ds = tfr.Dataset.from_files(shards([5]))
    for url in ("memory://bucket/cache.tfrecord", "s3://bucket/cache"):
        with pytest.raises(ValueError, match=f"a cache file is local, and {url} is a URL"):
            ds.cache(url)
    # A local path given as a file:// URL stays a local path.
    assert isinstance(ds.cache("file:///tmp/cache.tfrecord"), tfr.Dataset)


def test_map_and_filter(shards, helpers):
    paths = shards([20])
    ds = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA)
    ids = [int(x) for x in ds.map(lambda e: e["id"] * 10).filter(lambda v: v % 20 == 0)]
    assert ids == list(range(0, 200, 20))
    threaded = ds.map(lambda e: int(e["id"]) ** 2, num_parallel_calls=tfr.AUTOTUNE)
    assert list(threaded) == [i * i for i in range(20)]
    per_batch = ds.batch(8).map(lambda b: b["id"].sum())
    assert [int(s) for s in per_batch] == [28, 92, 70]


def test_batch_stacks_mapped_examples(shards, helpers):
    paths = shards([5])
    ds = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).map(lambda e: e).batch(3)
    first, second = list(ds)
    np.testing.assert_array_equal(first["id"], [0, 1, 2])
    assert first["x"].shape == (3, 2)
    assert first["tokens"].to_list() == [[], [0], [0, 1]]
    assert second["name"].tolist() == [b"r3", b"r4"]
    pairs = list(tfr.Dataset.from_files(paths).map(lambda r: (len(r), r)).batch(5))
    assert pairs[0][0].shape == (5,) and len(pairs[0][1]) == 5


def test_stages_after_map(shards, helpers):
    paths = shards([30])
    ds = tfr.Dataset.from_files(paths).map(lambda r: r)
    ids = helpers.ids_of(list(ds.shuffle(10, seed=2).prefetch(3).cache().repeat(2)))
    assert sorted(ids[:30]) == list(range(30)) and ids[:30] == ids[30:]
    assert helpers.ids_of(list(ds.skip(3).take(2))) == [3, 4]
    assert helpers.ids_of(list(ds.shard(10, 9))) == [9, 19, 29]
    parsed = list(ds.parse(helpers.SCHEMA).take(2))
    assert [int(e["id"]) for e in parsed] == [0, 1]


def test_a_cache_after_a_map_replays_without_calling_the_function_again(shards, helpers):
    paths = shards([25])
    calls = []

    def f(e):
        calls.append(int(e["id"]))
        return int(e["id"])

    ds = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).map(f).cache()
    assert list(ds.shuffle(8, seed=1).repeat(3).take(60))[:25] != list(range(25))
    assert sorted(calls) == list(range(25))
    # A pass left early keeps nothing: the next one calls the function again.
    early = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).map(f).cache()
    calls.clear()
    assert list(early.take(5)) == list(range(5))
    assert list(early) == list(range(25)) and list(early) == list(range(25))
    assert calls == list(range(5)) + list(range(25))


def test_stages_after_map_run_in_the_engine(shards, helpers):
    paths = shards([40])
    ds = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).map(lambda e: e)
    shuffled = ds.shuffle(16, seed=5).batch(7)
    batches = list(shuffled)
    assert [len(b["id"]) for b in batches] == [7, 7, 7, 7, 7, 5]
    ids = np.concatenate([b["id"] for b in batches]).tolist()
    assert sorted(ids) == list(range(40)) and ids != list(range(40))
    # A buffer of 16 never yields an element more than 15 places early.
    assert all(i <= place + 15 for place, i in enumerate(ids))
    assert batches[0]["id"].dtype == np.int64 and batches[0]["x"].dtype == np.float32
    again = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).map(lambda e: e)
    assert np.concatenate([b["id"] for b in again.shuffle(16, seed=5).batch(7)]).tolist() == ids
    twice = [int(e["id"]) for e in ds.shuffle(16, seed=5).repeat(2)]
    assert sorted(twice[40:]) == list(range(40)) and twice[:40] != twice[40:]
    kept = ds.filter(lambda e: e["id"] % 3 == 0).skip(1).shard(2, 1).take(3)
    assert [int(e["id"]) for e in kept] == [6, 12, 18]
    assert len(list(ds.batch(16, drop_remainder=True))) == 2


def test_prefetch_after_map_keeps_order_and_delivers_what_came_before_an_error(shards, helpers):
    paths = shards([600])
    ds = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).map(lambda e: int(e["id"]))
    assert list(ds.prefetch(3)) == list(range(600))
    assert list(ds.batch(7).prefetch(1).map(len)) == [7] * 85 + [5]

    def fail_at_500(i):
        if i == 500:
            raise RuntimeError("bad element")
        return i

    seen = []
    with pytest.raises(RuntimeError, match="bad element"):
        for x in ds.map(fail_at_500).prefetch(2):
            seen.append(x)
    assert seen == list(range(500))


def test_batch_after_map_stacks_scalars_by_numpy_rules(shards, helpers):
    paths = shards([4])
    ds = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA)
    mixed = ds.map(lambda e: np.int32(e["id"]) if e["id"] % 2 else e["id"]).batch(4)
    (out,) = list(mixed)
    assert out.dtype == np.int64 and out.tolist() == [0, 1, 2, 3]
    (floats,) = list(ds.map(lambda e: e["x"][0]).batch(4))
    assert floats.dtype == np.float32
    # Scalars and arrays together cannot be one array: a list of them, as before.
    (odd,) = list(ds.map(lambda e: e["x"] if e["id"] else e["id"]).batch(4))
    assert isinstance(odd, list) and len(odd) == 4


@pytest.mark.parametrize(
    ("f", "message"),
    [
        (lambda e: {"a": 1} if e["id"] == 0 else {"a": 2, "b": 3}, "element 1 is a dict of"),
        (lambda e: {"a": 1} if e["id"] % 2 == 0 else {"b": 2}, "element 1 is a dict of"),
        (lambda e: {"a": 1} if e["id"] == 0 else 5, "element 1 is an int, where element 0"),
        (
            lambda e: {"a": 1} if e["id"] == 0 else {"a": "s"},
            "element 1 (at ['a']) is a str, where",
        ),
        (lambda e: (b"x", 1) if e["id"] == 0 else (1, 1), "element 1 (at [0]) is an int"),
        (lambda e: (1, 2) if e["id"] == 0 else (1,), "element 1 is a tuple of 1"),
        (lambda e: np.ones(2) if e["id"] == 0 else np.array(["s"]), "element 1 is of dtype <U1"),
    ],
)
def test_batch_after_map_refuses_elements_of_another_structure(shards, helpers, f, message):
    # As tf.data refuses to batch them, rather than dropping keys or making text of numbers.
    ds = tfr.Dataset.from_files(shards([4])).parse(helpers.SCHEMA).map(f).batch(4)
    with pytest.raises(TypeError, match=re.escape(message)):
        list(ds)


def test_rows_of_columns():
    columns = {"a": np.arange(3), "b": np.array([b"x", b"y", b"z"], dtype=object)}
    rows = tfr._core.rows(columns, 2)
    assert rows == [{"a": 0, "b": b"x"}, {"a": 1, "b": b"y"}]
    assert type(rows[1]["a"]) is np.int64


def test_errors_in_map_reach_the_consumer(shards):
    paths = shards([5])

    def boom(r):
        raise RuntimeError("bad map")

    with pytest.raises(RuntimeError, match="bad map"):
        list(tfr.Dataset.from_files(paths).map(boom).prefetch(2))


def test_misuse_is_reported_clearly(shards, helpers):
    paths = shards([2])
    files = tfr.Dataset.list_files(paths)
    with pytest.raises(TypeError, match="interleave"):
        files.parse(helpers.SCHEMA)
    with pytest.raises(TypeError, match="holds records"):
        files.interleave().interleave()
    with pytest.raises(TypeError, match="parsed already"):
        files.interleave().parse(helpers.SCHEMA).parse(helpers.SCHEMA)
    # Each mistake is raised where the stage is added, not when the pipeline runs.
    with pytest.raises(TypeError, match="keeps records, not file names"):
        files.cache()
    with pytest.raises(TypeError, match="needs unbatched, unparsed records"):
        files.interleave().batch(4).parse(helpers.SCHEMA)
    with pytest.raises(TypeError, match="decoded already"):
        files.interleave().parse({"image": tfr.FixedLen([], "bytes")}).decode_image(
            "image", size=4
        ).decode_image("image", size=4)
    with pytest.raises(ValueError, match="batch_size"):
        files.interleave().batch(0)
    with pytest.raises(ValueError, match="buffer_size"):
        files.interleave().shuffle(-1)
    # A seed is 64 bits: a larger one is refused, not cut to its low bits.
    for seed in (-1, 2**64, True, 1.5):
        with pytest.raises(ValueError, match=r"seed must be an int from 0 to 2\*\*64 - 1"):
            files.interleave().shuffle(10, seed=seed)
    assert list(files.interleave().shuffle(10, seed=2**64 - 1)) != []
    with pytest.raises(ValueError, match="index"):
        files.shard(2, 2)
    # Sizes that would start threads or take memory up front without bound are refused,
    # as are counts past 64 bits.
    records = files.interleave()
    too_many = [
        (lambda: files.interleave(cycle_length=2**31), "cycle_length must be at most 1,024"),
        (lambda: files.interleave(num_parallel_calls=10_000), "num_parallel_calls must be at"),
        (lambda: records.map(len, num_parallel_calls=2**40), "num_parallel_calls must be at"),
        (lambda: records.prefetch(2**40), "buffer_size must be at most 65,536"),
        (lambda: records.shuffle(2**70), "buffer_size must be at most"),
        (lambda: records.batch(2**70), "batch_size must be at most"),
        (lambda: records.repeat(2**64), "count must be at most"),
    ]
    for make, says in too_many:
        with pytest.raises(ValueError, match=says):
            make()
    with pytest.raises(ValueError, match="on_error"):
        tfr.Dataset.from_files(paths, on_error="ignore")
    with pytest.raises(FileNotFoundError):
        tfr.Dataset.list_files(os.path.join(os.path.dirname(paths[0]), "nothing-*.tfrecord"))


def _damage(path: str, at: int) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0xFF]))


def test_damaged_record_raises_with_its_location(shards, helpers):
    paths = shards([10, 10])
    size = len(helpers.example(10)) + 16
    _damage(paths[1], size + 20)  # inside the data of the second record of file 1
    ds = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).batch(4)
    seen = []
    with pytest.raises(tfr.CorruptRecordError) as info:
        for batch in ds:
            seen.extend(batch["id"].tolist())
    assert info.value.path == paths[1]
    assert info.value.offset == size
    assert info.value.record_index == 1
    # Nothing read before the damage is lost.
    assert seen == list(range(11))


def test_skip_and_warn_go_past_damage(shards, helpers):
    paths = shards([10, 10])
    size = len(helpers.example(10)) + 16
    _damage(paths[1], size + 20)
    skipped = tfr.Dataset.from_files(paths, on_error="skip").parse(helpers.SCHEMA).batch(4)
    ids = helpers.ids_of(list(skipped))
    assert ids == [i for i in range(20) if i != 11]
    with pytest.warns(tfr.DataLossWarning, match="skipped"):
        list(tfr.Dataset.from_files(paths, on_error="warn"))
    errors = []
    list(tfr.Dataset.from_files(paths, on_error=errors.append).batch(3))
    assert len(errors) == 1 and errors[0].record_index == 1


def test_unparsable_example_is_located_and_skippable(tmp_path, helpers):
    path = str(tmp_path / "mixed.tfrecord")
    with tfr.RecordWriter(path) as w:
        for i in range(6):
            w.write(helpers.example(i) if i != 4 else tfr.encode_example({"id": [1, 2]}))
    ds = tfr.Dataset.from_files(path).parse(helpers.SCHEMA).batch(3)
    with pytest.raises(tfr.SchemaError) as info:
        list(ds)
    assert info.value.path == path and info.value.record_index == 4
    assert info.value.offset == sum(len(helpers.example(i)) + 16 for i in range(4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(tfr.Dataset.from_files(path, on_error="warn").parse(helpers.SCHEMA).batch(3))
    assert helpers.ids_of(batches) == [0, 1, 2, 3, 5]
    assert len(caught) == 1 and "record 4" in str(caught[0].message)


def test_missing_file_raises_file_not_found(shards):
    paths = shards([3, 3])
    ds = tfr.Dataset.from_files(paths)
    os.remove(paths[1])
    with pytest.raises(FileNotFoundError):
        list(ds)


def test_gzip_shards(shards, helpers):
    paths = shards([50, 60], compression="gzip")
    ds = tfr.Dataset.list_files(paths).interleave(cycle_length=2).parse(helpers.SCHEMA).batch(32)
    assert sorted(helpers.ids_of(list(ds))) == list(range(110))


def test_resume_equals_uninterrupted(shards, helpers):
    paths = shards([70, 50, 80])
    ds = (
        tfr.Dataset.list_files(paths, shuffle=True, seed=4)
        .interleave(cycle_length=2, block_length=3)
        .parse(helpers.SCHEMA)
        .shuffle(64, seed=5)
        .batch(16)
    )
    full = helpers.ids_of(list(ds.iterate(epoch=3)))
    it = ds.iterate(epoch=3)
    head = [next(it) for _ in range(5)]
    state = json.loads(json.dumps(it.state()))
    it.close()
    rest = list(ds.iterate(state=state))
    assert helpers.ids_of(head) + helpers.ids_of(rest) == full
    other = tfr.Dataset.from_files(paths).batch(16)
    with pytest.raises(ValueError, match="different pipeline"):
        other.iterate(state=state)
    # A state that is not one state() returned is refused, as is an epoch beside it.
    for bad in ({**state, "position": -1}, {**state, "position": 3.9}, {"epoch": 0}, "abc"):
        with pytest.raises(ValueError, match="state"):
            ds.iterate(state=bad)
    with pytest.raises(ValueError, match="give epoch or state, not both"):
        ds.iterate(epoch=1, state=state)
    unseeded = tfr.Dataset.from_files(paths).shuffle(10)
    with pytest.raises(ValueError, match="seed"):
        iter(unseeded).state()
    sloppy = tfr.Dataset.list_files(paths).interleave(deterministic=False)
    with pytest.raises(ValueError, match="deterministic"):
        iter(sloppy).state()


@pytest.mark.parametrize("deterministic", [True, False])
@pytest.mark.parametrize("consumers", [1, 2, 3, 5, 8])
def test_consumers_split_work_exactly_once(shards, helpers, consumers, deterministic):
    counts = [40, 0, 13, 27, 31, 9]
    paths = shards(counts)
    ds = (
        tfr.Dataset.list_files(paths, shuffle=True)
        .interleave(cycle_length=2, deterministic=deterministic)
        .parse(helpers.SCHEMA)
        .shuffle(32)
        .batch(7)
    )
    seen = collections.Counter()
    for index in range(consumers):
        seen.update(helpers.ids_of(list(ds.share(consumers, index).iterate(epoch=2))))
    assert seen == collections.Counter(range(sum(counts)))


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_abandoned_iteration_stops_its_threads(shards):
    paths = shards([5000, 5000, 5000])
    before = _threads()
    for deterministic in [True, False] * 10:
        ds = tfr.Dataset.list_files(paths).interleave(cycle_length=3, deterministic=deterministic)
        it = iter(ds.shuffle(1000).batch(10))
        next(it)
        assert _threads() > before
        it.close()
    deadline = time.monotonic() + 10
    while _threads() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _threads() == before


def test_repr_and_properties(shards, helpers):
    paths = shards([1])
    ds = tfr.Dataset.list_files(paths).interleave().parse(helpers.SCHEMA).batch(2)
    assert repr(ds) == "<Dataset of 1 files.interleave.parse.batch>"
    assert ds.files == paths
    assert ds.element_schema == helpers.SCHEMA


def test_to_jax_places_numeric_arrays_on_the_device(shards):
    # JAX's runtime is multithreaded and warns (and may deadlock) when a process that
    # started it forks, as the DataLoader tests do: it runs in a child process.
    paths = shards([7, 5])
    script = f"""
import jax, numpy as np, tfrecordkit as tfr
schema = {{"id": tfr.FixedLen([], "int64"), "x": tfr.FixedLen([2], "float32"),
          "tokens": tfr.VarLen("int64"), "name": tfr.FixedLen([], "bytes")}}
batches = list(tfr.Dataset.from_files({paths!r}).parse(schema).batch(4).to_jax())
assert len(batches) == 3
first = batches[0]
assert isinstance(first["id"], jax.Array) and isinstance(first["x"], jax.Array)
assert first["x"].dtype == jax.numpy.float32 and first["x"].shape == (4, 2)
assert np.asarray(first["id"]).tolist() == [0, 1, 2, 3]
# Bytes and ragged values stay as they are: JAX has no arrays of them.
assert isinstance(first["name"], np.ndarray) and first["name"].dtype == object
assert isinstance(first["tokens"], tfr.Ragged)
print(sum((np.asarray(b["id"]).tolist() for b in batches), []))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == str(list(range(12)))


def test_to_jax_refuses_int64_values_it_would_wrap_around(tmp_path):
    path = str(tmp_path / "big.tfrecord")
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"id": [5], "big": [3_000_000_000]}))
    script = f"""
import jax, numpy as np, tfrecordkit as tfr
ds = tfr.Dataset.from_files({path!r}).parse({{"id": tfr.FixedLen([], "int64")}})
(one,) = list(ds.to_jax())
assert isinstance(one["id"], jax.Array) and int(one["id"]) == 5
big = tfr.Dataset.from_files({path!r}).parse({{"big": tfr.FixedLen([], "int64")}})
try:
    list(big.to_jax())
except ValueError as e:
    print(e)
jax.config.update("jax_enable_x64", True)
print(int(next(iter(big.to_jax()))["big"]))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    said, kept = out.stdout.splitlines()[-2:]
    assert said.startswith("feature 'big' holds 64-bit integers beyond int32")
    assert kept == "3000000000"


def test_to_jax_gives_sparse_features_dense(tmp_path):
    path = str(tmp_path / "bags.tfrecord")
    with tfr.RecordWriter(path) as w:
        w.write_many(tfr.encode_example({"ids": [i % 4], "w": [float(i)]}) for i in range(4))
    script = f"""
import jax, numpy as np, tfrecordkit as tfr
schema = {{"bag": tfr.SparseFeature("ids", "w", "float32", 4)}}
(batch,) = tfr.Dataset.from_files({path!r}).parse(schema).batch(4).to_jax()
assert isinstance(batch["bag"], jax.Array)
print(np.asarray(batch["bag"]).tolist())
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(np.diag([0.0, 1.0, 2.0, 3.0]).tolist())


def test_skipped_damage_leaves_no_batch_short(tmp_path, helpers):
    """Unparsable records skipped under on_error: the batches around them stay full,
    ragged features included."""
    path = str(tmp_path / "mixed.tfrecord")
    bad = {1, 5, 6}
    with tfr.RecordWriter(path) as w:
        for i in range(13):
            w.write(b"\x0a\x03bad" if i in bad else helpers.example(i))
    ds = tfr.Dataset.from_files(path, on_error="skip").parse(helpers.SCHEMA)
    batches = list(ds.batch(4))
    assert [len(b["id"]) for b in batches] == [4, 4, 2]
    kept = [i for i in range(13) if i not in bad]
    assert helpers.ids_of(batches) == kept
    want = tfr.parse_examples([helpers.example(i) for i in kept], helpers.SCHEMA)
    tokens = [list(t) for b in batches for t in (b["tokens"][j] for j in range(len(b["id"])))]
    assert tokens == [list(want["tokens"][j]) for j in range(len(kept))]
    assert [len(b["id"]) for b in ds.batch(4, drop_remainder=True)] == [4, 4]


def test_skipped_damage_lets_the_tail_fill_the_last_batch(tmp_path, helpers):
    path = str(tmp_path / "head.tfrecord")
    with tfr.RecordWriter(path) as w:
        for i in range(13):
            w.write(b"\x0a\x03bad" if i == 0 else helpers.example(i))
    ds = tfr.Dataset.from_files(path, on_error="skip").parse(helpers.SCHEMA)
    batches = list(ds.batch(4, drop_remainder=True))
    assert helpers.ids_of(batches) == list(range(1, 13))


def test_stages_are_typed_objects():
    import pickle

    from tfrecordkit import _core

    ds = tfr.Dataset.from_files([]).shuffle(8, seed=3).skip(1).take(4).repeat(2).shard(3, 1)
    ops = ds._ops
    assert ops == (
        _core.Shuffle(8, 3),
        _core.Skip(1),
        _core.Take(4),
        _core.Repeat(2),
        _core.Shard(3, 1),
    )
    assert pickle.loads(pickle.dumps(ops)) == ops
    # A dataset pickles with its stages; its compiled plan is made again where it lands.
    again = pickle.loads(pickle.dumps(ds))
    assert again._ops == ops and again.cardinality() == ds.cardinality() == 0
    assert repr(ds) == "<Dataset of 0 files.shuffle.skip.take.repeat.shard>"
    with pytest.raises(ValueError, match="index must be in"):
        _core.Shard(2, 2)


def test_sparse_and_ragged_features_are_laid_out_by_the_engine(tmp_path):
    # A record whose sparse counts disagree fails where it was read: located, and skipped
    # on its own under on_error="skip", as a record that does not parse is.
    path = str(tmp_path / "composite.tfrecord")
    with tfr.RecordWriter(path) as w:
        for i in range(7):
            values = np.arange(i % 3, dtype=np.float32)
            index = np.arange(i % 3)[::-1] if i != 4 else np.arange(5)
            w.write(tfr.encode_example({"i": index, "v": values, "n": [i % 3]}))
    schema = {
        "s": tfr.SparseFeature("i", "v", "float32", 8),
        "r": tfr.RaggedFeature("float32", "v", [tfr.RaggedFeature.RowLengths("n")]),
    }
    with pytest.raises(tfr.SchemaError) as info:
        list(tfr.Dataset.from_files(path).parse(schema).batch(3))
    assert (info.value.path, info.value.record_index, info.value.key) == (path, 4, "s")
    ds = tfr.Dataset.from_files(path, on_error="skip").parse(schema).batch(3)
    batches = list(ds)
    assert [len(b["r"]) for b in batches] == [3, 3]
    dense = np.concatenate([b["s"].to_dense() for b in batches])
    kept = [i for i in range(7) if i != 4]
    for row, i in zip(dense, kept, strict=True):
        expected = np.zeros(8, np.float32)
        expected[np.arange(i % 3)[::-1]] = np.arange(i % 3, dtype=np.float32)
        assert row.tolist() == expected.tolist()
    assert [row for b in batches for row in b["r"].to_list()] == [
        [np.arange(i % 3, dtype=np.float32).tolist()] for i in kept
    ]


def _comparable(value):
    if isinstance(value, tfr.Sparse):
        return value.to_dense().tolist()
    if isinstance(value, tfr.Ragged):
        return value.to_list()
    return (value.dtype.str, value.shape, value.tolist())


@pytest.mark.parametrize("size", [1, 3, 16])
def test_batches_of_every_kind_of_feature_are_what_parse_examples_makes(tmp_path, size):
    path = str(tmp_path / "kinds.tfrecord")
    records = [
        tfr.encode_example(
            {
                "a": [i],
                "xy": [float(i), -float(i)],
                "tags": [b"t%d" % k for k in range(i % 3)],
                "i": np.arange(i % 3)[::-1],
                "v": np.arange(i % 3, dtype=np.float32),
                "n": [i % 3],
            }
        )
        for i in range(37)
    ]
    with tfr.RecordWriter(path) as w:
        w.write_many(records)
    schema = {
        "a": tfr.FixedLen([], "int64"),
        "xy": tfr.FixedLen([2], "float32"),
        "tags": tfr.VarLen("bytes"),
        "s": tfr.SparseFeature("i", "v", "float32", 8),
        "r": tfr.RaggedFeature("float32", "v", [tfr.RaggedFeature.RowLengths("n")]),
    }
    batches = list(tfr.Dataset.from_files(path).parse(schema).batch(size))
    assert len(batches) == -(-37 // size)
    for k, batch in enumerate(batches):
        want = tfr.parse_examples(records[k * size : (k + 1) * size], schema)
        assert list(batch) == list(want)
        for key in want:
            assert _comparable(batch[key]) == _comparable(want[key]), (k, key)


@pytest.mark.parametrize("calls", [None, 1, 2, tfr.AUTOTUNE, 64])
def test_interleave_num_parallel_calls_changes_no_order(tmp_path, calls):
    paths = []
    for f in range(5):
        path = tmp_path / f"f{f}.tfrecord"
        with tfr.RecordWriter(path) as w:
            w.write_many(f"{f}-{i}".encode() for i in range(300 + 40 * f))
        paths.append(str(path))
    base = tfr.Dataset.list_files(paths).interleave(cycle_length=3, block_length=7)
    ds = tfr.Dataset.list_files(paths).interleave(
        cycle_length=3, block_length=7, num_parallel_calls=calls
    )
    assert list(ds) == list(base)


def test_interleave_refuses_a_bad_num_parallel_calls(tmp_path):
    path = tmp_path / "one.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(b"r")
    with pytest.raises(ValueError, match="num_parallel_calls"):
        tfr.Dataset.list_files(str(path)).interleave(num_parallel_calls=0)


def _numbers(tmp_path, n):
    path = tmp_path / f"numbers{n}.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write_many(str(i).encode() for i in range(n))
    return tfr.Dataset.list_files(str(path)).interleave()


def test_a_parallel_map_runs_on_engine_threads_and_keeps_the_order(tmp_path):
    seen_threads = set()

    def f(x):
        seen_threads.add(threading.get_ident())
        return int(x) * 2

    ds = _numbers(tmp_path, 5000).map(f, num_parallel_calls=2)
    assert list(ds) == [x * 2 for x in range(5000)]
    assert threading.get_ident() not in seen_threads
    assert list(_numbers(tmp_path, 0).map(f, num_parallel_calls=2)) == []

    def fails(x):
        if int(x) == 777:
            raise KeyError(x)
        return x

    it = iter(_numbers(tmp_path, 2000).map(fails, num_parallel_calls=2))
    got = [next(it) for _ in range(777)]
    assert got == [str(i).encode() for i in range(777)]
    with pytest.raises(KeyError):
        next(it)


@pytest.mark.parametrize("stages", ["map(slow, num_parallel_calls=2)", "map(slow).prefetch(2)"])
def test_ctrl_c_ends_the_wait_for_a_map_on_engine_threads(tmp_path, stages):
    # The function runs on an engine thread for a minute; the consumer waiting for it
    # on the main thread raises KeyboardInterrupt at Ctrl-C, not when the function ends.
    path = tmp_path / "numbers.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write_many([b"1", b"2", b"3"])
    code = f"""
import os, signal, threading, time
import tfrecordkit as tfr

def slow(x):
    time.sleep(60)
    return x

ds = tfr.Dataset.from_files([{str(path)!r}]).{stages}
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
started = time.monotonic()
try:
    list(ds)
except KeyboardInterrupt:
    print(round(time.monotonic() - started, 1), flush=True)
    os._exit(0)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=50)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 30


def test_an_autotuned_map_runs_cheap_functions_serially_and_slow_ones_on_threads(tmp_path):
    caller = threading.get_ident()

    def run(fn, n):
        seen = set()

        def traced(x):
            seen.add(threading.get_ident())
            return fn(x)

        out = list(_numbers(tmp_path, n).map(traced, num_parallel_calls=tfr.AUTOTUNE))
        assert out == [fn(str(i).encode()) for i in range(n)]
        return seen

    assert run(lambda x: x + b"!", 50_000) == {caller}

    def sleepy(x):  # releases the GIL, as NumPy and I/O do
        time.sleep(0.0005)
        return -int(x)

    assert run(sleepy, 600) - {caller}
    assert run(sleepy, 0) == set()


def test_a_pipeline_with_threads_left_unfinished_lets_the_interpreter_exit(tmp_path):
    """A map on threads and a prefetch, dropped halfway or left running at exit."""
    path = tmp_path / "many.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write_many(b"x" * 10 for _ in range(10_000))
    code = f"""
import time, tfrecordkit as tfr
def slow(x):
    time.sleep(0.0002)
    return x
ds = tfr.Dataset.list_files({str(path)!r}).interleave().repeat()
ds = ds.map(slow, num_parallel_calls=2).prefetch(8)
it = iter(ds)
for _ in range(500):
    next(it)
del it
kept = iter(ds.map(len, num_parallel_calls=tfr.AUTOTUNE).prefetch(2))
next(kept)
print("done")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
