"""One large file shared by several Spark partitions or Ray read tasks, through the record
offsets of its index sidecar."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr

N = 20_000


@pytest.fixture(scope="module")
def one_file(tmp_path_factory) -> str:
    """One indexed shard of ``N`` rows, about 1.2 MB."""
    prefix = tmp_path_factory.mktemp("large") / "train"
    cols = {"i": np.arange(N), "blob": [b"b" * (k % 100) for k in range(N)]}
    (path,) = tfr.write_dataset(cols, prefix, num_shards=1, progress=False).files
    return path


def test_spark_splits_one_file_among_partitions(spark, one_file: str) -> None:
    tfr.spark.register(spark)
    size = os.path.getsize(one_file)
    df = spark.read.format("tfrecord").option("partitionBytes", size // 4 + 1).load(one_file)
    assert df.rdd.getNumPartitions() == 4
    ids = [r["i"] for r in df.select("i").collect()]
    assert sorted(ids) == list(range(N))
    # Every partition holds rows: the split follows the records, not only the bytes.
    counts = df.rdd.mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect()
    assert len(counts) == 4 and all(c > N // 8 for c in counts)
    whole = spark.read.format("tfrecord").load(one_file)
    assert whole.rdd.getNumPartitions() == 1
    assert whole.selectExpr("sum(length(blob))").first()[0] == sum(k % 100 for k in range(N))


def test_spark_keeps_unindexed_and_compressed_files_whole(spark, tmp_path: Path) -> None:
    tfr.spark.register(spark)
    cols = {"i": np.arange(N)}
    gz = tfr.write_dataset(cols, tmp_path / "gz", num_shards=1, compression="gzip").files[0]
    bare = tfr.write_dataset(cols, tmp_path / "bare", num_shards=1).files[0]
    Path(bare + ".idx").unlink()
    for path in (gz, bare):
        df = spark.read.format("tfrecord").option("partitionBytes", 1000).load(path)
        assert df.rdd.getNumPartitions() == 1
        assert df.count() == N


@pytest.mark.usefixtures("ray_cluster")
def test_ray_splits_one_file_among_read_tasks(one_file: str, monkeypatch) -> None:
    from tfrecordkit.integrations import ray as tfr_ray

    monkeypatch.setattr(tfr_ray, "MIN_TASK_BYTES", 1)
    ds = tfr.ray.read(one_file, override_num_blocks=3).materialize()
    assert ds.num_blocks() == 3
    assert sorted(r["i"] for r in ds.take_all()) == list(range(N))
