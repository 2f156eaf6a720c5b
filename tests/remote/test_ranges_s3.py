"""Byte ranges of objects on an S3 server: each range read from its own offset, by ranged
requests, through the index sidecar beside the object."""

from __future__ import annotations

import numpy as np
import tfrecordkit as tfr

N = 5000


def test_ranges_of_an_object_read_every_record_once(s3) -> None:
    url = f"s3://{s3.bucket()}/data/train"
    cols = {"i": np.arange(N), "name": [f"n{k}" * (k % 9) for k in range(N)]}
    (obj,) = tfr.write_dataset(
        cols, url, num_shards=1, progress=False, storage_options=s3.options
    ).files
    parts = tfr.byte_ranges(obj, target_bytes=20_000, storage_options=s3.options)
    assert len(parts) > 4 and all(isinstance(p, tfr.ByteRange) for p in parts)
    tables = [tfr.read_table(p, storage_options=s3.options) for p in parts]
    assert all(t.num_rows for t in tables)
    ids = np.concatenate([t["i"].to_numpy() for t in tables])
    assert ids.tolist() == list(range(N))
    records = [r for p in parts for r in tfr.read_records(p, storage_options=s3.options)]
    assert records == list(tfr.read_records(obj, storage_options=s3.options))
