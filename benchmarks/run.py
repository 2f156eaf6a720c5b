"""Side-by-side benchmarks: tfrecordkit against TensorFlow, the `tfrecord` PyPI package, lance
and Ray Data.

    python benchmarks/run.py                  # full run, writes docs/benchmarks.md
    python benchmarks/run.py --quick          # smaller data, prints only

Builds its own data under --data-dir, measures each path in one run on this machine, prints
a table of figures and ratios, and writes them to docs/benchmarks.md. The `tfrecord` package
runs in a child process (its protobuf module clashes with TensorFlow's in one interpreter).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tfrecordkit as tfr
from tfrecordkit.cli.demo import sample_columns as tutorial_columns

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    path: str
    unit: str
    ours: float
    theirs: float
    against: str
    goal: str
    extra: str = ""
    # When a row was measured alone, after the full run: its date, and the machine where
    # that is not the full run's.
    rerun: str = ""

    @property
    def ratio(self) -> float:
        return self.ours / self.theirs if self.theirs else float("nan")


def best_of(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    """Runs `fn` (which returns an item count) `repeat` times; returns (best seconds, items)."""
    best, items = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        items = fn()
        best = min(best, time.perf_counter() - t0)
    return best, items


# ----------------------------------------------------------------------------- data


def write_raw(path: Path, n: int, size: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    blob = rng.bytes(size * 64)
    with tfr.RecordWriter(path) as w:
        for i in range(n):
            start = (i * 7919) % (len(blob) - size)
            w.write(blob[start : start + size])


def write_tutorial(path: Path, n: int, compression: str | None = None) -> None:
    cols = tutorial_columns(n)
    with tfr.RecordWriter(path, compression) as w:
        for i in range(n):
            w.write(
                tfr.encode_example(
                    {
                        "feature0": bool(cols["feature0"][i]),
                        "feature1": int(cols["feature1"][i]),
                        "feature2": cols["feature2"][i],
                        "feature3": float(cols["feature3"][i]),
                    }
                )
            )


WIDE_FLOATS = 100


def write_wide(path: Path, n: int) -> None:
    rng = np.random.default_rng(2)
    with tfr.RecordWriter(path) as w:
        for _ in range(n):
            row = {f"f{j:03d}": float(v) for j, v in enumerate(rng.standard_normal(WIDE_FLOATS))}
            row["ids"] = rng.integers(0, 1000, rng.integers(0, 20))
            w.write(tfr.encode_example(row))


def ensure(path: Path, make: Callable[[Path], None]) -> Path:
    if not path.exists():
        print(f"  building {path.name} ...", flush=True)
        make(path)
    return path


# ----------------------------------------------------------------------------- schemas

OUR_TUTORIAL_SCHEMA = tfr.Schema(
    {
        "feature0": tfr.FixedLen([], "int64", default=0),
        "feature1": tfr.FixedLen([], "int64", default=0),
        "feature2": tfr.FixedLen([], "bytes", default=b""),
        "feature3": tfr.FixedLen([], "float32", default=0.0),
    }
)
OUR_WIDE_SCHEMA = tfr.Schema(
    {
        **{f"f{j:03d}": tfr.FixedLen([], "float32") for j in range(WIDE_FLOATS)},
        "ids": tfr.VarLen("int64"),
    }
)


def tf_schema(tf, wide: bool):
    if wide:
        spec = {f"f{j:03d}": tf.io.FixedLenFeature([], tf.float32) for j in range(WIDE_FLOATS)}
        spec["ids"] = tf.io.VarLenFeature(tf.int64)
        return spec
    return {
        "feature0": tf.io.FixedLenFeature([], tf.int64, default_value=0),
        "feature1": tf.io.FixedLenFeature([], tf.int64, default_value=0),
        "feature2": tf.io.FixedLenFeature([], tf.string, default_value=""),
        "feature3": tf.io.FixedLenFeature([], tf.float32, default_value=0.0),
    }


# ----------------------------------------------------------------------------- cases


def tf_read(tf, path: Path, compression: str = "") -> Callable[[], int]:
    def run() -> int:
        n = 0
        ds = tf.data.TFRecordDataset(str(path), compression_type=compression, buffer_size=1 << 20)
        for batch in ds.batch(1024):
            n += int(batch.shape[0])
        return n

    return run


def our_read(path: Path) -> Callable[[], int]:
    def run() -> int:
        return sum(len(b) for b in tfr.read_batches(path, 1024))

    return run


def our_read_iter(path: Path) -> Callable[[], int]:
    def run() -> int:
        n = 0
        for _ in tfr.read_records(path):
            n += 1
        return n

    return run


def tf_parse(tf, path: Path, wide: bool, compression: str = "") -> Callable[[], int]:
    spec = tf_schema(tf, wide)

    def run() -> int:
        n = 0
        ds = tf.data.TFRecordDataset(str(path), compression_type=compression, buffer_size=1 << 20)
        ds = ds.batch(1024)
        ds = ds.map(lambda x: tf.io.parse_example(x, spec))
        for batch in ds:
            n += int(batch["f000" if wide else "feature1"].shape[0])
        return n

    return run


def our_parse(path: Path, schema: tfr.Schema, key: str) -> Callable[[], int]:
    def run() -> int:
        return sum(len(b[key]) for b in tfr.read_examples(path, schema, 1024))

    return run


def our_read_arrow(path: Path, **kwargs: object) -> Callable[[], int]:
    """read_arrow: Examples to Arrow record batches of 65,536 rows."""

    def run() -> int:
        reader = tfr.read_arrow(str(path), OUR_TUTORIAL_SCHEMA, batch_size=65_536, **kwargs)
        return sum(len(b) for b in reader)

    return run


def lance_read_arrow(path: Path) -> Callable[[], int]:
    """lance's TFRecord reader (pylance's read_tfrecord) to Arrow record batches."""
    from lance.tf.tfrecord import infer_tfrecord_schema, read_tfrecord

    schema = infer_tfrecord_schema(str(path))

    def run() -> int:
        return sum(len(b) for b in read_tfrecord(str(path), schema, batch_size=65_536))

    return run


def ray_read(path: Path, ours: bool) -> Callable[[], int]:
    """A Ray Data read of one file, materialized in Ray's object store: tfr.ray.read, or
    ray.data.read_tfrecords."""
    import ray

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False

    def run() -> int:
        if ours:
            ds = tfr.ray.read(str(path), OUR_TUTORIAL_SCHEMA)
        else:
            ds = ray.data.read_tfrecords(str(path))
        return ds.materialize().count()

    return run


def write_sequences(path: Path, n: int) -> None:
    """Clips: a context id and label, and 5-30 steps of an 8-float embedding and 0-3 tags."""
    rng = np.random.default_rng(5)
    with tfr.RecordWriter(path) as w:
        for i in range(n):
            steps = int(rng.integers(5, 31))
            frames = rng.random((steps, 8), dtype=np.float32)
            tags = [rng.integers(0, 100, int(rng.integers(0, 4))).tolist() for _ in range(steps)]
            w.write(
                tfr.encode_sequence_example(
                    {"id": i, "label": int(rng.integers(0, 10))}, {"frames": frames, "tags": tags}
                )
            )


def sequence_schemas(tf):
    """(context, feature lists) as tf.io specs; tfrecordkit takes the same objects."""
    context = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    lists = {
        "frames": tf.io.FixedLenSequenceFeature([8], tf.float32),
        "tags": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
    }
    return context, lists


def tf_parse_sequences(tf, path: Path) -> Callable[[], int]:
    context, lists = sequence_schemas(tf)

    def run() -> int:
        n = 0
        ds = tf.data.TFRecordDataset(str(path), buffer_size=1 << 20).batch(256)
        ds = ds.map(lambda x: tf.io.parse_sequence_example(x, context, lists))
        for ctx, _, _ in ds:
            n += int(ctx["id"].shape[0])
        return n

    return run


def our_parse_sequences(tf, path: Path) -> Callable[[], int]:
    context, lists = sequence_schemas(tf)
    ds = tfr.Dataset.from_files(str(path)).parse(context, lists).batch(256)

    def run() -> int:
        return sum(len(b["id"]) for b in ds)

    return run


def write_composite(path: Path, n: int) -> None:
    """Bags of words (10-50 (index, weight) pairs of 10,000) and sentences (1-8 words of
    1-6 token ids, as values and row lengths)."""
    rng = np.random.default_rng(6)
    with tfr.RecordWriter(path) as w:
        for _ in range(n):
            k = int(rng.integers(10, 51))
            lengths = rng.integers(1, 7, int(rng.integers(1, 9)))
            w.write(
                tfr.encode_example(
                    {
                        "word_ids": rng.choice(10_000, k, replace=False),
                        "weights": rng.random(k, dtype=np.float32),
                        "tokens": rng.integers(0, 30_000, int(lengths.sum())),
                        "lengths": lengths,
                    }
                )
            )


def composite_schema(tf, kind: str):
    if kind == "sparse":
        return {"bag": tf.io.SparseFeature("word_ids", "weights", tf.float32, 10_000)}
    partitions = [tf.io.RaggedFeature.RowLengths("lengths")]
    return {"text": tf.io.RaggedFeature(tf.int64, "tokens", partitions, row_splits_dtype=tf.int64)}


def tf_parse_composite(tf, path: Path, kind: str) -> Callable[[], int]:
    spec = composite_schema(tf, kind)
    key = next(iter(spec))

    def run() -> int:
        n = 0
        ds = tf.data.TFRecordDataset(str(path), buffer_size=1 << 20).batch(1024)
        for batch in ds.map(lambda x: tf.io.parse_example(x, spec)):
            value = batch[key]
            n += int(value.dense_shape[0] if kind == "sparse" else value.nrows())
        return n

    return run


def our_parse_composite(tf, path: Path, kind: str) -> Callable[[], int]:
    schema = tfr.Schema(composite_schema(tf, kind))
    key = next(iter(schema))

    def run() -> int:
        return sum(len(b[key]) for b in tfr.read_examples(path, schema, 1024))

    return run


def write_tutorial_shards(prefix: Path, n: int, shards: int = 8) -> None:
    tfr.write_dataset(tutorial_columns(n), str(prefix), num_shards=shards, progress=False)


def tf_interleaved(tf, pattern: str):
    """`list_files → interleave(AUTOTUNE, deterministic=False)` of TFRecord files, in tf.data."""
    autotune = tf.data.AUTOTUNE
    return tf.data.Dataset.list_files(pattern, shuffle=False).interleave(
        lambda fn: tf.data.TFRecordDataset(fn),
        cycle_length=autotune,
        num_parallel_calls=autotune,
        deterministic=False,
    )


#: Examples a per-Example ``map`` pipeline row reads (its Python calls set its pace).
MAP_EXAMPLES = 200_000


def _small_transform(e):
    return {"label": e["feature1"] * 2, "score": e["feature3"] + 1.0, "name": e["feature2"]}


def our_map_pipeline(path: Path, transform: bool, prefetch: bool = False) -> Callable[[], int]:
    """parse -> per-Example map(f) -> shuffle 10k -> batch 1024, f the identity or a small
    dict transform; or, with ``prefetch``, parse -> map(f) -> prefetch(AUTOTUNE)."""
    fn = _small_transform if transform else (lambda e: e)
    key = "label" if transform else "feature1"
    ds = tfr.Dataset.from_files(str(path)).take(MAP_EXAMPLES).parse(OUR_TUTORIAL_SCHEMA).map(fn)
    if prefetch:
        ds = ds.prefetch(tfr.AUTOTUNE)

        def each() -> int:
            return sum(1 for _ in ds)

        return each
    ds = ds.shuffle(10_000, seed=0).batch(1024)

    def run() -> int:
        return sum(len(b[key]) for b in ds)

    return run


def tf_map_pipeline(tf, path: Path, transform: bool, prefetch: bool = False) -> Callable[[], int]:
    spec = tf_schema(tf, False)
    key = "label" if transform else "feature1"
    if prefetch:

        def each() -> int:
            ds = tf.data.TFRecordDataset(str(path), buffer_size=1 << 20).take(MAP_EXAMPLES)
            ds = ds.map(lambda x: tf.io.parse_single_example(x, spec)).map(lambda e: e)
            return sum(1 for _ in ds.prefetch(tf.data.AUTOTUNE))

        return each

    def small(e):
        return {"label": e["feature1"] * 2, "score": e["feature3"] + 1.0, "name": e["feature2"]}

    def run() -> int:
        ds = tf.data.TFRecordDataset(str(path), buffer_size=1 << 20).take(MAP_EXAMPLES)
        ds = ds.map(lambda x: tf.io.parse_single_example(x, spec))
        ds = ds.map(small if transform else (lambda e: e)).shuffle(10_000, seed=0).batch(1024)
        return sum(int(b[key].shape[0]) for b in ds)

    return run


def write_arrays(path: Path, n: int) -> None:
    """``n`` Examples of one 64 KB float32 array each."""
    rng = np.random.default_rng(0)
    with tfr.RecordWriter(path) as w:
        for _ in range(n):
            w.write(tfr.encode_example({"x": rng.random(16_384, dtype=np.float32)}))


def numpy_ufuncs(x: np.ndarray) -> np.ndarray:
    """NumPy work on a 64 KB array in 20 short calls (a few microseconds each)."""
    for _ in range(4):
        x = np.sqrt(np.abs(np.sin(x) * 2.0 + 1.0))
    return x


def numpy_sorts(x: np.ndarray) -> np.ndarray:
    """NumPy work on a 64 KB array in 4 longer calls (two sorts of about 40 us each)."""
    for _ in range(2):
        x = np.sort(np.sin(x))
    return x


def our_parallel_map(path: Path, calls: int | None, work=numpy_ufuncs) -> Callable[[], int]:
    """parse -> map(f) with ``num_parallel_calls=calls``, f ``work`` on a 64 KB array."""

    def f(e):
        return {"x": work(e["x"])}

    schema = {"x": tfr.FixedLen([16_384], "float32")}
    ds = tfr.Dataset.from_files(str(path)).parse(schema).map(f, num_parallel_calls=calls)

    def run() -> int:
        return sum(1 for _ in ds)

    return run


def threads_alone(path: Path, threads: int, work=numpy_ufuncs) -> Callable[[], int]:
    """``work`` on every array of ``path``, read beforehand, on ``threads`` Python threads
    and no pipeline: what the function itself gains from threads on this host."""
    from concurrent.futures import ThreadPoolExecutor

    schema = {"x": tfr.FixedLen([16_384], "float32")}
    arrays = [a for b in tfr.read_examples(str(path), schema) for a in b["x"]]

    def run() -> int:
        if threads == 1:
            return sum(1 for x in arrays if work(x) is not None)
        with ThreadPoolExecutor(threads) as pool:
            parts = [arrays[i::threads] for i in range(threads)]
            done = pool.map(lambda part: sum(1 for x in part if work(x) is not None), parts)
            return sum(done)

    return run


def our_cheap_map(path: Path, calls: int | None) -> Callable[[], int]:
    """parse -> map(f) with ``num_parallel_calls=calls``, f a cheap Python function that
    holds the GIL throughout."""

    def f(e):
        return {"label": e["feature1"] + 1}

    ds = (
        tfr.Dataset.from_files(str(path))
        .parse(OUR_TUTORIAL_SCHEMA)
        .map(f, num_parallel_calls=calls)
    )

    def run() -> int:
        return sum(1 for _ in ds)

    return run


def tf_interleave_pipeline(tf, pattern: str) -> Callable[[], int]:
    """The ImageNet-style interleave pipeline in tf.data, without the image decoding."""
    spec = tf_schema(tf, False)
    autotune = tf.data.AUTOTUNE

    def run() -> int:
        ds = (
            tf_interleaved(tf, pattern)
            .map(lambda x: tf.io.parse_single_example(x, spec), num_parallel_calls=autotune)
            .cache()
            .shuffle(buffer_size=10000)
            .batch(128, drop_remainder=True)
            .prefetch(autotune)
        )
        return sum(int(b["feature1"].shape[0]) for b in ds)

    return run


def our_interleave_pipeline(pattern: str, cache: bool = True) -> Callable[[], int]:
    """The same pipeline through tfr.Dataset (``cache=False``: shuffle, batch, prefetch)."""

    def run() -> int:
        ds = (
            tfr.Dataset.list_files(pattern)
            .interleave(cycle_length=tfr.AUTOTUNE, deterministic=False)
            .parse(OUR_TUTORIAL_SCHEMA)
        )
        if cache:
            ds = ds.cache()
        ds = ds.shuffle(10000).batch(128, drop_remainder=True).prefetch(tfr.AUTOTUNE)
        return sum(len(b["feature1"]) for b in ds)

    return run


def photographs() -> list[np.ndarray]:
    """The real photographs that ship inside scikit-learn and scikit-image."""
    from sklearn.datasets import load_sample_images

    photos = list(load_sample_images().images)
    try:
        import skimage.data as sk

        photos += [sk.astronaut(), sk.coffee(), sk.chelsea(), sk.rocket()]
    except ImportError:  # scikit-image is in the bench extra; two photographs still do
        pass
    return photos


def write_image_shards(prefix: Path, n: int, shards: int = 8) -> None:
    """ImageNet-like JPEGs (up to 500x375, quality 90) cut at random from the photographs."""
    import io

    from PIL import Image

    photos = photographs()
    rng = np.random.default_rng(0)
    images = []
    for i in range(n):
        photo = photos[i % len(photos)]
        h, w = min(375, photo.shape[0]), min(500, photo.shape[1])
        y = int(rng.integers(0, photo.shape[0] - h + 1))
        x = int(rng.integers(0, photo.shape[1] - w + 1))
        buf = io.BytesIO()
        Image.fromarray(photo[y : y + h, x : x + w]).save(buf, "JPEG", quality=90)
        images.append(buf.getvalue())
    columns = {"image": images, "label": np.arange(n, dtype=np.int64) % 1000}
    tfr.write_dataset(columns, str(prefix), num_shards=shards, progress=False)


def write_convert_table(directory: Path, rows: int, images: int = 1000) -> Path:
    """A CSV of ``rows`` rows of ``split,image_uri,label`` over ``images`` JPEG files of
    about 50 KB (500x375 crops of the photographs), cycling through them, as convert reads
    a table of ImageNet's kind."""
    from PIL import Image

    pictures = directory / "images"
    if not (pictures / f"{images - 1}.jpg").exists():
        pictures.mkdir(parents=True, exist_ok=True)
        photos = photographs()
        for i in range(images):
            photo = photos[i % len(photos)]
            h, w = min(375, photo.shape[0]), min(500, photo.shape[1])
            y = (i * 7) % (photo.shape[0] - h + 1)
            x = (i * 13) % (photo.shape[1] - w + 1)
            Image.fromarray(photo[y : y + h, x : x + w]).save(pictures / f"{i}.jpg", quality=90)
    table = directory / f"table-{rows}.csv"
    if not table.exists():
        with open(table, "w") as f:
            f.write("split,image_uri,label\n")
            for i in range(rows):
                split = ("TRAIN",) * 8 + ("VALIDATION", "TEST")
                f.write(f"{split[i % 10]},{pictures / f'{i % images}.jpg'},class{i // 10 % 10}\n")
    return table


