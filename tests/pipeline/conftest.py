"""Shared fixtures for the input-pipeline tests: shards of Examples with unique ids."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr

SCHEMA = tfr.Schema(
    {
        "id": tfr.FixedLen([], "int64"),
        "x": tfr.FixedLen([2], "float32"),
        "tokens": tfr.VarLen("int64"),
        "name": tfr.FixedLen([], "bytes"),
    }
)


def example(i: int) -> bytes:
    return tfr.encode_example(
        {"id": i, "x": [i * 0.5, -i], "tokens": list(range(i % 4)), "name": f"r{i}"}
    )


@pytest.fixture
def shards(tmp_path: Path) -> Callable[..., list[str]]:
    """``shards([n0, n1, ...])`` writes one file per count; ids run on across files."""

    def make(
        counts: Sequence[int], name: str = "part", compression: str | None = None
    ) -> list[str]:
        paths, next_id = [], 0
        suffix = ".tfrecord.gz" if compression == "gzip" else ".tfrecord"
        for f, n in enumerate(counts):
            path = str(tmp_path / f"{name}-{f:03d}{suffix}")
            with tfr.RecordWriter(path, compression) as w:
                for i in range(next_id, next_id + n):
                    w.write(example(i))
            next_id += n
            paths.append(path)
        return paths

    return make


def ids_of(elements: Sequence[object]) -> list[int]:
    """The ids of records, parsed Examples, or batches of either, in order."""
    out: list[int] = []
    for e in elements:
        if isinstance(e, bytes):
            out.append(int(tfr.parse_example(e, SCHEMA)["id"]))
        elif isinstance(e, list) or (isinstance(e, np.ndarray) and e.dtype == object):
            out.extend(ids_of(list(e)))
        else:
            out.extend(np.atleast_1d(e["id"]).tolist())  # type: ignore[index]
    return out


def file_ranges(counts: Sequence[int]) -> list[list[int]]:
    starts = np.cumsum([0, *counts])
    return [list(range(starts[i], starts[i + 1])) for i in range(len(counts))]


def reference_interleave(files: list[list[int]], cycle: int, block: int) -> list[int]:
    """tf.data's documented interleave order, written out from its definition."""
    slots: list[list[int] | None] = [None] * cycle
    pending = list(files)
    out: list[int] = []
    index, taken, end_of_input = 0, 0, False
    while not end_of_input or any(s is not None for s in slots):
        slot = slots[index]
        if slot is not None:
            if slot:
                out.append(slot.pop(0))
                taken += 1
                if taken == block:
                    index, taken = (index + 1) % cycle, 0
                continue
            slots[index] = None
            index, taken = (index + 1) % cycle, 0
        elif pending:
            slots[index] = list(pending.pop(0))
        else:
            end_of_input = True
            index, taken = (index + 1) % cycle, 0
    return out


@pytest.fixture
def helpers():  # type: ignore[no-untyped-def]
    from types import SimpleNamespace

    return SimpleNamespace(
        SCHEMA=SCHEMA,
        example=example,
        ids_of=ids_of,
        file_ranges=file_ranges,
        reference_interleave=reference_interleave,
    )
