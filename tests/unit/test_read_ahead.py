"""Batches read ahead on a thread of their own: the caller sees what reading in place
gives, counts only what it was handed, and a forked child is told, not left waiting."""

from __future__ import annotations

import os
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