def tf_image_pipeline(tf, pattern: str) -> Callable[[], int]:
    """The ImageNet pipeline in tf.data: parse, decode_jpeg, cast / 255, resize 224, batch 128."""
    desc = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    autotune = tf.data.AUTOTUNE

    def parse(serialized):
        ex = tf.io.parse_single_example(serialized, desc)
        image = tf.io.decode_jpeg(ex["image"], channels=3)
        image = tf.cast(image, tf.float32) / 255.0
        return tf.image.resize(image, [224, 224]), ex["label"]

    def run() -> int:
        ds = (
            tf_interleaved(tf, pattern)
            .map(parse, num_parallel_calls=autotune)
            .batch(128, drop_remainder=True)
            .prefetch(autotune)
        )
        return sum(int(label.shape[0]) for _, label in ds)

    return run


def our_image_pipeline(pattern: str, dtype: str) -> Callable[[], int]:
    """The same pipeline through tfr.Dataset.decode_image."""
    schema = {"image": tfr.FixedLen([], "bytes"), "label": tfr.FixedLen([], "int64")}

    def run() -> int:
        ds = (
            tfr.Dataset.list_files(pattern)
            .interleave(cycle_length=tfr.AUTOTUNE, deterministic=False)
            .parse(schema)
            .decode_image("image", size=224, dtype=dtype)
            .batch(128, drop_remainder=True)
            .prefetch(tfr.AUTOTUNE)
        )
        return sum(len(b["label"]) for b in ds)

    return run


def our_parse_drop(pattern: str, batch: int, batch_size: int = 1024) -> Callable[[], int]:
    """read_examples in batches of ``batch_size``, counting whole batches of ``batch``
    records as the pipelines do."""

    def run() -> int:
        batches = tfr.read_examples(pattern, OUR_TUTORIAL_SCHEMA, batch_size)
        n = sum(len(b["feature1"]) for b in batches)
        return n - n % batch

    return run


def tf_write_tutorial(
    tf, path: Path, cols: dict[str, np.ndarray], options=None
) -> Callable[[], int]:
    """The TFRecord tutorial's loop: one tf.train.Example per row, SerializeToString, write."""

    def _bytes_feature(value):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    def _float_feature(value):
        return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))

    def _int64_feature(value):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    def serialize_example(feature0, feature1, feature2, feature3):
        feature = {
            "feature0": _int64_feature(feature0),
            "feature1": _int64_feature(feature1),
            "feature2": _bytes_feature(feature2),
            "feature3": _float_feature(feature3),
        }
        proto = tf.train.Example(features=tf.train.Features(feature=feature))
        return proto.SerializeToString()

    f0 = cols["feature0"].astype(np.int64).tolist()
    f1, f2, f3 = (cols[k].tolist() for k in ("feature1", "feature2", "feature3"))

    def run() -> int:
        with tf.io.TFRecordWriter(str(path), options) as writer:
            for i in range(len(f0)):
                writer.write(serialize_example(f0[i], f1[i], f2[i], f3[i]))
        return len(f0)

    return run


