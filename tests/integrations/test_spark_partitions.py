"""``df.write.format("tfrecord").partitionBy(...)``: a committed dataset per partition value
under ``name=value`` directories, written by one Spark job; and the partition discovery
that reads such a layout back."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import tfrecordkit as tfr
from tfrecordkit.integrations.spark_partitions import (
    HIVE_NULL,
    PartitionedWriter,
    partition_dir,
    partition_values,
    partitioned_files,
)

N = 600
LANGS = ["en", "fr", None, "", "a/b:c=d"]  # "" is null's directory too, as in Spark
DIRS = {
    "en": "lang=en",
    "fr": "lang=fr",
    None: f"lang={HIVE_NULL}",
    "a/b:c=d": "lang=a%2Fb%3Ac%3Dd",
}


def _lang(i: int) -> str | None:
    return LANGS[i % len(LANGS)] or None


@pytest.fixture
def df(spark):
    rows = [(i, LANGS[i % len(LANGS)], 2020 + i % 2, float(i) / 4, [i] * (i % 3)) for i in range(N)]
    schema = "i long, lang string, year int, x double, tags array<long>"
    return spark.createDataFrame(rows, schema).repartition(3)


def _tree(root: Path) -> list[str]:
    """Every file and directory under ``root``, hidden ones included, relative."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _datasets(root: Path) -> dict[str, list[int]]:
    """Each committed dataset under ``root`` (by its directory) and its ``i`` values."""
    out = {}
    for manifest in root.rglob("*.manifest.json"):
        m = tfr.Manifest.load(str(manifest))
        table = tfr.read_table(m.files)
        assert m.records == table.num_rows
        out[str(manifest.parent.relative_to(root))] = sorted(table.column("i").to_pylist())
    return out


def test_partition_by_commits_a_dataset_per_value(df, tmp_path: Path) -> None:
    import tensorflow as tf

    root = tmp_path / "out" / "train"
    df.write.format("tfrecord").partitionBy("lang").save(str(root))
    assert sorted(os.listdir(root)) == sorted(DIRS.values())  # nothing hidden left
    for value, name in DIRS.items():
        files = sorted(os.listdir(root / name))
        shards = [f for f in files if f.endswith(".tfrecord")]
        # One part per task that saw the value, named as write_dataset names shards.
        assert 1 <= len(shards) <= 3
        n = len(shards)
        assert shards == [f"part-{k:05d}-of-{n:05d}.tfrecord" for k in range(n)]
        assert files == sorted([*shards, *(s + ".idx" for s in shards), "part.manifest.json"])
        manifest = tfr.Manifest.load(str(root / name / "part"))
        table = tfr.read_table(manifest.files)
        assert sorted(table.column_names) == ["i", "tags", "x", "year"]  # no lang
        expected = [i for i in range(N) if _lang(i) == value]
        assert sorted(table.column("i").to_pylist()) == expected
        assert manifest.records == len(expected) and manifest.schema is not None

    spec = {
        "i": tf.io.FixedLenFeature([], tf.int64),
        "x": tf.io.FixedLenFeature([], tf.float32),
        "tags": tf.io.VarLenFeature(tf.int64),
    }
    manifest = tfr.Manifest.load(str(root / "lang=fr" / "part"))
    seen = {}
    for record in tf.data.TFRecordDataset(manifest.files):
        ex = tf.io.parse_single_example(record, spec)
        seen[int(ex["i"])] = (float(ex["x"]), ex["tags"].values.numpy().tolist())
    assert sorted(seen) == list(range(1, N, 5))
    assert seen[11] == (2.75, [11, 11])


