"""Spark reads and writes TFRecords on ``s3://`` (moto's S3 server on loopback), the
credentials and endpoint passed as an option that reaches every executor."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tfrecordkit as tfr


def test_spark_reads_and_writes_s3(spark, s3) -> None:
    bucket = s3.bucket()
    n = 2000
    cols = {"i": np.arange(n), "w": np.arange(n, dtype=np.float32)}
    url = f"s3://{bucket}/data/train"
    tfr.write_dataset(cols, url, num_shards=2, progress=False, storage_options=s3.options)
    so = json.dumps(s3.options)

    df = spark.read.format("tfrecord").option("storage_options", so).load(url + "-*")
    assert df.count() == n
    out = f"s3://{bucket}/out/train"
    df.repartition(3).write.format("tfrecord").option("storage_options", so).save(out)
    manifest = tfr.Manifest.load(out, storage_options=s3.options)
    assert manifest.records == n and len(manifest.files) == 3
    back = tfr.read_table(manifest.files, storage_options=s3.options)
    assert sorted(back.column("i").to_pylist()) == list(range(n))
    left = [p for p in s3.fs().ls(f"{bucket}/out") if ".part-" in p or p.endswith(".writing")]
    assert left == []
    with pytest.raises(FileExistsError):
        df.write.format("tfrecord").option("storage_options", so).save(out)
    with pytest.raises(FileExistsError):  # options() as well as option() reach the check
        df.write.format("tfrecord").options(storage_options=so).save(out)


def test_spark_partitioned_write_and_discovery_on_s3(spark, s3) -> None:
    bucket = s3.bucket()
    so = json.dumps(s3.options)
    rows = [(i, ["en", "fr", None][i % 3]) for i in range(300)]
    df = spark.createDataFrame(rows, "i long, lang string").repartition(2)
    root = f"s3://{bucket}/out/by-lang"
    df.write.format("tfrecord").option("storage_options", so).partitionBy("lang").save(root)
    listed = sorted(p.rsplit("/", 1)[-1] for p in s3.fs().ls(f"{bucket}/out/by-lang"))
    assert listed == ["lang=__HIVE_DEFAULT_PARTITION__", "lang=en", "lang=fr"]
    en = tfr.Manifest.load(root + "/lang=en/part", storage_options=s3.options)
    assert sorted(tfr.read_table(en.files, storage_options=s3.options)["i"].to_pylist()) == list(
        range(0, 300, 3)
    )
    assert not [p for p in s3.fs().find(f"{bucket}/out") if "/." in p or ".part-" in p]
    back = spark.read.format("tfrecord").option("storage_options", so).load(root)
    assert sorted((r.i, r.lang) for r in back.collect()) == sorted(rows)
    with pytest.raises(FileExistsError):
        df.write.format("tfrecord").option("storage_options", so).partitionBy("lang").save(root)
