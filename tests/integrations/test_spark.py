"""``spark.read.format("tfrecord")`` and ``df.write.format("tfrecord")`` on a real Spark:
local[2], and a standalone cluster of a master and two workers on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr

N = 3000


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    cols = {
        "i": np.arange(N),
        "x": (np.arange(N) / 2).astype(np.float32),
        "name": [f"n{k}" for k in range(N)],
        "tags": [np.arange(k % 4) for k in range(N)],
    }
    tfr.write_dataset(cols, tmp_path / "data" / "train", num_shards=3, progress=False)
    return tmp_path / "data"


def _sorted(df, key: str = "i") -> list:
    return sorted(df.collect(), key=lambda r: r[key])


def test_read_maps_types_as_spark_tfrecord_does(spark, dataset: Path) -> None:
    df = spark.read.format("tfrecord").load(str(dataset / "train-*.tfrecord"))
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types == {"i": "bigint", "x": "float", "name": "binary", "tags": "array<bigint>"}
    # As in Spark's other sources, columns are nullable: null where an Example lacks them.
    assert all(f.nullable for f in df.schema.fields)
    assert df.rdd.getNumPartitions() == 1  # small shards share a partition
    apart = spark.read.format("tfrecord").option("partitionBytes", 1).load(str(dataset))
    assert apart.rdd.getNumPartitions() == 3 and apart.count() == N
    rows = _sorted(df)
    assert [r.i for r in rows] == list(range(N))
    assert [r.x for r in rows[:3]] == [0.0, 0.5, 1.0]
    assert bytes(rows[7].name) == b"n7"
    assert rows[0].tags == [] and rows[3].tags == [0, 1, 2]  # an empty VarLen is [], not null
    assert df.agg({"i": "sum"}).collect()[0][0] == N * (N - 1) // 2

    # A directory of shards (sidecars left out) and a list of paths.
    assert spark.read.format("tfrecord").load(str(dataset)).count() == N
    two = [str(p) for p in sorted(dataset.glob("*.tfrecord"))[:2]]
    assert spark.read.format("tfrecord").load(two).count() == 2000

    text = spark.read.format("tfrecord").option("strings", "name").load(str(dataset))
    assert dict((f.name, f.dataType.simpleString()) for f in text.schema.fields)["name"] == "string"
    assert _sorted(text)[9].name == "n9"


def test_schema_as_spark_ddl_or_tfrecordkit_json(spark, dataset: Path) -> None:
    ddl = spark.read.format("tfrecord").schema("i bigint, name string").load(str(dataset))
    assert [f.name for f in ddl.schema.fields] == ["i", "name"]
    assert _sorted(ddl)[1].asDict() == {"i": 1, "name": "n1"}

    schema = tfr.Schema({"i": tfr.FixedLen([], "int64"), "tags": tfr.VarLen("int64")})
    df = spark.read.format("tfrecord").option("schema", schema.to_json()).load(str(dataset))
    assert [f.name for f in df.schema.fields] == ["i", "tags"]
    assert _sorted(df)[2].tags == [0, 1]
    # Read as TensorFlow reads it: a FixedLen is required, a VarLen empty where missing.
    assert not any(f.nullable for f in df.schema.fields)

    # As in Spark's other sources, a column no Example has is null.
    absent = spark.read.format("tfrecord").schema("i bigint, nope bigint").load(str(dataset))
    assert {r.nope for r in absent.collect()} == {None} and absent.count() == N
    wrong = spark.read.format("tfrecord").schema("x bigint").load(str(dataset))
    with pytest.raises(Exception, match="SchemaError: column 'x': the schema gives int64"):
        wrong.collect()
    # A scalar type reads a feature of at most one value; one Example holding more is an
    # error naming the feature and the record.
    several = spark.read.format("tfrecord").schema("i bigint, tags bigint").load(str(dataset))
    where = r"record 2, offset \d+\)"
    with pytest.raises(Exception, match=r'feature "tags" \(int64\) has 2 values; .*' + where):
        several.collect()
    # No columns: the batches still hold the rows (PySpark itself drops the rows of
    # batches without columns on their way to the JVM).
    from tfrecordkit.integrations.spark import TFRecordDataSource

    source = TFRecordDataSource({"path": str(dataset), "schema": "{}"})
    reader = source.reader(source.schema())
    assert sum(b.num_rows for part in reader.partitions() for b in reader.read(part)) == N


def test_nullable_columns_round_trip(spark, tmp_path: Path) -> None:
    from pyspark.sql import types as T

    schema = T.StructType(
        [
            T.StructField("id", T.LongType()),
            T.StructField("age", T.LongType()),
            T.StructField("score", T.FloatType()),
            T.StructField("name", T.StringType()),
            T.StructField("tags", T.ArrayType(T.LongType())),
        ]
    )

    def row(k: int) -> tuple:
        age = None if k % 3 else k
        score = None if k % 5 == 1 else k / 2
        tags = None if k % 7 == 3 else [k] * (k % 3)  # null, empty and full arrays
        return (k, age, score, None if k % 4 else f"n{k}", tags)

    rows = [row(k) for k in range(50)]
    spark.createDataFrame(rows, schema).write.format("tfrecord").save(str(tmp_path / "t/part"))
    back = spark.read.format("tfrecord").option("strings", "name").load(str(tmp_path / "t"))
    types = {f.name: f.dataType.simpleString() for f in back.schema.fields}
    assert all(f.nullable for f in back.schema.fields)
    assert types == {
        "id": "bigint",
        "age": "bigint",
        "score": "float",
        "name": "string",
        "tags": "array<bigint>",
    }
    assert [tuple(r) for r in _sorted(back, "id")] == rows


def test_given_schema_reads_features_the_sample_never_saw(spark, tmp_path: Path) -> None:
    path = tmp_path / "late.tfrecord"
    with tfr.RecordWriter(str(path)) as w:
        for k in range(1500):
            late = {"late": k, "words": [b"a", b"b"][: k % 3]} if k >= 1200 else {}
            w.write(tfr.encode_example({"i": k, **late}))
    inferred = spark.read.format("tfrecord").load(str(path))
    assert [f.name for f in inferred.schema.fields] == ["i"]
    given = "i bigint, late int, words array<string>"
    df = spark.read.format("tfrecord").schema(given).load(str(path))
    got = _sorted(df)
    assert [r.late for r in got[1198:1202]] == [None, None, 1200, 1201]
    # An array column is a VarLen feature: null where an Example lacks it, as Spark writes
    # a null array, and empty where its list is empty; empty where missing if NOT NULL.
    assert [r.words for r in got[1199:1203]] == [None, [], ["a"], ["a", "b"]]
    not_null = spark.read.format("tfrecord").schema("i bigint, words array<string> not null")
    assert [r.words for r in _sorted(not_null.load(str(path)))[1199:1201]] == [[], []]
    with pytest.raises(Exception, match="a TFRecord feature holds int64, float32 or bytes"):
        spark.read.format("tfrecord").schema("i bigint, d date").load(str(path)).collect()
    # A feature in every sampled Example is still null in an Example past the sample
    # that lacks it; a NOT NULL column makes that an error naming the record, with how
    # to read nulls instead.
    sparse = tmp_path / "sparse.tfrecord"
    with tfr.RecordWriter(str(sparse)) as w:
        w.write_many(tfr.encode_example({"i": k} if k != 1300 else {}) for k in range(1500))
    inferred = spark.read.format("tfrecord").load(str(sparse))
    assert [(f.name, f.dataType.simpleString()) for f in inferred.schema.fields] == [
        ("i", "bigint")
    ]
    assert [r.i for r in inferred.collect()][1299:1302] == [1299, None, 1301]
    strict = spark.read.format("tfrecord").schema("i bigint not null").load(str(sparse))
    with pytest.raises(Exception, match=r"record 1300, offset \d+\)") as info:
        strict.collect()
    assert 'its column is NOT NULL: give .schema("i ...") with the column nullable' in str(
        info.value
    )
    # NOT NULL reads the feature as required: the first Example without it is an error.
    required = spark.read.format("tfrecord").schema("i bigint, late bigint not null")
    with pytest.raises(Exception, match=r'"late" \(int64\) is required .*record 0, offset 0\)'):
        required.load(str(path)).collect()


def test_sequence_examples_and_raw_records(spark, tmp_path: Path) -> None:
    path = tmp_path / "clips.tfrecord"
    with tfr.RecordWriter(str(path)) as w:
        for k in range(20):
            frames = [np.float32([k, s]) for s in range(k % 3)]
            w.write(tfr.encode_sequence_example({"clip": np.int64([k])}, {"frames": frames}))
    df = spark.read.format("tfrecord").option("recordType", "SequenceExample").load(str(path))
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types == {"clip": "bigint", "frames": "array<array<float>>"}
    rows = _sorted(df, "clip")
    assert rows[2].frames == [[2.0, 0.0], [2.0, 1.0]] and rows[3].frames == []

    raw = spark.read.format("tfrecord").option("recordType", "ByteArray").load(str(path))
    assert [f.name for f in raw.schema.fields] == ["byteArray"]
    assert sorted(bytes(r.byteArray) for r in raw.collect()) == sorted(tfr.read_records(path))


def test_batches_handed_to_spark_are_bounded_in_rows_and_bytes(spark, tmp_path: Path) -> None:
    from tfrecordkit.integrations.spark import TFRecordDataSource

    path = tmp_path / "images.tfrecord"
    with tfr.RecordWriter(str(path)) as w:
        for i in range(30):
            w.write(tfr.encode_example({"i": i, "img": bytes([i]) * 100_000}))

    def batches(**options: str) -> list[int]:
        source = TFRecordDataSource({"path": str(path), **options})
        reader = source.reader(source.schema())
        return [b.num_rows for part in reader.partitions() for b in reader.read(part)]

    assert batches() == [30]
    # A batch ends once its records hold batchBytes: three records of 100 KB each.
    assert batches(batchBytes="250KB") == [3] * 10
    assert batches(batchSize="4") == [4] * 7 + [2]
    assert batches(recordType="ByteArray", batchBytes="250KB") == [3] * 10
    with pytest.raises(ValueError, match="as a size"):
        batches(batchBytes="lots")
    df = spark.read.format("tfrecord").option("batchBytes", "250KB").load(str(path))
    rows = _sorted(df)
    assert [r.i for r in rows] == list(range(30)) and bytes(rows[7].img) == bytes([7]) * 100_000


def test_write_commits_a_dataset_tensorflow_reads(spark, dataset: Path, tmp_path: Path) -> None:
    import tensorflow as tf

    df = spark.read.format("tfrecord").load(str(dataset)).repartition(4)
    out = tmp_path / "out" / "train"
    df.write.format("tfrecord").save(str(out))
    manifest = tfr.Manifest.load(str(out))
    assert manifest.records == N and len(manifest.files) == 4
    assert all(f.endswith("-of-00004.tfrecord") for f in manifest.files)
    assert all(os.path.exists(f + ".idx") for f in manifest.files)
    leftovers = [p.name for p in out.parent.iterdir() if ".part-" in p.name]
    assert leftovers == []

    spec = {
        "i": tf.io.FixedLenFeature([], tf.int64),
        "x": tf.io.FixedLenFeature([], tf.float32),
        "name": tf.io.FixedLenFeature([], tf.string),
        "tags": tf.io.VarLenFeature(tf.int64),
    }
    seen = {}
    for record in tf.data.TFRecordDataset(manifest.files):
        ex = tf.io.parse_single_example(record, spec)
        seen[int(ex["i"])] = (float(ex["x"]), ex["name"].numpy(), ex["tags"].values.numpy())
    assert sorted(seen) == list(range(N))
    assert seen[6][0] == 3.0 and seen[6][1] == b"n6" and seen[6][2].tolist() == [0, 1]
    table = tfr.read_table(manifest.files)
    assert sorted(table.column("i").to_pylist()) == list(range(N))

    gz = tmp_path / "gz" / "train"
    df.write.format("tfrecord").option("compression", "gzip").save(str(gz))
    assert tfr.Manifest.load(str(gz)).files[0].endswith(".tfrecord.gz")
    back = spark.read.format("tfrecord").load(str(gz.parent / "*.tfrecord.gz"))
    assert back.count() == N


def test_save_modes(spark, dataset: Path, tmp_path: Path) -> None:
    df = spark.read.format("tfrecord").load(str(dataset))
    out = str(tmp_path / "out" / "train")
    df.write.format("tfrecord").save(out)
    with pytest.raises(FileExistsError, match="a dataset already exists at"):
        df.write.format("tfrecord").save(out)
    with pytest.raises(FileExistsError):
        df.write.mode("errorifexists").format("tfrecord").save(out)
    df.limit(5).write.format("tfrecord").mode("ignore").save(out)
    assert tfr.Manifest.load(out).records == N
    df.limit(5).write.format("tfrecord").mode("overwrite").save(out)
    assert tfr.Manifest.load(out).records == 5
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "train-00000-of-00001.tfrecord",
        "train-00000-of-00001.tfrecord.idx",
        "train.manifest.json",
    ]
    with pytest.raises(ValueError, match="save mode 'append' is not supported"):
        df.write.format("tfrecord").mode("append").save(out)
    # Other formats keep their own modes.
    parquet = str(tmp_path / "p")
    df.write.parquet(parquet)
    with pytest.raises(Exception, match="already exists"):
        df.write.parquet(parquet)


def test_a_failed_write_commits_nothing_and_leaves_nothing(
    spark, dataset: Path, tmp_path: Path
) -> None:
    def fail_in_one_partition(batches):  # defined here, so that Spark pickles it whole
        for batch in batches:
            if 1500 in batch.column("i").to_pylist():
                raise RuntimeError("a task fails")
            yield batch

    df = spark.read.format("tfrecord").load(str(dataset))
    out = tmp_path / "out" / "train"
    failing = df.mapInArrow(fail_in_one_partition, df.schema)
    with pytest.raises(Exception, match="a task fails"):
        failing.write.format("tfrecord").save(str(out))
    assert not (tmp_path / "out").exists()  # nor the directory it made
    df.write.format("tfrecord").save(str(out))  # the same write again succeeds
    assert tfr.Manifest.load(str(out)).records == N


def test_damage_is_an_error_naming_the_file(spark, dataset: Path, tmp_path: Path) -> None:
    shard = sorted(dataset.glob("*.tfrecord"))[1]
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # in record 500, past the ones the schema is read from
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(raw))
    schema = tfr.infer_schema(str(shard)).to_json()
    df = spark.read.format("tfrecord").option("schema", schema).load(str(bad))
    with pytest.raises(Exception, match="CorruptRecordError") as err:
        df.count()
    assert f"({bad}, record 500, offset" in str(err.value)
    skipped = df.sparkSession.read.format("tfrecord").option("schema", schema)
    skipped = skipped.option("onError", "skip")
    assert skipped.load(str(bad)).count() == 500  # the rest of the file is given up
    assert skipped.option("resync", "true").load(str(bad)).count() == 999


def test_skipping_damage_covers_the_schema_s_inference_and_raw_records(
    spark, dataset: Path, tmp_path: Path
) -> None:
    shard = sorted(dataset.glob("*.tfrecord"))[1]
    raw = bytearray(shard.read_bytes())
    raw[40] ^= 0xFF  # in record 0, which the inferred schema is read from
    (tmp_path / "bad.tfrecord").write_bytes(bytes(raw))
    reader = spark.read.format("tfrecord").option("onError", "skip").option("resync", "True")
    assert reader.load(str(tmp_path)).count() == 999
    raw_records = reader.option("recordType", "ByteArray").load(str(tmp_path))
    assert raw_records.count() == 999
    with pytest.raises(ValueError, match="option resync must be true or false, not 'yes'"):
        spark.read.format("tfrecord").option("resync", "yes").load(str(tmp_path))


def test_errors_are_the_data_source_s_own_in_one_line(spark, dataset: Path, tmp_path) -> None:
    read = spark.read.format("tfrecord")
    with pytest.raises(FileNotFoundError, match="no such file") as missing:
        read.load(str(tmp_path / "missing.tfrecord"))
    with pytest.raises(ValueError, match="option batchSize must be a whole number") as bad:
        read.option("batchSize", "abc").load(str(dataset))
    (tmp_path / "foreign.tfrecord").write_text("id,label\n1,2\n")
    with pytest.raises(tfr.NotTFRecordError) as foreign:
        spark.read.format("tfrecord").load(str(tmp_path / "foreign.tfrecord"))
    for err in (missing, bad, foreign):
        assert len(str(err.value).splitlines()) == 1
    df = spark.createDataFrame([({"a": 1},)], "m map<string,int>")
    with pytest.raises(TypeError, match="column 'm'"):
        df.write.format("tfrecord").save(str(tmp_path / "out" / "train"))


def test_reads_and_writes_on_a_standalone_cluster(
    cluster_spark, dataset: Path, tmp_path: Path
) -> None:
    spark = cluster_spark
    # Relative paths are the driver's (its JVM's working directory), which the workers,
    # running in directories of their own, are given as absolute paths.
    here = spark._jvm.java.lang.System.getProperty("user.dir")
    df = spark.read.format("tfrecord").load(os.path.relpath(dataset, here))
    assert df.count() == N
    assert df.agg({"i": "sum"}).collect()[0][0] == N * (N - 1) // 2
    out = tmp_path / "out" / "train"
    df.repartition(2).write.format("tfrecord").save(os.path.relpath(out, here))
    manifest = tfr.Manifest.load(str(out))
    assert manifest.records == N and len(manifest.files) == 2
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
    assert executors == 3  # the driver and two workers' executors
    spark.stop()


def test_a_missing_pyspark_is_an_import_error_naming_the_extra() -> None:
    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "try:\n    import tfrecordkit.integrations.spark\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'tfrecordkit[spark]'" in out.stdout, out.stderr


def test_options_round_trip_through_json(spark, dataset: Path, tmp_path: Path) -> None:
    # storage_options reach the executors as an option (their own environment may lack
    # them): here a local filesystem option that fsspec accepts.
    df = (
        spark.read.format("tfrecord")
        .option("storage_options", json.dumps({"auto_mkdir": True}))
        .load(str(dataset))
    )
    assert df.count() == N


def test_a_missing_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RuntimeError, match=r"Spark needs Java \(17 or later\)"):
        tfr.spark.register(object())