def our_write_columns(path: Path, cols: dict[str, np.ndarray], compression=None):
    def run() -> int:
        with tfr.RecordWriter(path, compression) as w:
            return w.write_examples(cols)

    return run


def our_write_rows(path: Path, cols: dict[str, np.ndarray], compression=None) -> Callable[[], int]:
    keys = ("feature0", "feature1", "feature2", "feature3")
    columns = [cols[k].tolist() for k in keys]

    def run() -> int:
        with tfr.RecordWriter(path, compression) as w:
            for values in zip(*columns, strict=True):
                w.write(tfr.encode_example(dict(zip(keys, values, strict=True))))
        return len(columns[0])

    return run


RSS_CHILD = textwrap.dedent(
    """
    import sys, tfrecordkit as tfr
    n = sum(len(b) for b in tfr.read_batches(sys.argv[1], 256))
    # VmHWM belongs to this process image; ru_maxrss would include the parent's before exec.
    status = open("/proc/self/status").read().split("VmHWM:")[1].split()
    print(n, int(status[0]) * 1024)
    """
)

ARROW_RSS_CHILD = textwrap.dedent(
    """
    import sys, tfrecordkit as tfr
    n = sum(b.num_rows for b in tfr.read_arrow(sys.argv[1]))
    status = open("/proc/self/status").read().split("VmHWM:")[1].split()
    print(n, int(status[0]) * 1024)
    """
)

DATASET_RSS_CHILD = textwrap.dedent(
    """
    import sys, tfrecordkit as tfr
    n = sum(len(r) for r in tfr.Dataset.from_files(sys.argv[1:]))
    status = open("/proc/self/status").read().split("VmHWM:")[1].split()
    print(n, int(status[0]) * 1024)
    """
)

CONVERT_CHILD = textwrap.dedent(
    """
    import sys, tfrecordkit as tfr
    summary = tfr.convert(sys.argv[1], sys.argv[2], progress=False, overwrite=True)
    status = open("/proc/self/status").read().split("VmHWM:")[1].split()
    print(sum(summary.rows.values()), int(status[0]) * 1024)
    """
)

TFRECORD_CHILD = textwrap.dedent(
    """
    import sys, time
    from tfrecord.reader import tfrecord_loader
    desc = {"feature0": "int", "feature1": "int", "feature2": "byte", "feature3": "float"}
    t0 = time.perf_counter()
    n = sum(1 for _ in tfrecord_loader(sys.argv[1], None, desc))
    print(n, time.perf_counter() - t0)
    """
)


BLOB_SCHEMA = {"data": tfr.FixedLen([], "bytes")}


def write_blobs(path: Path, n: int, size: int, examples: bool) -> None:
    """``n`` records of ``size`` random bytes, or Examples with them as one bytes feature."""
    rng = np.random.default_rng(11)
    blob = rng.bytes(size + 4096)
    with tfr.RecordWriter(path) as w:
        for i in range(n):
            start = (i * 131) % 4096
            data = blob[start : start + size]
            w.write(tfr.encode_example({"data": data}) if examples else data)


def cat_read(path: Path) -> Callable[[], int]:
    def run() -> int:
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
        return path.stat().st_size

    return run


def memory_speed_rows(data: Path, scale: int, rep: int) -> tuple[list[Row], str]:
    """Large records against ``cat > /dev/null`` of the same file, in the page cache: one
    GB each of 100 KB, 1 MB and 8 MB records (and of Examples holding them), and the peak
    RSS of read_arrow with its defaults."""
    rows = []
    for size, label in ((100_000, "100 KB"), (1_000_000, "1 MB"), (8_000_000, "8 MB")):
        n = 1_000_000_000 // size // scale
        raw = ensure(
            data / f"blobs-{label.replace(' ', '')}-{n}.tfrecord",
            lambda p, n=n, size=size: write_blobs(p, n, size, False),
        )
        exs = ensure(
            data / f"blob-examples-{label.replace(' ', '')}-{n}.tfrecord",
            lambda p, n=n, size=size: write_blobs(p, n, size, True),
        )
        readers = {
            "read_records": (raw, lambda p: sum(len(r) for r in tfr.read_records(p))),
            "read_batches": (
                raw,
                lambda p: sum(len(r) for b in tfr.read_batches(p, 1024) for r in b),
            ),
            "read_arrow, default arguments": (
                exs,
                lambda p: sum(b.num_rows for b in tfr.read_arrow(p)) and p.stat().st_size,
            ),
            "read_examples, one bytes feature": (
                exs,
                lambda p: (
                    sum(len(b["data"]) for b in tfr.read_examples(p, BLOB_SCHEMA))
                    and p.stat().st_size
                ),
            ),
            "tfr.Dataset of records": (
                raw,
                lambda p: sum(len(r) for r in tfr.Dataset.from_files(str(p))),
            ),
        }
        for name, (path, read) in readers.items():
            size_bytes = path.stat().st_size
            t_cat = t_ours = float("inf")
            for _ in range(rep):
                t_cat = min(t_cat, best_of(cat_read(path), 1)[0])
                t_ours = min(t_ours, best_of(lambda path=path, read=read: read(path), 1)[0])
            rows.append(
                Row(
                    f"{name}, {label} records, vs cat > /dev/null",
                    "GB/s",
                    size_bytes / t_ours / 1e9,
                    size_bytes / t_cat / 1e9,
                    "cat (page cache)",
                    "" if name.startswith("read_examples") else ">= 0.6x",
                )
            )
    n = 1_000_000_000 // 100_000 // scale
    exs = data / f"blob-examples-100KB-{n}.tfrecord"
    rows_read, rss = child(ARROW_RSS_CHILD, str(exs))
    gb = exs.stat().st_size / 1e9
    n = 1_000_000_000 // 1_000_000 // scale
    blobs = str(data / f"blobs-1MB-{n}.tfrecord")
    _, once = child(DATASET_RSS_CHILD, blobs)
    _, twice = child(DATASET_RSS_CHILD, blobs, blobs)
    line = (
        f"`read_arrow` with its default arguments over {gb:.1f} GB of 100 KB Examples "
        f"({int(rows_read):,} rows): peak RSS **{int(rss) / 2**20:.0f} MiB** (goal < 300 MB). "
        f"A `tfr.Dataset` of 1 MB records: peak RSS **{int(once) / 2**20:.0f} MiB** over "
        f"{Path(blobs).stat().st_size / 1e9:.1f} GB, **{int(twice) / 2**20:.0f} MiB** over "
        "twice that (the file read twice)."
    )
    print(f"  {line}")
    return rows, line


def tensor_batches(n: int = 1024, width: int = 256) -> tuple[list[bytes], list[bytes]]:
    """A batch of ``n`` serialized float32 [width] tensors, and of the same arrays' raw bytes."""
    rng = np.random.default_rng(5)
    arrays = rng.random((n, width), dtype=np.float32)
    return [tfr.serialize_tensor(a) for a in arrays], [a.tobytes() for a in arrays]


