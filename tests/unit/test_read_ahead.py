"""Batches read ahead on a thread of their own: the caller sees what reading in place
gives, counts only what it was handed, and a forked child is told, not left waiting.
While the caller is busy, the reading thread parses the batches it reads: the caller
gets the same batches, and the same errors in the same places."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr

N = 5000


@pytest.fixture
def shards(tmp_path: Path) -> list[str]:
    cols = {"i": np.arange(N), "name": [b"n" * (k % 50) for k in range(N)]}
    return tfr.write_dataset(cols, tmp_path / "d", num_shards=4, progress=False).files


def test_a_report_counts_what_was_handed_out_not_what_was_read_ahead(shards) -> None:
    report = tfr.ReadReport()
    batches = tfr.read_batches(shards, 100, report=report)
    for _ in range(3):
        next(batches)
    batches.close()
    assert report.records == 300
    report = tfr.ReadReport()
    assert sum(len(b) for b in tfr.read_batches(shards, 100, report=report)) == N
    assert report.records == N and len(report.files) == 4


def test_every_reader_gives_the_records_in_order(shards) -> None:
    records = list(tfr.read_records(shards))
    assert [r for b in tfr.read_batches(shards, 77) for r in b] == records
    schema = tfr.infer_schema(shards)
    ids = np.concatenate([b["i"] for b in tfr.read_examples(shards, schema, batch_size=333)])
    assert ids.tolist() == list(range(N))
    assert tfr.read_table(shards, batch_size=999)["i"].to_pylist() == list(range(N))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_is_told_to_open_the_files_again(shards) -> None:
    batches = tfr.read_batches(shards, 100)
    next(batches)
    pid = os.fork()
    if pid == 0:  # the child: its reader's thread stayed in the parent
        try:
            next(batches)
        except ValueError as err:
            os._exit(0 if "open the files again" in str(err) else 2)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert sum(len(b) for b in batches) == N - 100


def _composite(tmp_path: Path, n: int) -> tuple[list[str], tfr.Schema]:
    """Shards of bags of words and sentences, and a schema with sparse, ragged, bytes and
    padded features."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(n):
        k, lengths = int(rng.integers(1, 9)), rng.integers(1, 4, int(rng.integers(1, 4)))
        rows.append(
            {
                "i": i,
                "ids": rng.choice(50, k, replace=False),
                "weights": rng.random(k, dtype=np.float32),
                "tokens": rng.integers(0, 100, int(lengths.sum())),
                "lengths": lengths,
                "name": b"n" * (i % 7),
            }
        )
    paths = []
    for s in range(3):
        path = str(tmp_path / f"c-{s}.tfrecord")
        with tfr.RecordWriter(path) as w:
            w.write_many(tfr.encode_example(r) for r in rows[s::3])
        paths.append(path)
    schema = tfr.Schema(
        {
            "i": tfr.FixedLen([], "int64"),
            "bag": tfr.SparseFeature("ids", "weights", "float32", 50),
            "text": tfr.RaggedFeature(
                "int64", "tokens", partitions=[tfr.RaggedFeature.RowLengths("lengths")]
            ),
            "name": tfr.FixedLen([], "bytes"),
            "extra": tfr.VarLen("int64"),
        }
    )
    return paths, schema


def _slowly(batches):
    """Each batch, taken from ``batches`` by a caller that takes its time over each."""
    for batch in batches:
        time.sleep(0.003)
        yield batch


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, tfr.Sparse | tfr.Ragged):
            assert x == y and type(x) is type(y), key
        else:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_busy_caller_gets_the_batches_parsing_in_place_gives(tmp_path) -> None:
    paths, schema = _composite(tmp_path, 3000)
    want = [tfr.parse_examples(b, schema) for b in tfr.read_batches(paths, 64)]
    got = list(_slowly(tfr.read_examples(paths, schema, 64)))
    assert len(got) == len(want) > 40
    for a, b in zip(got, want, strict=True):
        _same(a, b)
    # The same batches for a caller as quick as the reading thread.
    for a, b in zip(tfr.read_examples(paths, schema, 64), want, strict=True):
        _same(a, b)


def test_an_error_parsed_ahead_comes_in_its_place_naming_its_record(tmp_path) -> None:
    paths, schema = _composite(tmp_path, 3000)
    records = list(tfr.read_records(paths[2]))
    records[700] = tfr.encode_example({"i": 1.5})
    with tfr.RecordWriter(paths[2]) as w:
        w.write_many(records)
    batches = _slowly(tfr.read_examples(paths, schema, 64))
    seen = []
    with pytest.raises(tfr.SchemaError) as info:
        for batch in batches:
            seen.extend(batch["i"].tolist())
    assert (info.value.path, info.value.record_index, info.value.key) == (paths[2], 700, "i")
    order = [i for s in range(3) for i in range(s, 3000, 3)]
    assert seen == order[: (2000 + 700) // 64 * 64], "every batch before the error's"
