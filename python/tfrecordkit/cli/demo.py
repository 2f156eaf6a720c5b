"""The ``tfrecordkit demo`` job: the TFRecord tutorial's dataset, end to end."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import click
import numpy as np

from ..datasets.index import count
from ..datasets.verify import verify
from ..io.records import RecordWriter, read_records
from ..schema.example import encode_example
from ..schema.features import FixedLen, Schema, parse_examples

STRINGS = np.array([b"cat", b"dog", b"chicken", b"horse", b"goat"])
SCHEMA = Schema(
    {
        "feature0": FixedLen([], "int64", default=0),
        "feature1": FixedLen([], "int64", default=0),
        "feature2": FixedLen([], "bytes", default=b""),
        "feature3": FixedLen([], "float32", default=0.0),
    }
)


def sample_columns(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The tutorial's four features: bool, int in [0, 5), a string from a table, a normal."""
    rng = np.random.default_rng(seed)
    feature1 = rng.integers(0, 5, n)
    return {
        "feature0": rng.choice([False, True], n),
        "feature1": feature1,
        "feature2": STRINGS[feature1],
        "feature3": rng.standard_normal(n),
    }


def claim(directory: str) -> None:
    """Makes ``directory`` the demo's, marked as such: a new or empty one, or one an earlier
    run marked (whose files a run replaces). A directory of other files is refused."""
    marker = os.path.join(directory, ".tfrecordkit-demo")
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise NotADirectoryError(20, "a file is there, not a directory", directory)
    if os.path.isdir(directory) and os.listdir(directory) and not os.path.exists(marker):
        raise click.BadParameter(
            f"{directory} holds files the demo did not write: give it a new or empty one",
            param_hint="'--dir'",
        )
    os.makedirs(directory, exist_ok=True)
    with open(marker, "w", encoding="utf-8") as f:
        f.write("written by tfrecordkit demo, which replaces what it wrote here\n")


def run(directory: str, n: int, echo: Callable[[str], None]) -> int:
    """Writes, counts, verifies and parses a sample dataset into ``directory`` (which
    exists: the command makes it); returns an exit code."""
    cols = sample_columns(n)
    rows = [
        {k: cols[k][i] for k in ("feature0", "feature1", "feature2", "feature3")} for i in range(n)
    ]
    failures = 0
    for name, compression in (("sample.tfrecord", None), ("sample.tfrecord.gz", "gzip")):
        path = os.path.join(directory, name)
        t0 = time.perf_counter()
        with RecordWriter(path, compression) as writer:
            for row in rows:
                writer.write(encode_example(row))
        t_write = time.perf_counter() - t0
        size = os.path.getsize(path)
        echo(f"wrote   {path}: {n:,} Examples, {size:,} bytes in {t_write:.3f}s")

        records = count(path)
        (report,) = verify(path)
        status = "ok" if report.ok and records == n else "FAILED"
        echo(f"verify  {path}: {records:,} records, checksums {status}")
        failures += status != "ok"

        t0 = time.perf_counter()
        parts = []
        batch: list[bytes] = []
        for record in read_records(path):
            batch.append(record)
            if len(batch) == 1024:
                parts.append(parse_examples(batch, SCHEMA))
                batch = []
        if batch:
            parts.append(parse_examples(batch, SCHEMA))
        t_read = time.perf_counter() - t0
        parsed = {k: np.concatenate([p[k] for p in parts]) for k in SCHEMA}
        same = (
            np.array_equal(parsed["feature0"], cols["feature0"].astype(np.int64))
            and np.array_equal(parsed["feature1"], cols["feature1"])
            and list(parsed["feature2"]) == list(cols["feature2"])
            and np.array_equal(parsed["feature3"], cols["feature3"].astype(np.float32))
        )
        status = "match the source" if same else "DO NOT match the source"
        rate = n / t_read if t_read else float("inf")
        echo(f"parse   {path}: {n:,} Examples in {t_read:.3f}s ({rate:,.0f}/s); values {status}")
        failures += not same
    first = {k: (v[0].item() if hasattr(v[0], "item") else v[0]) for k, v in parsed.items()}
    echo(f"first Example: {first}")
    failures += convert_and_load(directory, echo)
    echo("demo finished: all checks passed" if not failures else "demo FAILED")
    return 1 if failures else 0


def convert_and_load(directory: str, echo: Callable[[str], None], n: int = 48) -> int:
    """A CSV of ``split,image_uri,label`` rows over generated PNGs, converted with
    :func:`convert`, read back through a shuffled, batched pipeline, and decoded with
    :meth:`Dataset.decode_image`; returns failures."""
    import csv

    from PIL import Image

    from ..conversion import convert, load

    images = os.path.join(directory, "images")
    os.makedirs(images, exist_ok=True)
    rng = np.random.default_rng(0)
    labels = ["circle", "square", "triangle"]
    rows = []
    for i in range(n):
        path = os.path.join(images, f"img{i:03d}.png")
        pixels = rng.integers(0, 256, (24 + i % 8, 32, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(path)
        split = "TRAIN" if i % 4 < 2 else ("VALIDATION" if i % 4 == 2 else "TEST")
        rows.append({"split": split, "image_uri": path, "label": labels[i % 3]})
    table = os.path.join(directory, "images.csv")
    with open(table, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, ["split", "image_uri", "label"])
        writer.writeheader()
        writer.writerows(rows)
    out = os.path.join(directory, "converted")
    summary = convert(table, out, num_shards=2, overwrite=True, progress=False)
    echo(f"convert {table}: {summary.rows} rows, labels {summary.labels}")
    seen = 0
    for batch in load(out, "train").shuffle(64, seed=0).batch(8):
        heights = batch["image_height"].tolist()
        seen += len(heights)
    want = sum(r["split"] == "TRAIN" for r in rows)
    status = "ok" if seen == want and summary.discarded == 0 else "FAILED"
    echo(f"load    {out} (train): {seen} Examples in shuffled batches of 8, {status}")
    failed = status != "ok"

    # Decoded on the pipeline's threads, each image must equal Pillow's reading of its file.
    sources = {}
    for r in rows:
        if r["split"] == "TRAIN":
            with Image.open(r["image_uri"]) as img:
                source = np.asarray(img)
            sources[source.tobytes()] = source.shape
    exact = decoded = 0
    for example in load(out, "train").decode_image("image", dtype="uint8"):
        pixels = example["image"]
        exact += sources.get(pixels.tobytes()) == pixels.shape
        decoded += 1
    shapes = {
        b["image"].shape
        for b in load(out, "train")
        .decode_image("image", size=32, random_flip=True, seed=0)
        .batch(8)
    }
    status = "ok" if exact == decoded == want and shapes == {(8, 32, 32, 3)} else "FAILED"
    echo(
        f"decode  {out} (train): {decoded} images equal to their source files; resized and "
        f"flipped into float32 batches of shape {sorted(shapes)}, {status}"
    )
    return int(failed or status != "ok")
