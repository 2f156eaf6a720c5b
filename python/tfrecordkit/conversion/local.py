"""``tfr.convert`` on this machine: rows checked, images loaded on threads, splits written
with :func:`tfrecordkit.write_dataset`; reading a conversion back with ``tfr.load``."""

from __future__ import annotations

import io
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._paths import atomic_write
from ..dataset import Dataset
from ..example import decode_example
from ..manifest import Manifest, manifest_path
from ..records import read_records
from ..schema import Schema
from ..writer import write_dataset
from .rows import (
    SPLITS,
    ConversionSummary,
    Job,
    check_row,
    discard_entry,
    features_of,
    label_kind,
    load_image,
    write_discarded,
    write_side_files,
)

__all__ = ["contact_sheet", "convert_locally", "load"]


def convert_locally(job: Job) -> ConversionSummary:
    """Runs a conversion on this machine (see :func:`tfrecordkit.convert`)."""
    rows, columns, roles, by_role = job.rows, job.columns, job.roles, job.by_role
    output_dir, workers = job.output_dir, job.workers
    image_size, image_format = job.image_size, job.image_format
    os.makedirs(output_dir, exist_ok=True)
    discarded: list[dict[str, Any]] = []

    def discard(i: int, row: dict[str, Any], reason: str) -> None:
        discarded.append(discard_entry(i, row, reason, columns))

    # Splits and labels first: they decide which images are worth loading.
    kept: list[tuple[int, dict[str, Any], str]] = []
    for i, row in enumerate(rows):
        split, problem = check_row(row, by_role)
        if problem:
            discard(i, row, problem)
        else:
            kept.append((i, row, split))
    vocab: list[str] | None = None
    label_ids: dict[str, int] | None = None
    if "label" in by_role:
        label_col = by_role["label"]
        if label_kind(r[label_col] for _, r, _ in kept) == "string":
            vocab = sorted({str(r[label_col]) for _, r, s in kept if s == "TRAIN"})
            label_ids = {v: k for k, v in enumerate(vocab)}
            still = []
            for i, row, split in kept:
                if str(row[label_col]) in label_ids:
                    still.append((i, row, split))
                else:
                    discard(i, row, f"label {row[label_col]!r} does not occur in TRAIN")
            kept = still

    def load_row(item: tuple[int, dict[str, Any], str]) -> Any:
        _, row, _ = item
        try:
            return load_image(str(row[by_role["image_uri"]]), image_size, image_format)
        except (OSError, ValueError) as err:
            return err

    with ThreadPoolExecutor(max_workers=workers or min(32, (os.cpu_count() or 1) * 4)) as pool:
        images = list(pool.map(load_row, kept))

    per_split: dict[str, dict[str, list[Any]]] = {s: {} for s in SPLITS}
    for (i, row, split), image in zip(kept, images, strict=True):
        if isinstance(image, Exception):
            discard(i, row, f"image {row[by_role['image_uri']]!r}: {image}")
            continue
        try:
            features = features_of(row, roles, image, label_ids)
        except ValueError as err:
            discard(i, row, str(err))
            continue
        cols = per_split[split]
        for k, v in features.items():
            cols.setdefault(k, []).append(v)

    summary = ConversionSummary(output_dir, labels=vocab)
    written_schema = None
    for split in SPLITS:
        cols = per_split[split]
        if not cols:
            continue
        manifest = write_dataset(
            cols,
            os.path.join(output_dir, split.lower()),
            num_shards=job.num_shards,
            max_shard_bytes=job.max_shard_bytes,
            compression=job.compression,
            workers=workers,
            overwrite=job.overwrite,
            progress=job.progress,
        )
        summary.rows[split] = manifest.records
        summary.bytes += manifest.bytes
        written_schema = manifest.schema
    if vocab is not None:
        with atomic_write(os.path.join(output_dir, "labels.txt")) as f:
            f.writelines(v + "\n" for v in vocab)
    discarded.sort(key=lambda d: d["row"])
    write_discarded(os.path.join(output_dir, "discarded.csv"), columns, discarded)
    summary.discarded = len(discarded)
    summary.seconds = time.monotonic() - job.started
    write_side_files(output_dir, summary, written_schema)
    if job.progress:
        print(summary)
    return summary


def contact_sheet(
    output_dir: str | os.PathLike[str],
    split: str = "train",
    n: int = 16,
    out: str | os.PathLike[str] = "sheet.png",
    *,
    thumb: int = 128,
) -> str:
    """Draws the first ``n`` images of a converted split with their labels into one PNG.

    Returns the PNG's path. Images that do not decode are drawn as a grey tile.
    """
    from PIL import Image, ImageDraw

    pattern = os.path.join(os.fspath(output_dir), f"{split.lower()}-*")
    tiles: list[tuple[Image.Image, str]] = []
    for record in read_records(pattern):
        if len(tiles) >= n:
            break
        ex = decode_example(record)
        text = ex.get("label_text") or ex.get("label")
        label = "" if text is None or len(text) == 0 else text[0]
        label = label.decode("utf-8", "replace") if isinstance(label, bytes) else str(label)
        try:
            with Image.open(io.BytesIO(ex["image"][0])) as img:
                tile = img.convert("RGB")
                tile.thumbnail((thumb, thumb))
        except (KeyError, IndexError, OSError, ValueError):
            tile = Image.new("RGB", (thumb, thumb), (128, 128, 128))
        tiles.append((tile, label))
    if not tiles:
        raise ValueError(f"no Examples in {pattern}")
    cols = int(np.ceil(np.sqrt(len(tiles))))
    rows = int(np.ceil(len(tiles) / cols))
    cell_w, cell_h = thumb + 8, thumb + 22
    sheet = Image.new("RGB", (cols * cell_w, rows * cell_h), "white")
    draw = ImageDraw.Draw(sheet)
    for k, (tile, label) in enumerate(tiles):
        x, y = (k % cols) * cell_w + 4, (k // cols) * cell_h + 4
        sheet.paste(tile, (x + (thumb - tile.width) // 2, y + (thumb - tile.height) // 2))
        draw.text((x, y + thumb + 3), label[:24], fill="black")
    out = os.fspath(out)
    sheet.save(out, format="PNG")
    return out


def load(
    output_dir: str | os.PathLike[str],
    split: str = "train",
    *,
    shuffle_files: bool = False,
    seed: int | None = None,
    cycle_length: int = -1,
    on_error: Any = "raise",
) -> Any:
    """The ``split`` of a :func:`convert` output as a :class:`tfrecordkit.Dataset` of parsed
    Examples, with the schema saved beside it; add ``shuffle``, ``batch`` and the rest.

    >>> ds = tfr.load("out", "train").shuffle(1000, seed=0).batch(32)  # doctest: +SKIP
    """
    output_dir = os.fspath(output_dir)
    name = split.lower()
    if name.upper() not in SPLITS:
        raise ValueError(f"split must be one of {[s.lower() for s in SPLITS]}, not {split!r}")
    schema_file = os.path.join(output_dir, "schema.json")
    if not os.path.exists(schema_file):
        raise FileNotFoundError(2, "no schema.json: not a convert() output", schema_file)
    with open(schema_file, encoding="utf-8") as f:
        schema = Schema.from_json(f.read())
    prefix = os.path.join(output_dir, name)
    if os.path.exists(manifest_path(prefix)):
        files: Any = Manifest.load(prefix).files
    else:
        files = f"{prefix}-*-of-*.tfrecord*"
    return (
        Dataset.list_files(files, shuffle=shuffle_files, seed=seed, on_error=on_error)
        .interleave(cycle_length=cycle_length)
        .parse(schema)
    )