def test_partition_by_nests_columns_however_it_is_spelled(df, tmp_path: Path) -> None:
    expected: dict[str, list[int]] = {}
    for i in range(N):
        expected.setdefault(f"{DIRS[_lang(i)]}/year={2020 + i % 2}", []).append(i)
    spellings = {
        "before_format": lambda out: (
            df.write.partitionBy("lang", "year").format("tfrecord").save(out)
        ),
        "a_list": lambda out: df.write.format("tfrecord").partitionBy(["lang", "year"]).save(out),
        "save_argument": lambda out: df.write.save(out, "tfrecord", partitionBy=["lang", "year"]),
        "one_name": lambda out: df.write.format("tfrecord").save(out, partitionBy="lang"),
    }
    for name, write in spellings.items():
        root = tmp_path / name
        write(str(root))
        if name == "one_name":
            assert sorted(_datasets(root)) == sorted(DIRS.values())
        else:
            assert _datasets(root) == expected, name
    table = tfr.read_table(tfr.Manifest.load(str(tmp_path / "a_list/lang=en/year=2020/part")).files)
    assert sorted(table.column_names) == ["i", "tags", "x"]
    # Other formats partition as Spark does.
    df.write.partitionBy("lang").parquet(str(tmp_path / "parquet"))
    assert (tmp_path / "parquet" / "lang=en").is_dir()