def tf_parse_tensors(tf, batch: list[bytes], width: int = 256) -> Callable[[], int]:
    """The faster of TensorFlow's two ways to parse a batch: map_fn in a tf.function, or a
    tf.data map (parallel) batched back."""
    spec = tf.TensorSpec([width], tf.float32)
    tensors = tf.constant(batch)

    @tf.function
    def map_fn(b):
        return tf.map_fn(lambda s: tf.io.parse_tensor(s, tf.float32), b, fn_output_signature=spec)

    ds = (
        tf.data.Dataset.from_tensor_slices(tensors)
        .map(
            lambda s: tf.ensure_shape(tf.io.parse_tensor(s, tf.float32), [width]),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        .batch(len(batch))
    )

    def by_map_fn() -> int:
        return len(map_fn(tensors).numpy())

    def by_data() -> int:
        return sum(len(b) for b in ds.as_numpy_iterator())

    faster = min((by_map_fn, by_data), key=lambda f: best_of(f, 3)[0])
    return faster


def write_raw_examples(path: Path, raw: list[bytes], times: int) -> None:
    with tfr.RecordWriter(path) as w:
        w.write_many(tfr.encode_example({"x": r}) for r in raw * times)


def repeated(fn: Callable[[], int], times: int) -> Callable[[], int]:
    def run() -> int:
        return sum(fn() for _ in range(times))

    return run


def our_decode_raw_pipeline(path: Path) -> Callable[[], int]:
    schema = {"x": tfr.FixedLen([], "bytes")}

    def run() -> int:
        ds = tfr.Dataset.from_files(path).parse(schema).batch(1024).decode_raw("x", "float32")
        return sum(len(b["x"]) for b in ds)

    return run


def tf_decode_raw_pipeline(tf, path: Path) -> Callable[[], int]:
    spec = {"x": tf.io.FixedLenFeature([], tf.string)}

    def run() -> int:
        ds = (
            tf.data.TFRecordDataset(str(path))
            .batch(1024)
            .map(lambda s: tf.io.decode_raw(tf.io.parse_example(s, spec)["x"], tf.float32))
        )
        return sum(len(b) for b in ds.as_numpy_iterator())

    return run


# The peak of this process's own memory (VmHWM): ru_maxrss would also count what the
# benchmark process (TensorFlow loaded) held when it forked the child.
STATS_RSS_CHILD = """
import sys
import tfrecordkit as tfr
report = tfr.stats(splits={"all": [sys.argv[1]] * int(sys.argv[2])})
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(report["records"], int(hwm.split()[1]) * 1024)
"""

TFDV_CHILD = """
import sys, time
import tensorflow_data_validation as tfdv
t = time.perf_counter()
stats = tfdv.generate_statistics_from_tfrecord(data_location=sys.argv[1])
elapsed = time.perf_counter() - t
print(stats.datasets[0].num_examples, elapsed)
"""


def our_stats(path: Path) -> Callable[[], int]:
    def run() -> int:
        return tfr.stats(str(path))["records"]

    return run


def stats_rows(tf, tutorial: Path, rep: int) -> tuple[list[Row], str]:
    """``tfr.stats`` over the tutorial data: against TensorFlow reading and parsing the same
    file (no statistics at all: what any TensorFlow-based pass costs at least), against
    TFDV when a side environment has it (``TFDV_PYTHON``), and its peak RSS at 1x and 4x
    the Examples."""
    rows = []
    t_ours = t_tf = float("inf")
    for _ in range(rep):
        t, n_ours = best_of(our_stats(tutorial), 1)
        t_ours = min(t_ours, t)
        t, n_tf = best_of(tf_parse(tf, tutorial, False), 1)
        t_tf = min(t_tf, t)
    assert n_ours == n_tf
    rows.append(
        Row(
            "stats: every feature's statistics, tutorial data (1M Examples)",
            "Examples/s",
            n_ours / t_ours,
            n_tf / t_tf,
            "TensorFlow read + parse only",
            ">= 5M/s",
        )
    )
    tfdv = os.environ.get("TFDV_PYTHON")
    if tfdv:
        out = subprocess.run(
            [tfdv, "-c", TFDV_CHILD, str(tutorial)], check=True, capture_output=True, text=True
        ).stdout.split()
        n_tfdv, t_tfdv = int(out[-2]), float(out[-1])
        assert n_tfdv == n_ours, (n_tfdv, n_ours)
        rows.append(
            Row(
                "stats vs TFDV generate_statistics_from_tfrecord, same file",
                "Examples/s",
                n_ours / t_ours,
                n_tfdv / t_tfdv,
                "TFDV (Beam DirectRunner)",
                ">= 20x",
            )
        )
    peaks = {}
    for copies in (1, 4):
        records, rss = child(STATS_RSS_CHILD, str(tutorial), str(copies))
        peaks[int(records)] = int(rss) / 2**20
    (small, rss_small), (large, rss_large) = sorted(peaks.items())
    line = (
        f"`tfr.stats` peak RSS: **{rss_small:.0f} MiB** over {small:,} Examples, "
        f"**{rss_large:.0f} MiB** over {large:,} (x{rss_large / rss_small:.2f} at 4x the "
        "Examples; goal: flat)."
    )
    print(f"  {line}")
    return rows, line


def local_spark(cores: int):
    """A local SparkSession with ``cores`` cores (any other one stopped first)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    tfr.spark.register(spark)
    return spark


def _spark_floor_sources() -> tuple[type, type]:
    """Two Python data sources that do no work of their own: ``nothing`` reads no rows,
    ``discard`` drops the batches it is given. Their queries cost what Spark's Python
    data source API itself costs, the floor under any Python source."""
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        InputPartition,
        WriterCommitMessage,
    )

    class NothingReader(DataSourceReader):
        def partitions(self):
            return [InputPartition(0), InputPartition(1)]

        def read(self, partition):
            return iter(())

    class Nothing(DataSource):
        @classmethod
        def name(cls):
            return "nothing"

        def schema(self):
            return "feature0 long, feature1 long, feature2 binary, feature3 float"

        def reader(self, schema):
            return NothingReader()

    class DiscardWriter(DataSourceArrowWriter):
        def write(self, iterator):
            for _ in iterator:
                pass
            return WriterCommitMessage()

        def commit(self, messages):
            pass

        def abort(self, messages):
            pass

    class Discard(DataSource):
        @classmethod
        def name(cls):
            return "discard"

        def writer(self, schema, overwrite):
            return DiscardWriter()

    return Nothing, Discard


def spark_rows(
    data: Path, shards: str, one_file: Path, n: int, rep: int, ray_rate: float
) -> list[Row]:
    """Spark's tfrecord source against Spark's Parquet on the same rows (read, then count
    and a sum; write), against ``ray.data.read_tfrecords``, and from one core to two; and
    a Python data source that does nothing, against Parquet, for the API's own cost."""
    from pyspark.sql import functions as F

    def query(df) -> int:
        count, _ = df.agg(F.count("*"), F.sum("feature1")).collect()[0]
        return int(count)

    rates = {}
    for cores in (1, 2):
        spark = local_spark(cores)
        tfrecords = spark.read.format("tfrecord").load(shards)
        query(tfrecords)  # warm: the Python workers start
        rates[cores] = n / best_of(lambda df=tfrecords: query(df), rep)[0]
    parquet_dir = data / f"spark-parquet-{n}"
    if not parquet_dir.exists():
        tfrecords.write.parquet(str(parquet_dir))
    parquet = spark.read.parquet(str(parquet_dir))
    t_parquet, n_parquet = best_of(lambda: query(parquet), rep)
    assert n_parquet == n
    # One file, shared by two partitions through its index sidecar.
    if not Path(f"{one_file}.idx").exists():
        tfr.build_index(one_file)
    whole = spark.read.format("tfrecord").option("partitionBytes", one_file.stat().st_size // 2 + 1)
    whole = whole.load(str(one_file))
    assert whole.rdd.getNumPartitions() == 2
    query(whole)
    t_one, n_one = best_of(lambda: query(whole), rep)
    assert n_one == n
    nothing, discard = _spark_floor_sources()
    spark.dataSource.register(nothing)
    spark.dataSource.register(discard)
    empty = spark.read.format("nothing").load()
    query(empty)
    t_empty = best_of(lambda: query(empty), rep)[0]
    rows = [
        Row(
            "Spark read + count + sum, tutorial data in 8 shards, vs Parquet",
            "Examples/s",
            rates[2],
            n / t_parquet,
            "Spark reading Parquet",
            ">= 0.5x",
        ),
        Row(
            "Spark read as above, vs ray.data.read_tfrecords",
            "Examples/s",
            rates[2],
            ray_rate,
            "Ray Data",
            ">= 100x",
        ),
        Row(
            "Spark read as above, local[2] vs local[1]",
            "Examples/s",
            rates[2],
            rates[1],
            "itself on one core",
            ">= 1.6x",
        ),
        Row(
            "Spark read as above, the 1M-Example file in one piece, split by its index",
            "Examples/s",
            n / t_one,
            n / t_parquet,
            "Spark reading Parquet",
            ">= 0.5x",
        ),
        Row(
            "Spark: a Python data source reading nothing, vs Parquet reading the rows",
            "Examples/s",
            n / t_empty,
            n / t_parquet,
            "Spark reading Parquet",
            "(the API's ceiling)",
        ),
    ]
    frame = parquet.repartition(8).cache()
    frame.count()
    out = data / "spark-out"

    def write_tfrecord() -> int:
        frame.write.format("tfrecord").mode("overwrite").save(str(out / "train"))
        return tfr.Manifest.load(str(out / "train")).records

    def write_parquet() -> int:
        frame.write.mode("overwrite").parquet(str(out / "parquet"))
        return n

    def write_nothing() -> int:
        frame.write.format("discard").mode("append").save()
        return n

    t_ours = t_theirs = t_floor = float("inf")
    for _ in range(rep):
        t_ours = min(t_ours, best_of(write_tfrecord, 1)[0])
        t_theirs = min(t_theirs, best_of(write_parquet, 1)[0])
        t_floor = min(t_floor, best_of(write_nothing, 1)[0])
    rows += [
        Row(
            "Spark write of 1M rows (8 tasks), vs Parquet",
            "Examples/s",
            n / t_ours,
            n / t_theirs,
            "Spark writing Parquet",
            ">= 0.5x",
        ),
        Row(
            "Spark: a Python data source discarding the rows, vs Parquet writing them",
            "Examples/s",
            n / t_floor,
            n / t_theirs,
            "Spark writing Parquet",
            "(the API's ceiling)",
        ),
    ]
    frame.unpersist()
    spark.stop()
    return rows


def child(code: str, *args: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], check=True, capture_output=True, text=True
    )
    return out.stdout.split()


class S3Server:
    """moto's S3 server on loopback, in a process of its own (it would otherwise share
    this interpreter's lock with the reader it serves)."""

    def __enter__(self) -> dict:
        import socket
        import urllib.request

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        endpoint = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        return {"endpoint_url": endpoint, "key": "bench", "secret": "bench"}

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait()


def storage_rows(data: Path, n: int, rep: int) -> list[Row]:
    """Reading from a loopback S3 server against the same shards on local disk."""
    import s3fs

    local = data / f"s3-tutorial-{n}"
    if not (local / "train.manifest.json").exists():
        tfr.write_dataset(tutorial_columns(n), str(local / "train"), num_shards=8, progress=False)
    rows = []
    with S3Server() as so:
        fs = s3fs.S3FileSystem(**so)
        fs.mkdir("bench")
        for f in sorted(local.iterdir()):
            fs.put_file(str(f), f"bench/tutorial/{f.name}")
        remote, here = "s3://bench/tutorial/train-*", str(local / "train-*")

        def parse(pattern: str, **kw: object) -> Callable[[], int]:
            def run() -> int:
                batches = tfr.read_examples(pattern, OUR_TUTORIAL_SCHEMA, 1024, **kw)
                return sum(len(b["feature1"]) for b in batches)

            return run

        t_s3 = t_local = float("inf")
        for _ in range(rep):
            t, n_s3 = best_of(parse(remote, storage_options=so), 1)
            t_s3 = min(t_s3, t)
            t, n_local = best_of(parse(here), 1)
            t_local = min(t_local, t)
        assert n_s3 == n_local
        size = sum(f.stat().st_size for f in local.glob("train-*.tfrecord"))
        mb = size / 1e6
        rows.append(
            Row(
                f"read + parse, 8 shards on a loopback S3 server ({mb:.0f} MB)",
                "Examples/s",
                n_s3 / t_s3,
                n_local / t_local,
                "itself on local disk",
                "near the link's rate",
                f"{mb / t_s3:.0f} MB/s from S3",
            )
        )

        picks = np.random.default_rng(0).integers(0, n, size=(20, 256))

        def random_reads(ds: tfr.IndexedDataset) -> Callable[[], int]:
            def run() -> int:
                return sum(len(ds.__getitems__(p.tolist())) for p in picks)

            return run

        s3_ds = tfr.IndexedDataset(remote, storage_options=so)
        local_ds = tfr.IndexedDataset(here)
        t_s3, got = best_of(random_reads(s3_ds), rep)
        t_local, _ = best_of(random_reads(local_ds), rep)
        one_at_a_time = picks[0][:64].tolist()
        t_one, _ = best_of(lambda: sum(len(s3_ds[int(k)]) for k in one_at_a_time), rep)
        rows.append(
            Row(
                "IndexedDataset random reads from S3, batches of 256 (cat_ranges)",
                "records/s",
                got / t_s3,
                got / t_local,
                "itself on local disk",
                "",
                f"{len(one_at_a_time) / t_one:,.0f} records/s one request at a time",
            )
        )
    return rows


# ----------------------------------------------------------------------------- main


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller data; do not write docs")
    ap.add_argument("--data-dir", default=str(ROOT / "bench-data"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--only",
        metavar="REGEX",
        help="run only the rows (and memory notes) whose names match; the page keeps the\n"
        "last full run's figures for the rest and says which rows were run when",
    )
    args = ap.parse_args()
    only = re.compile(args.only) if args.only else None

    def wanted(*names: str) -> bool:
        return only is None or any(only.search(n) for n in names)

    import tensorflow as tf

    scale = 10 if args.quick else 1
    data = Path(args.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    n_small, n_large = 1_000_000 // scale, 4_000 // scale
    n_tut, n_wide, n_write = 1_000_000 // scale, 200_000 // scale, 100_000 // scale
    rep = 1 if args.quick else args.repeat
    rows: list[Row] = []

    print("data:")
    small = ensure(data / f"raw100b-{n_small}.tfrecord", lambda p: write_raw(p, n_small, 100))
    large = ensure(data / f"raw100kb-{n_large}.tfrecord", lambda p: write_raw(p, n_large, 100_000))
    tutorial = ensure(data / f"tutorial-{n_tut}.tfrecord", lambda p: write_tutorial(p, n_tut))
    tutorial_gz = ensure(
        data / f"tutorial-{n_tut}.tfrecord.gz", lambda p: write_tutorial(p, n_tut, "gzip")
    )
    wide = ensure(data / f"wide-{n_wide}.tfrecord", lambda p: write_wide(p, n_wide))

    def measure(name, unit, ours_fn, theirs_fn, against, goal, mb_per_item=0.0, reps=None):
        if not wanted(name):
            return
        # Alternate the two sides so that drift in machine speed hits both alike.
        t_o = t_t = float("inf")
        for _ in range(reps or rep):
            t, n_o = best_of(ours_fn, 1)
            t_o = min(t_o, t)
            t, n_t = best_of(theirs_fn, 1)
            t_t = min(t_t, t)
        assert n_o == n_t, f"{name}: {n_o} items vs {n_t}"
        extra = ""
        if mb_per_item:
            gb_o, gb_t = (n * mb_per_item / t / 1000 for n, t in ((n_o, t_o), (n_t, t_t)))
            extra = f"{gb_o:.2f} GB/s vs {gb_t:.2f} GB/s"
        report(Row(name, unit, n_o / t_o, n_t / t_t, against, goal, extra))

    def report(row: Row) -> None:
        rows.append(row)
        print(
            f"  {row.path:<52} {row.ours:>12,.{digits(row)}f} vs "
            f"{row.theirs:>12,.{digits(row)}f} {row.unit}"
            f"  x{row.ratio:.2f} {row.extra}",
            flush=True,
        )

    print("measuring:")
    measure(
        "raw read, ~100 B records, CRC verified",
        "records/s",
        our_read(small),
        tf_read(tf, small),
        "TensorFlow",
        ">= 13x",
    )
    measure(
        "raw read, ~100 B records, one by one (read_records)",
        "records/s",
        our_read_iter(small),
        tf_read(tf, small),
        "TensorFlow",
        "",
    )
    measure(
        "raw read, ~100 KB records, CRC verified",
        "records/s",
        our_read(large),
        tf_read(tf, large),
        "TensorFlow",
        ">= 1.5x and >= 2 GB/s",
        mb_per_item=0.1,
    )
    measure(
        "read + parse + batch, tutorial schema",
        "Examples/s",
        our_parse(tutorial, OUR_TUTORIAL_SCHEMA, "feature1"),
        tf_parse(tf, tutorial, False),
        "TensorFlow",
        ">= 4x",
    )
    measure(
        "read + parse + batch, wide numeric schema",
        "Examples/s",
        our_parse(wide, OUR_WIDE_SCHEMA, "f000"),
        tf_parse(tf, wide, True),
        "TensorFlow",
        ">= 3x",
    )
    lance_row = "to Arrow: read_arrow vs lance's read_tfrecord, tutorial schema"
    if wanted(lance_row):  # lance is imported for its row only
        measure(
            lance_row,
            "Examples/s",
            our_read_arrow(tutorial),
            lance_read_arrow(tutorial),
            "lance (pylance)",
            ">= 2x",
        )
    measure(
        "to Arrow: read_arrow nullable=True vs its default, tutorial schema",
        "Examples/s",
        our_read_arrow(tutorial, nullable=True),
        our_read_arrow(tutorial),
        "tfrecordkit read_arrow",
        ">= 0.9x",
        reps=3 * rep,
    )
    n_seq, n_comp = 50_000 // scale, 200_000 // scale
    sequences = ensure(data / f"sequences-{n_seq}.tfrecord", lambda p: write_sequences(p, n_seq))
    composite = ensure(data / f"composite-{n_comp}.tfrecord", lambda p: write_composite(p, n_comp))
    measure(
        "SequenceExamples: parse_sequence_example, 8-float frames + ragged tags, batch 256",
        "SequenceExamples/s",
        our_parse_sequences(tf, sequences),
        tf_parse_sequences(tf, sequences),
        "TensorFlow",
        ">= 6x",
        reps=3 * rep,
    )
    measure(
        "read + parse + batch, SparseFeature (10-50 of 10,000)",
        "Examples/s",
        our_parse_composite(tf, composite, "sparse"),
        tf_parse_composite(tf, composite, "sparse"),
        "TensorFlow",
        ">= 6x",
        reps=3 * rep,
    )
    measure(
        "read + parse + batch, RaggedFeature (RowLengths partition)",
        "Examples/s",
        our_parse_composite(tf, composite, "ragged"),
        tf_parse_composite(tf, composite, "ragged"),
        "TensorFlow",
        ">= 6x",
        reps=3 * rep,
    )
    measure(
        "gzip raw read, tutorial Examples",
        "records/s",
        our_read(tutorial_gz),
        tf_read(tf, tutorial_gz, "GZIP"),
        "TensorFlow",
        "",
    )
    measure(
        "gzip read + parse + batch, tutorial schema",
        "Examples/s",
        our_parse(tutorial_gz, OUR_TUTORIAL_SCHEMA, "feature1"),
        tf_parse(tf, tutorial_gz, False, "GZIP"),
        "TensorFlow",
        "",
    )

    shard_dir = data / f"tutorial-shards-{n_tut}"
    ensure(shard_dir, lambda d: write_tutorial_shards(d / "train", n_tut))
    shard_glob = str(shard_dir / "train-*.tfrecord")
    measure(
        "interleave pipeline: parse, cache, shuffle 10k, batch 128, prefetch",
        "Examples/s",
        our_interleave_pipeline(shard_glob),
        tf_interleave_pipeline(tf, shard_glob),
        "TensorFlow",
        ">= 3x",
    )
    measure(
        "pipeline with shuffle 10k + batch 128 + prefetch, vs read + parse alone",
        "Examples/s",
        our_interleave_pipeline(shard_glob, cache=False),
        our_parse_drop(shard_glob, 128),
        "tfrecordkit read_examples",
        ">= 0.9x (overhead < 10%)",
        reps=3 * rep,
    )
    measure(
        "read + parse alone, batches of 128 vs 1,024 (what handing Python a batch costs)",
        "Examples/s",
        our_parse_drop(shard_glob, 128, batch_size=128),
        our_parse_drop(shard_glob, 128),
        "batches of 1,024",
        "",
        reps=3 * rep,
    )

    for transform, name in ((False, "the identity"), (True, "a small dict transform")):
        measure(
            f"parse, per-Example map ({name}), shuffle 10k, batch 1024",
            "Examples/s",
            our_map_pipeline(tutorial, transform),
            tf_map_pipeline(tf, tutorial, transform),
            "TensorFlow",
            ">= 1.5M Examples/s",
        )
    measure(
        "parse, per-Example map (the identity), prefetch(AUTOTUNE)",
        "Examples/s",
        our_map_pipeline(tutorial, False, prefetch=True),
        tf_map_pipeline(tf, tutorial, False, prefetch=True),
        "TensorFlow",
        "",
    )
    n_arrays = 4_000 // scale
    arrays = ensure(data / f"arrays64kb-{n_arrays}.tfrecord", lambda p: write_arrays(p, n_arrays))
    measure(
        "map(num_parallel_calls=AUTOTUNE) vs serial, NumPy on 64 KB arrays",
        "Examples/s",
        our_parallel_map(arrays, tfr.AUTOTUNE),
        our_parallel_map(arrays, None),
        "tfrecordkit serial map",
        ">= 1.5x",
        reps=3 * rep,
    )
    measure(
        "the NumPy function alone (no pipeline) on two threads vs one",
        "arrays/s",
        threads_alone(arrays, 2),
        threads_alone(arrays, 1),
        "one thread",
        "",
        reps=3 * rep,
    )
    measure(
        "map(num_parallel_calls=AUTOTUNE) vs serial, NumPy sorts on 64 KB arrays",
        "Examples/s",
        our_parallel_map(arrays, tfr.AUTOTUNE, numpy_sorts),
        our_parallel_map(arrays, None, numpy_sorts),
        "tfrecordkit serial map",
        ">= 1.5x",
        reps=3 * rep,
    )
    measure(
        "the NumPy sorts alone (no pipeline) on two threads vs one",
        "arrays/s",
        threads_alone(arrays, 2, numpy_sorts),
        threads_alone(arrays, 1, numpy_sorts),
        "one thread",
        "",
        reps=3 * rep,
    )
    measure(
        "map(num_parallel_calls=AUTOTUNE) vs serial, a cheap function holding the GIL",
        "Examples/s",
        our_cheap_map(tutorial, tfr.AUTOTUNE),
        our_cheap_map(tutorial, None),
        "tfrecordkit serial map",
        ">= 1x (never slower)",
        reps=3 * rep,
    )

    if wanted("image pipeline"):
        n_images = 10_000 // scale
        image_dir = data / f"jpeg-shards-{n_images}"
        ensure(image_dir, lambda d: write_image_shards(d / "train", n_images))
        image_glob = str(image_dir / "train-*.tfrecord")
        # One TensorFlow figure for both rows, from as many runs as each of ours: its
        # throughput drifts by a quarter from run to run here.
        image_runs = {
            "float32": our_image_pipeline(image_glob, "float32"),
            "uint8": our_image_pipeline(image_glob, "uint8"),
            "tf": tf_image_pipeline(tf, image_glob),
        }
        image_best = dict.fromkeys(image_runs, 0.0)
        # Machine speed drifts by tens of percent here, so each round's ratios, taken from
        # runs seconds apart, are reported beside the best figures.
        rounds: dict[str, list[float]] = {"float32": [], "uint8": []}
        for _ in range(1 if args.quick else 2 * rep):
            rate = {}
            for key, fn in image_runs.items():
                t, n = best_of(fn, 1)
                assert n == n_images - n_images % 128, (key, n)
                rate[key] = n / t
                image_best[key] = max(image_best[key], rate[key])
            for key, ratios in rounds.items():
                ratios.append(rate[key] / rate["tf"])

        def spread(ratios: list[float]) -> str:
            return (
                f"per round: median {statistics.median(ratios):.2f}x, "
                f"{min(ratios):.2f}x to {max(ratios):.2f}x"
            )

        report(
            Row(
                "image pipeline: parse, decode JPEG, resize 224, float32, batch 128, prefetch",
                "images/s",
                image_best["float32"],
                image_best["tf"],
                "TensorFlow",
                ">= 1.5x",
                spread(rounds["float32"]),
            )
        )
        report(
            Row(
                "image pipeline as above, uint8 output",
                "images/s",
                image_best["uint8"],
                image_best["tf"],
                "TensorFlow (float32)",
                "more than float32",
                spread(rounds["uint8"]),
            )
        )

    cols = tutorial_columns(n_write)
    out_ours, out_tf = data / "write-ours.tfrecord", data / "write-tf.tfrecord"
    measure(
        "write from columns (write_examples)",
        "Examples/s",
        our_write_columns(out_ours, cols),
        tf_write_tutorial(tf, out_tf, cols),
        "TensorFlow tutorial loop",
        ">= 20x",
    )
    measure(
        "write Examples, row by row (encode_example)",
        "Examples/s",
        our_write_rows(out_ours, cols),
        tf_write_tutorial(tf, out_tf, cols),
        "TensorFlow tutorial loop",
        "",
    )
    gz_opts = tf.io.TFRecordOptions(compression_type="GZIP")
    measure(
        "gzip write from columns",
        "Examples/s",
        our_write_columns(data / "write-ours.tfrecord.gz", cols, "gzip"),
        tf_write_tutorial(tf, data / "write-tf.tfrecord.gz", cols, gz_opts),
        "TensorFlow tutorial loop (GZIP)",
        "",
    )

    serialized, raw = tensor_batches()
    measure(
        "parse_tensor: 1,024 float32 [256] tensors into one array",
        "tensors/s",
        repeated(lambda: len(tfr.parse_tensor(serialized, "float32")), 20),
        repeated(tf_parse_tensors(tf, serialized), 20),
        "TensorFlow map_fn / tf.data map",
        ">= 10x",
    )
    raw_tensor = tf.constant(raw)
    measure(
        "decode_raw: 1,024 x 1 KB Python bytes into float32",
        "values/s",
        repeated(lambda: len(tfr.decode_raw(raw, "float32")), 200),
        repeated(lambda: len(tf.io.decode_raw(tf.constant(raw), tf.float32).numpy()), 200),
        "TensorFlow (tf.constant + decode_raw)",
        ">= 5x",
    )
    raw_objects = np.array(raw, dtype=object)
    measure(
        "decode_raw: the same, each library's own batch in (one copy each)",
        "values/s",
        repeated(lambda: len(tfr.decode_raw(raw_objects, "float32")), 200),
        repeated(lambda: len(tf.io.decode_raw(raw_tensor, tf.float32).numpy()), 200),
        "TensorFlow decode_raw on a tensor",
        "",
    )
    raw_file = ensure(data / "raw-floats-40960.tfrecord", lambda p: write_raw_examples(p, raw, 40))
    measure(
        "decode_raw in a pipeline: parse, batch 1,024, decode_raw",
        "Examples/s",
        our_decode_raw_pipeline(raw_file),
        tf_decode_raw_pipeline(tf, raw_file),
        "tf.data",
        ">= 5x",
    )

    stats_line = None
    if wanted("stats"):
        stat_rows, stats_line = stats_rows(tf, tutorial, rep)
        for row in stat_rows:
            report(row)

    speedup = None
    if wanted("write_dataset"):
        # write_dataset on a million rows, against the tutorial loop's rate measured above
        # (or in the last full run, when only some rows run).
        tf_loop_rate = next(
            r.theirs
            for r in [*rows, *previous_rows(Path(args.out))]
            if r.path.startswith("write from columns")
        )
        big_cols = tutorial_columns(n_tut)
        per_workers = {}
        for workers in (1, 2):

            def run_dataset(workers=workers) -> int:
                m = tfr.write_dataset(
                    big_cols,
                    data / "dataset" / "train",
                    num_shards=8,
                    workers=workers,
                    overwrite=True,
                    progress=False,
                )
                return m.records

            t, n = best_of(run_dataset, rep)
            per_workers[workers] = n / t
            report(
                Row(
                    f"write_dataset, {n:,} rows into 8 shards, workers={workers}",
                    "Examples/s",
                    n / t,
                    tf_loop_rate,
                    "TensorFlow tutorial loop",
                    ">= 20x (default workers: all cores)" if workers == 2 else "",
                )
            )
        speedup = per_workers[2] / per_workers[1]
        print(f"  write_dataset speedup from 1 to 2 workers: x{speedup:.2f}")

        # A stream of Arrow record batches (pyarrow datasets, Hugging Face datasets).
        import pyarrow as pa

        big_table = pa.table(big_cols)

        def run_stream() -> int:
            batches = big_table.to_batches(max_chunksize=65_536)
            m = tfr.write_dataset(
                pa.RecordBatchReader.from_batches(big_table.schema, batches),
                data / "dataset" / "train",
                num_shards=8,
                overwrite=True,
                progress=False,
            )
            return m.records

        t, n = best_of(run_stream, rep)
        report(
            Row(
                f"write_dataset from a pyarrow RecordBatchReader, {n:,} rows into 8 shards",
                "Examples/s",
                n / t,
                tf_loop_rate,
                "TensorFlow tutorial loop",
                ">= 20x",
            )
        )

        # Rows as they come: an iterable of dicts built as it is consumed (a generator), the
        # same with NumPy values as items of arrays come (a label and a 16-float embedding),
        # and a pandas DataFrame whose text column is str, as pandas 3 stores it (Arrow).
        import pandas as pd

        keys = list(big_cols)
        values = [big_cols[k].tolist() for k in keys]
        rng = np.random.default_rng(7)
        labels = rng.integers(0, 1000, n_tut)
        embeddings = rng.random((n_tut, 16), dtype=np.float32)
        frame = pd.DataFrame(big_cols)
        frame["feature2"] = pd.Series(big_cols["feature2"]).str.decode("ascii").astype("str")
        inputs = {
            "a generator of dicts": lambda: (
                dict(zip(keys, row, strict=True)) for row in zip(*values, strict=True)
            ),
            "a generator of NumPy-valued dicts": lambda: (
                {"label": labels[i], "embedding": embeddings[i]} for i in range(n_tut)
            ),
            "a pandas DataFrame (a str column)": lambda: frame,
        }
        for name, make in inputs.items():

            def run_input(make=make) -> int:
                m = tfr.write_dataset(
                    make(), data / "dataset" / "train", num_shards=8, overwrite=True, progress=False
                )
                return m.records

            t, n = best_of(run_input, rep)
            report(
                Row(
                    f"write_dataset from {name}, {n:,} rows into 8 shards",
                    "Examples/s",
                    n / t,
                    tf_loop_rate,
                    "TensorFlow tutorial loop",
                    "",
                )
            )

        # Writing is linear in the rows: 10M rows with a bytes column, against 1M.
        rates = {}
        for n_rows in (1_000_000 // scale, 10_000_000 // scale):
            wide_cols = {
                "label": np.arange(n_rows, dtype=np.int64) % 1000,
                "name": np.char.add(b"row-", np.arange(n_rows).astype("S8")),
            }

            def run_rows(cols=wide_cols) -> int:
                m = tfr.write_dataset(
                    cols, data / "rows" / "train", num_shards=8, overwrite=True, progress=False
                )
                return m.records

            t, n = best_of(run_rows, rep)
            rates[n] = n / t
        (small, rate_small), (large, rate_large) = sorted(rates.items())
        report(
            Row(
                f"write_dataset with a bytes column, {large:,} rows",
                "rows/s",
                rate_large,
                rate_small,
                f"itself at {small:,} rows",
                ">= 0.8x (linear)",
            )
        )

    if wanted("tfrecord package"):
        n_pkg = min(n_tut, 200_000)
        pkg_file = ensure(data / f"tutorial-{n_pkg}.tfrecord", lambda p: write_tutorial(p, n_pkg))
        n, secs = child(TFRECORD_CHILD, str(pkg_file))
        t_o, n_o = best_of(our_parse(pkg_file, OUR_TUTORIAL_SCHEMA, "feature1"), rep)
        assert int(n) == n_o
        report(
            Row(
                "read + parse vs the tfrecord package",
                "Examples/s",
                n_o / t_o,
                int(n) / float(secs),
                "tfrecord (PyPI)",
                ">= 120x",
            )
        )

    rss_line = None
    if wanted("Streaming"):
        big_n = 20_000 // scale
        big = ensure(
            data / f"stream-{big_n}.tfrecord", lambda p: write_raw(p, big_n, 100_000, seed=3)
        )
        n, rss = child(RSS_CHILD, str(big))
        size_gb = big.stat().st_size / 1e9
        rss_mib = int(rss) / 2**20
        print(f"  streaming a {size_gb:.1f} GB file: peak RSS {rss_mib:.0f} MiB")
        rss_line = (
            f"Streaming a {size_gb:.1f} GB file end to end: peak RSS **{rss_mib:.0f} MiB**"
            " (goal < 300 MB)."
        )

    convert_line = None
    if wanted("convert peak RSS"):
        # convert's peak memory at two table sizes: the same when it streams.
        peaks = {}
        for n_rows in (6_000 // scale, 24_000 // scale):
            table = write_convert_table(data / "convert", n_rows)
            jpeg_bytes = sum(
                (data / "convert" / "images" / f"{i}.jpg").stat().st_size
                for i in range(min(n_rows, 1000))
            ) * (n_rows / min(n_rows, 1000))
            n, rss = child(CONVERT_CHILD, str(table), str(data / "convert" / "out"))
            assert int(n) == n_rows
            peaks[n_rows] = (int(rss) / 2**20, jpeg_bytes / 1e9)
            print(
                f"  convert {n_rows:,} rows ({jpeg_bytes / 1e9:.2f} GB of JPEGs): peak RSS "
                f"{peaks[n_rows][0]:.0f} MiB"
            )
        (small, (rss_small, gb_small)), (large, (rss_large, gb_large)) = sorted(peaks.items())
        convert_line = (
            f"`convert` peak RSS: **{rss_large:.0f} MiB** for {large:,} rows ({gb_large:.1f} GB of "
            f"JPEGs), **{rss_small:.0f} MiB** for {small:,} rows ({gb_small:.2f} GB): "
            f"x{rss_large / rss_small:.2f} at 4x the rows (goal < 500 MB, the same within 20%)."
        )

    arrow_rss_line = None
    if wanted("vs cat", "read_arrow with its default"):
        speed_rows, arrow_rss_line = memory_speed_rows(data, scale, rep)
        for row in speed_rows:
            report(row)

    if wanted("S3"):
        for row in storage_rows(data, 1_000_000 // scale, rep):
            report(row)

    if wanted("Ray"):
        # Last, as a Ray cluster keeps processes running: ray.data.read_tfrecords goes through
        # one tf.train.Example per row, so it runs once.
        t_ray, n_ray = best_of(ray_read(tutorial, ours=False), 1)
        t_arrow, n_arrow = best_of(our_read_arrow(tutorial), rep)
        t_in_ray, n_in_ray = best_of(ray_read(tutorial, ours=True), rep)
        assert n_ray == n_arrow == n_in_ray, (n_ray, n_arrow, n_in_ray)
        for path, t, n in (
            ("to Arrow: read_arrow vs ray.data.read_tfrecords, tutorial schema", t_arrow, n_arrow),
            (
                "Ray Data read, materialized: tfr.ray.read vs ray.data.read_tfrecords",
                t_in_ray,
                n_in_ray,
            ),
        ):
            report(Row(path, "Examples/s", n / t, n_ray / t_ray, "Ray Data", ">= 2x"))
        import ray

        ray.shutdown()

    if wanted("Spark"):
        for row in spark_rows(data, shard_glob, tutorial, n_tut, rep, n_ray / t_ray):
            report(row)

    if args.quick:
        return
    workers_line = None
    if speedup is not None:
        workers_line = (
            f"`write_dataset` from 1 to 2 workers: **x{speedup:.2f}** (each worker encodes "
            "and writes whole shards; the TensorFlow rate for its rows is the\ntutorial loop's, "
            "measured on the 'write from columns' data)."
        )
    notes = [rss_line, arrow_rss_line, stats_line, convert_line, workers_line]
    if only is not None:
        rows[:], notes, date, host = merged(Path(args.out), rows, notes)
    else:
        date, host = None, machine()
    paragraphs = [line for note in notes if note for line in (note, "")]
    write_doc(Path(args.out), rows, paragraphs[:-1], tf.__version__, rep, date, host)


def previous_rows(out: Path) -> list[Row]:
    """The rows of the page's last run, from the JSON beside it."""
    saved = out.with_suffix(".json")
    if not saved.exists():
        return []
    keys = {f.name for f in fields(Row)}
    return [Row(**{k: v for k, v in r.items() if k in keys}) for r in json.loads(saved.read_text())]


def merged(
    out: Path, rows: list[Row], notes: list[str | None]
) -> tuple[list[Row], list[str | None], str, str]:
    """The last full run's rows and memory notes with those just measured in their place
    (a new row after the one measured before it), each saying when and where it ran, the
    full run's date and its machine."""
    text = out.read_text() if out.exists() else ""
    found_host = re.search(r"^- Machine: (.*)$", text, re.M)
    host = found_host.group(1) if found_host else machine()
    found = re.search(r"^- Date: (\d{4}-\d{2}-\d{2})(.*)$", text, re.M)
    date = found.group(1) if found else time.strftime("%Y-%m-%d")
    today = time.strftime("%Y-%m-%d")
    where = "" if host == machine() else f" on {cpu_name(machine())}"
    fresh = {r.path: replace(r, rerun=today + where) for r in rows}
    earlier = reruns(found.group(2) if found else "")
    kept = [
        fresh.pop(r.path, None) or (r if r.rerun else replace(r, rerun=earlier(r.path)))
        for r in previous_rows(out)
    ]
    # A new row goes after the row measured before it in this run (last if none was).
    order = [r.path for r in rows]
    for path, row in fresh.items():
        on_page = [p.path for p in kept]
        before = [p for p in order[: order.index(path)] if p in on_page]
        kept.insert(on_page.index(before[-1]) + 1 if before else len(kept), row)
    table_end = text.find("\n\n", text.find("|---|"))
    body = text[table_end:].split("\nTensorFlow reads through", 1)[0]
    old_notes = [p.strip() for p in body.split("\n\n") if p.strip()]
    merged_notes = [
        old_notes[i] if note is None and i < len(old_notes) else note
        for i, note in enumerate(notes)
    ]
    return kept, merged_notes, date, host


def reruns(line: str) -> Callable[[str], str]:
    """For pages whose date line still lists each partial run ("rows matching `P` re-run
    alone on D[ on M]"): when the row of a path was last measured alone, or ""."""
    part = r"rows matching `(.*?)` re-run alone on (\S+?)(?: on ([^,;]+)[^;]*)?(?:;|$)"
    runs = re.findall(part, line)

    def when(path: str) -> str:
        for pattern, day, cpu in reversed(runs):
            if re.search(pattern, path):
                return day + (f" on {cpu_name(cpu)}" if cpu else "")
        return ""

    return when


def cpu_name(host: str) -> str:
    """A machine line's processor, without its trademarks: `Intel Xeon`."""
    cpu = host.split(",", 1)[0]
    return re.sub(r"\s+", " ", re.sub(r"\((R|TM)\)|\bProcessor\b|\bCPU\b", "", cpu)).strip()


def digits(row: Row) -> int:
    """Decimals to show: rates in GB/s are small numbers."""
    return 2 if row.unit == "GB/s" else 0


def write_doc(
    out: Path,
    rows: list[Row],
    notes: list[str],
    tf_version: str,
    rep: int,
    date: str | None,
    host: str,
) -> None:
    reran = any(r.rerun for r in rows)
    try:
        import importlib.metadata as md

        pkg_version = md.version("tfrecord")
    except Exception:
        pkg_version = "?"
    lines = [
        "# Benchmarks",
        "",
        "Measured side by side in one run by `python benchmarks/run.py` (see the README). Each",
        f"figure is the best of {rep} runs ({3 * rep} for the pipeline overhead, AUTOTUNE and "
        f"parsing-vocabulary rows, which take a tenth of a second to half a second, {2 * rep} "
        "for images),",
        "alternating the libraries, over data the script",
        "builds itself; ratios are tfrecordkit's throughput divided by the other library's on",
        "the same file.",
        "",
        f"- Machine: {host}",
        f"- Python {platform.python_version()}, tfrecordkit {tfr.__version__}, "
        f"TensorFlow {tf_version}, tfrecord {pkg_version}",
        f"- Date: {date or time.strftime('%Y-%m-%d')}"
        + (" (rows measured alone since then say when)" if reran else ""),
        "",
        "| path | unit | tfrecordkit | other | other library | ratio | goal |"
        + (" measured alone |" if reran else ""),
        "|---|---|---:|---:|---|---:|---|" + ("---|" if reran else ""),
    ]
    for r in rows:
        note = f" ({r.extra})" if r.extra else ""
        lines.append(
            f"| {r.path}{note} | {r.unit} | {r.ours:,.{digits(r)}f} | {r.theirs:,.{digits(r)}f} "
            f"| {r.against} "
            f"| **{r.ratio:.2f}x** | {r.goal} |" + (f" {r.rerun} |" if reran else "")
        )
    lines += [
        "",
        *notes,
        "",
        "TensorFlow reads through `tf.data.TFRecordDataset(...).batch(1024)`",
        "(parsing with `.map(tf.io.parse_example)`); tfrecordkit through `tfr.read_batches`",
        "and `tfr.read_examples` with batches of 1024. Writing compares the TensorFlow",
        "tutorial's loop of `tf.train.Example(...).SerializeToString()` with",
        "`RecordWriter.write_examples` on the same NumPy columns, and with",
        "`tfr.encode_example` per row. tfrecordkit's writers also fsync each file before",
        "giving it its final name; TensorFlow's do not.",
        "",
        "The parsing-vocabulary rows hand the same `tf.io` spec objects to both sides. The",
        "SequenceExample row reads 50,000 clips (two context ints; 5-30 steps of an 8-float",
        "`FixedLenSequenceFeature` and a `RaggedFeature` of 0-3 int64 tags per step):",
        "TensorFlow with `.batch(256).map(tf.io.parse_sequence_example)`, tfrecordkit with",
        "`Dataset.parse(context, sequence).batch(256)`, which parses each batch of records in",
        "one native call. The sparse and ragged rows read 200,000 Examples in batches of 1024:",
        "bags of 10-50 word ids of 10,000 with weights (`SparseFeature`; the ids are unsorted",
        "in the file, so every Example's entries are sorted) and 1-8 words of 1-6 token ids",
        "(`RaggedFeature` with a `RowLengths` partition).",
        "TensorFlow's speed on these three rows moves from run to run on this host more than",
        "tfrecordkit's does, and the ratios with it: its SparseFeature parse has run at 280,000",
        "to 410,000 Examples/s, its RaggedFeature parse at 530,000 to 830,000 and its",
        "SequenceExample parse at 165,000 to 320,000 clips/s.",
        "",
        "The Arrow rows read the tutorial-schema file of 1M Examples into Arrow record",
        "batches of 65,536 rows: `tfr.read_arrow` against lance's `read_tfrecord` (pylance",
        "0.39, the last release with it; schema from its `infer_tfrecord_schema`, bytes as",
        "binary on both sides) and against `ray.data.read_tfrecords` (materialized on a local",
        "Ray cluster of the host's cores; it builds one `tf.train.Example` per row, so it runs",
        "once). The Ray Data row puts `tfr.ray.read` in the same place: the same file read",
        "inside Ray and materialized in its object store, Ray's scheduling included.",
        "The nullable row reads the same file with `nullable=True` against the default: every",
        "feature nullable, the parser noting which rows hold a value as it goes, the",
        "validity handed to Arrow as its bitmap.",
        "",
        "The per-Example map rows read 200,000 tutorial Examples: tfrecordkit's engine parses",
        "them, calls `f` on each (a dict of NumPy scalars, each made from its column's memory)",
        "and runs the shuffle and batch after it natively, filling each feature's array of a",
        "batch straight from the NumPy scalars (or the bytes) of its elements (a prefetch",
        "after it runs on an engine thread that hands elements over in chunks);",
        "TensorFlow parses with `parse_single_example` in a `map` and runs `f` as a traced",
        "function. Making each dict through NumPy's indexing instead, and stacking a batch",
        "with one NumPy call per feature, costs about 100 ns and 170 ns more per Example on",
        "the AMD host: run in turn, 0.85M to 1.01M against 1.43M to 1.67M Examples/s (the",
        "identity), and 0.60M to 0.76M against 1.05M to 1.20M (the dict transform). That",
        "host's speed varies through the day: four runs of these rows gave 1.37M to 1.96M",
        "(the identity) and 1.03M to 1.39M (the dict transform) Examples/s. The dict",
        "transform's own",
        "arithmetic on NumPy scalars takes about 210 ns per Example. The AUTOTUNE rows compare",
        "`map(f, num_parallel_calls=AUTOTUNE)` with a serial",
        "`map(f)` on the same pipeline, for two NumPy functions on 64 KB arrays that spend over",
        "nine tenths of their time inside NumPy's loops, where the GIL is let go: one makes 20",
        "calls of a few microseconds each, the other two sines and two sorts (about 40 us a",
        "sort). Beside each, a row runs the function alone, with no pipeline, on two threads",
        "against one: what threads can give it on the host. The GIL changes hands around every",
        "NumPy call, and on the Intel host, a virtual machine, each hand-over costs about as much",
        "as a short call, so the first function gains nothing from a second thread even alone",
        "(0.65x to 1.00x there, 1.31x to 1.51x on the AMD host, where it reaches 1.08x in the",
        "pipeline) and AUTOTUNE keeps it serial on the Intel host; two processes run it 1.9x",
        "faster, but handing its arrays to them through pipes and back made it 0.5x to 0.6x as",
        "fast. The sorts gain 1.4x to 1.75x alone on the Intel host (1.96x on the AMD one), and",
        "1.06x to 1.5x in the pipeline from run to run there (1.67x to 1.71x on the AMD host),",
        "where the reading, the parsing and the handing over of elements share the two cores",
        "with them; on both hosts a map thread spends about a quarter of its time in the",
        "kernel, handing the GIL over. AUTOTUNE times each way for 50 ms, from the",
        "first results in to the end of the probe (so that neither the threads' start nor the",
        "last tasks trickling in count), and keeps the faster for 2 s: on the 4,000 arrays of",
        "these rows, about half a second, the probes take a fifth of the run.",
        "",
        "The pipeline rows run the ImageNet-style tf.data interleave pipeline",
        "(`list_files → interleave(AUTOTUNE, deterministic=False) → parse → cache → shuffle(10000)",
        "→ batch(128, drop_remainder=True) → prefetch`) on 1M Examples in 8 shards, TensorFlow",
        "parsing with `parse_single_example` in its `map`, as such pipelines do. The image rows",
        "run the usual ImageNet pipeline (`parse → decode_jpeg(channels=3) → cast / 255 → resize",
        "224x224 → batch(128) → prefetch`) on 10,000 JPEGs of up to 500x375 pixels (quality 90)",
        "cut from the photographs that ship inside scikit-learn and scikit-image;",
        "tfrecordkit's side is `parse(...).decode_image('image', size=224, dtype=...)`. JPEG",
        "decoding dominates both: on one core, zune-jpeg takes about 0.8 ms per image and",
        "TensorFlow's libjpeg-turbo about 0.75 ms, about three quarters of either pipeline's CPU",
        "time. With decoders this close, 1.5x TensorFlow would leave about 0.1 ms per image for",
        "resizing, batching and the rest, which is why the float32 goal is not met here. Decoding",
        "at a reduced DCT scale does not apply to these images (224 is more than half of 375) and",
        "is not used for larger ones either: zune-jpeg has no scaled decode, and jpeg-decoder's",
        "1/8-scaled decode of a 1920x1280 JPEG (10.2 ms) is no faster than zune-jpeg's full",
        "decode (10.6 ms), as entropy decoding dominates. Beside the best figures, the image rows",
        "give the ratios within each round, whose runs are seconds apart: TensorFlow's image",
        "pipeline alone has run at anywhere from 1,150 to 1,770 images/s on one 2-core host.",
        "",
        "The overhead row runs the same pipeline without its cache against `tfr.read_examples`",
        "reading the same shards in batches of 1,024. Batches of 128 travel from the batching",
        "thread to the parsing one up to 2,048 Examples at a time and are parsed together, so",
        "their size costs little; what the pipeline adds is the shuffle (each record copied",
        "once, from the chunk it was read into, into a 1.3 MB buffer, and drawn from it at",
        "random, the draws made four ahead so that their entries are fetched from memory",
        "meanwhile) and the merging of the reader threads' chunks into batches on a thread",
        "of its own. Both sides keep this host's two cores busy: `read_examples` parses on",
        "its read-ahead thread whenever the caller is still busy with the batch before, and",
        "the pipeline's batching thread parses whenever the prefetched batches wait. So the",
        "row compares the CPU each side spends per Example: on the Intel host, at best, 244",
        "ns for the pipeline, 216 ns for the same pipeline without its shuffle, and 172 ns",
        "for `read_examples`; on the AMD host 188, 178 and 142 ns. A profile there puts the",
        "difference in many small parts: the shuffle's copies and draws (about 20 ns, which",
        "neither a buffer that fits the cache nor drawing further ahead reduces), the",
        "records' trips from the reader threads through the batching thread, and their",
        "origins and keys; the parse costs both sides alike. They keep the row below 0.9x.",
        "",
        "The row after it reads the same shards with `read_examples` in batches of 128 against",
        "batches of 1,024: what a batch's size costs. The read-ahead thread hands small",
        "batches over in runs of up to 1,024 records (one at a time, they cost the two",
        "threads a wake-up each, and the row was 13% slower), but each is still parsed, and",
        "made into a dict of arrays, on its own. Most of what that cost was the allocator's:",
        "the caller freed each batch's arrays, which the reading thread had allocated in its",
        "own glibc arena while it went on allocating there, and nine in ten of the caller's",
        "sleeps (0.4 per batch) were waits for that arena's lock. The caller now copies a",
        "small batch parsed ahead and sends the original back to be freed where it was",
        "allocated: the row went from 0.45x to 0.62x in back-to-back runs. Built with mimalloc",
        "instead, whose frees from another thread take no lock, it ran at 0.64x, but",
        "`read_examples` of 100 KB bytes features fell from 5.2 to 3.2 GB/s and peak RSS rose",
        "by a quarter (81 to 100 MiB). The pipeline above parses its batches of 128 up to",
        "2,048 Examples at a time and hands them over from one unit.",
        "",
        "The `tf.io` rows: `parse_tensor` decodes 1,024 `tf.io.serialize_tensor` bytes of",
        "float32 [256] arrays into one array in one native call; TensorFlow's figure is the",
        "faster of `tf.map_fn(tf.io.parse_tensor)` in a `tf.function` and a parallel",
        "`tf.data` map batched back. `decode_raw` reads 1,024 values of 1 KB as float32:",
        "from a Python list of bytes (TensorFlow needs `tf.constant` first), from each",
        "library's own batch (an object array of bytes; a string tensor), and in a pipeline",
        "that parses one bytes feature, batches 1,024 and decodes it. On its own batch each",
        "side does one copy of the bytes into the result, so neither can be much faster than",
        "the other there: the 5x goal is out of reach for the call itself, and the",
        "pipeline row is where the rest of the work shows.",
        "",
        "The statistics row runs `tfr.stats` over the tutorial file of 1M Examples (two int64,",
        "one bytes and one float feature): presence, kinds, list lengths, moments, quantiles,",
        "distinct counts, top values and length histograms of every feature, in one pass on",
        "a reader thread and one worker per core. Its TensorFlow figure is `tf.data` reading",
        "and parsing the same file with no statistics at all, the least any",
        "TensorFlow-based pass (TFDV's included) does. TFDV itself runs when",
        "`TFDV_PYTHON` names a Python that has `tensorflow-data-validation`: its",
        "dependencies pin TensorFlow, Beam and pyarrow releases that cannot share an",
        "environment with the rest of this benchmark.",
        "",
        "The Spark rows run in a local Spark 4.0 SparkSession (`local[2]`, and `local[1]` for the",
        "scaling row) over the tutorial data in 8 shards: read, then `count(*)` and",
        "`sum(feature1)` in one query, against Spark reading the same rows from Parquet (its",
        "vectorized reader; the file written once by Spark) and against `ray.data.read_tfrecords`",
        "from the Ray rows; and over the same rows in one file, which Spark reads as two",
        "partitions through the file's `.idx` sidecar. A query of a Python data source pays a",
        "fixed cost that Parquet does not: Spark plans it in a Python worker (the source",
        "created, its schema and partitions computed), each task's worker unpickles the reader,",
        'and the rows cross from Python to the JVM as Arrow batches. The rows marked "the',
        "API's ceiling\" measure that cost alone, with Python data sources that read no rows",
        "or drop the rows they are given: a query that reads nothing already takes more than",
        "half as long as Parquet's whole query of the million rows, and a write that discards",
        "its rows is slower than half Parquet's write. That is why the ratios to Parquet and",
        "the gain from a second core stay below their goals at this size: the goals sit at or",
        "above what any Python data source reaches on Spark 4.0. The write rows write the same",
        "rows, cached in memory in 8 partitions, as TFRecords (a shard per task, committed with",
        "a manifest), as Parquet, and into the discarding source.",
        "",
        "The large-record rows read one GB of 100 KB, 1 MB and 8 MB records (and of Examples",
        "holding them as one bytes feature, for `read_arrow` and `read_examples`) from the",
        "page cache, against",
        "`cat FILE > /dev/null` of the same file in the same minute. `read_records` and",
        "`read_batches` read each large record straight from the file into the `bytes` they",
        "hand out (`read_batches` reads ahead on a thread of its own until the first large",
        "record, then in place); `read_arrow` reads each large record straight into the end",
        "of its batch's bytes column and parses it there, in batches bounded at 4 MiB. A",
        "column's first value stays where it was read; later values move down over their",
        "record while it is in the CPU's cache, and a record over 1 MiB starts a batch. Its",
        "default arguments include inferring the schema from the first 16 MiB of records.",
        "`read_examples` hands each value out as a `bytes`, which it is copied into whatever",
        "the reader does: it reads records of up to 1 MiB ahead on a thread of its own (large",
        "ones into buffers made for them), so that the two copies run on two cores, and",
        "larger ones in place, as `read_arrow` does. A `tfr.Dataset`",
        "reads large records on its reader threads into buffers of their own, in units of",
        "1 MiB, and copies each into its `bytes` as it hands it out.",
        "Checksums of these records are taken with VPCLMULQDQ (crc-fast), at 28-30 GB/s on one",
        "core here (those of records up to 256 bytes with the CRC32 instruction). `cat`",
        "(coreutils 9.1) reads into one 128 KiB buffer that stays in the CPU's cache and writes",
        "nothing; a reader that hands each record out in memory of its own writes every byte",
        "once more.",
        "",
        "The object-storage rows serve the tutorial-schema data (8 shards) from moto's S3",
        "server, in a process of its own on loopback, and read it with",
        "`read_examples(..., storage_options=...)`: 4 MiB ranged requests, two fetched ahead",
        "of the parser. The server is Python and shares the host's two cores with the reader,",
        "so the figure is a floor for what a real link gives. The random-read row asks",
        "`IndexedDataset.__getitems__` for 20 batches of 256 random records (each batch's",
        "records of one file fetched together with `cat_ranges`).",
        "",
        "## Running it",
        "",
        "```bash",
        ".venv/bin/pip install '.[bench]'   # TensorFlow CPU, the tfrecord package, lance, Ray",
        ".venv/bin/python benchmarks/run.py       # about half an hour; rewrites this page",
        ".venv/bin/python benchmarks/run.py --quick   # a tenth of the data, prints only",
        ".venv/bin/python benchmarks/run.py --only 'vs cat|raw read'   # some rows, in place",
        "```",
        "",
        "`--only` runs the rows (and memory notes) whose names match, puts their figures in",
        "place of the last full run's on this page, and says so on its date line.",
        "",
        "The data (about 5 GB, including the 2 GB streaming file) goes to `bench-data/`.",
        "Throughput on shared virtual machines drifts by tens of percent from minute to",
        "minute; the ratios, taken side by side, are the figures to compare.",
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(f"wrote {out}")
    (out.with_suffix(".json")).write_text(
        json.dumps([r.__dict__ | {"ratio": r.ratio} for r in rows], indent=1)
    )


if __name__ == "__main__":
    main()