def test_partition_columns_are_checked(df, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    with pytest.raises(ValueError, match=r"partitionBy column 'nope' is not in the DataFrame"):
        df.write.format("tfrecord").partitionBy("nope").save(out)
    with pytest.raises(TypeError, match=r"partitionBy column 'tags' is array<bigint>"):
        df.write.format("tfrecord").partitionBy("tags").save(out)
    with pytest.raises(ValueError, match="partitionBy takes every column"):
        df.select("lang").write.format("tfrecord").partitionBy("lang").save(out)
    assert not os.path.exists(out)
    # Spark's casts name the directories: an integer column, named in another case.
    df.write.format("tfrecord").partitionBy("YEAR").save(out)
    assert sorted(os.listdir(out)) == ["year=2020", "year=2021"]


def test_partitioned_save_modes(df, tmp_path: Path) -> None:
    root = tmp_path / "out"
    df.write.format("tfrecord").partitionBy("lang").save(str(root))
    with pytest.raises(FileExistsError, match="a dataset already exists under"):
        df.write.format("tfrecord").partitionBy("lang").save(str(root))
    df.limit(3).write.format("tfrecord").partitionBy("lang").mode("ignore").save(str(root))
    assert sum(len(v) for v in _datasets(root).values()) == N
    with pytest.raises(ValueError, match="save mode 'append' is not supported"):
        df.write.format("tfrecord").partitionBy("lang").mode("append").save(str(root))

    # overwrite replaces the whole output: partitions the new rows lack go too.
    (root / "notes.txt").write_text("kept: not a dataset")
    english = df.filter("lang = 'en'")
    english.write.format("tfrecord").partitionBy("lang").mode("overwrite").save(str(root))
    assert _datasets(root) == {"lang=en": list(range(0, N, 5))}
    assert sorted(os.listdir(root)) == ["lang=en", "notes.txt"]

    # Dynamic overwrite (Spark's partitionOverwriteMode) replaces only the partitions written.
    df.write.format("tfrecord").partitionBy("lang").mode("overwrite").save(str(root))
    few = df.filter("lang = 'fr' and i < 100")
    writer = few.write.format("tfrecord").partitionBy("lang").mode("overwrite")
    writer.option("partitionOverwriteMode", "dynamic").save(str(root))
    found = _datasets(root)
    assert found["lang=fr"] == list(range(1, 100, 5))
    assert found["lang=en"] == list(range(0, N, 5)) and len(found) == len(DIRS)
    with pytest.raises(Exception, match="partitionOverwriteMode must be static or dynamic"):
        writer.option("partitionOverwriteMode", "sometimes").save(str(root))


def test_a_failed_partitioned_write_commits_nothing_and_leaves_nothing(df, tmp_path: Path) -> None:
    def fail_in_one_partition(batches):  # defined here, so that Spark pickles it whole
        for batch in batches:
            if 301 in batch.column("i").to_pylist():
                raise RuntimeError("a task fails")
            yield batch

    root = tmp_path / "out" / "train"
    failing = df.mapInArrow(fail_in_one_partition, df.schema)
    with pytest.raises(Exception, match="a task fails"):
        failing.write.format("tfrecord").partitionBy("lang").save(str(root))
    assert _tree(tmp_path) == []  # not even the directories it made
    # Into an output that exists: it stays as it was.
    df.filter("lang = 'en'").write.format("tfrecord").partitionBy("lang").save(str(root))
    before = _tree(root)
    with pytest.raises(Exception, match="a task fails"):
        failing.write.format("tfrecord").partitionBy("lang").mode("overwrite").save(str(root))
    assert _tree(root) == before
    df.write.format("tfrecord").partitionBy("lang").mode("overwrite").save(str(root))
    assert sorted(i for v in _datasets(root).values() for i in v) == list(range(N))


def _batch(langs: list[str | None], start: int = 0) -> pa.RecordBatch:
    i = pa.array(np.arange(start, start + len(langs)))
    return pa.RecordBatch.from_arrays([i, pa.array(langs, pa.string())], ["i", "lang"])


def test_a_failed_commit_takes_back_the_partitions_it_committed(tmp_path: Path) -> None:
    root = tmp_path / "out"
    writer = PartitionedWriter(
        str(root), ["lang"], compression=None, index=True, mode="errorifexists"
    )
    # Values in runs across batches, one coming back after another: two parts for "a".
    first = writer.write(iter([_batch(["a", "a", "b"]), _batch(["b", None, "a"], 3)]))
    second = writer.write(iter([_batch(["c"], 6)]))
    assert [d for d, _ in first.parts] == ["lang=a", "lang=b", f"lang={HIVE_NULL}", "lang=a"]
    # Meanwhile another writer commits "lang=c": this commit fails there, after "a" and "b".
    tfr.write_dataset({"i": np.arange(2)}, root / "lang=c" / "part", progress=False)
    before = [p for p in _tree(root) if not p.startswith(".staging-")]
    with pytest.raises(FileExistsError):
        writer.commit([first, second])
    assert _tree(root) == before  # the others taken back, their directories and parts too

    again = PartitionedWriter(str(root), ["lang"], compression=None, index=True, mode="overwrite")
    again.commit([again.write(iter([_batch(["a", "a", "b"]), _batch(["b", None, "a"], 3)])), None])
    assert _datasets(root) == {"lang=a": [0, 1, 5], "lang=b": [2, 3], f"lang={HIVE_NULL}": [4]}
    assert len(tfr.Manifest.load(str(root / "lang=a" / "part")).files) == 2
    assert not any(p.name.startswith(".") for p in root.iterdir())

    aborted = PartitionedWriter(
        str(tmp_path / "new"), ["lang"], compression=None, index=False, mode="overwrite"
    )
    aborted.abort([aborted.write(iter([_batch(["a"])]))])
    assert not (tmp_path / "new").exists()


def test_partition_discovery(df, tmp_path: Path) -> None:
    root = tmp_path / "out"
    df.write.format("tfrecord").partitionBy("lang", "year").save(str(root))
    (root / "_SUCCESS").write_text("")
    (root / ".staging-0").mkdir()
    (root / ".staging-0" / "x.tfrecord").write_text("")
    files = partitioned_files(str(root))
    assert files and all(f.endswith(".tfrecord") and "/." not in f for f in files)
    assert len(files) == sum(
        len(tfr.Manifest.load(str(m)).files) for m in root.rglob("*.manifest.json")
    )
    columns, values = partition_values(files, [str(root)])
    assert columns == ["lang", "year"]
    for f, (lang, year) in zip(files, values, strict=True):
        i = tfr.read_table(f).column("i").to_pylist()
        assert {(_lang(k), str(2020 + k % 2)) for k in i} == {(lang, year)}
    assert {v[0] for v in values} == set(DIRS)

    # A partition's directory is a dataset Spark reads as it is.
    sdf = df.sparkSession.read.format("tfrecord").load(str(root / "lang=en" / "year=2020"))
    assert sorted(r.i for r in sdf.collect()) == list(range(0, N, 10))

    # The whole directory reads back with the partition columns, as strings.
    back = df.sparkSession.read.format("tfrecord").load(str(root))
    assert back.columns[-2:] == ["lang", "year"]
    assert dict(back.dtypes) == {
        "i": "bigint",
        "tags": "array<bigint>",
        "x": "float",
        "lang": "string",
        "year": "string",
    }
    rows = sorted((r.i, r.lang, r.year) for r in back.select("i", "lang", "year").collect())
    assert rows == [(i, _lang(i), str(2020 + i % 2)) for i in range(N)]
    # Each task reads one partition directory, so its rows share the values.
    per_task = back.rdd.mapPartitions(lambda it: [{(r.lang, r.year) for r in it}]).collect()
    assert all(len(values) <= 1 for values in per_task)
    assert back.filter("lang = 'fr' and year = '2021'").count() == len(
        [i for i in range(N) if _lang(i) == "fr" and i % 2]
    )
    with pytest.raises(Exception, match="partition columns \\['lang'\\] are features"):
        clash = tmp_path / "clash"
        tfr.write_dataset({"lang": np.arange(3)}, clash / "lang=x" / "part", progress=False)
        df.sparkSession.read.format("tfrecord").load(str(clash)).collect()


def test_partition_values_as_spark_finds_them(tmp_path: Path) -> None:
    f = "/data/run=1/out/a=1/b=x%2Fy/part-00000-of-00001.tfrecord"
    assert partition_values([f]) == (["a", "b"], [("1", "x/y")])  # stops at "out"
    assert partition_values([f], ["/data/run=1/out/a=1"]) == (["b"], [("x/y",)])
    null = f"s3://bucket/out/a={HIVE_NULL}/b=%3D/part-00000-of-00001.tfrecord"
    assert partition_values([null], ["s3://bucket/out/"]) == (["a", "b"], [(None, "=")])
    assert partition_values(["/data/x.tfrecord"]) == ([], [()])
    with pytest.raises(ValueError, match="conflicting partition directories"):
        partition_values(["/d/a=1/x.tfrecord", "/d/a=1/b=2/y.tfrecord"], ["/d"])
    with pytest.raises(ValueError, match="conflicting partition directories"):
        partition_values(["/d/a=1/x.tfrecord", "/d/y.tfrecord"], ["/d"])
    weird = "sp ace\t#%'*/:=?\\\x7f{[]^é"
    assert partition_values([f"/d/{partition_dir(['k'], [weird])}/x"], ["/d"])[1] == [(weird,)]
    assert partition_dir(["k"], [weird]) == "k=sp ace%09%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%5B%5D%5Eé"


def test_partitioned_files_on_a_url() -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    for name in [
        "a=1/x.tfrecord",
        "a=1/x.tfrecord.idx",
        "a=2/y.tfrecord",
        "_SUCCESS",
        "other/z.tfrecord",
        ".staging-1/p",
    ]:
        fs.pipe_file(f"/parted/{name}", b"")
    try:
        files = partitioned_files("memory://parted")
        assert files == ["memory://parted/a=1/x.tfrecord", "memory://parted/a=2/y.tfrecord"]
        assert partition_values(files, ["memory://parted"]) == (["a"], [("1",), ("2",)])
    finally:
        fs.rm("/parted", recursive=True)


def test_a_partition_column_named_with_an_underscore_is_found(tmp_path: Path) -> None:
    for name in ["_split=a/x.tfrecord", "_split=b/y.tfrecord", "_temporary/z.tfrecord", "_SUCCESS"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    files = partitioned_files(str(tmp_path))
    assert files == [
        str(tmp_path / "_split=a" / "x.tfrecord"),
        str(tmp_path / "_split=b" / "y.tfrecord"),
    ]
    assert partition_values(files, [str(tmp_path)]) == (["_split"], [("a",), ("b",)])
