"""Converting a table of ``split, image_uri, label`` rows into TFRecord splits.

``tfr.convert`` does what TFRecorder set out to do, without TensorFlow: images are stored as
their original encoded bytes with their size, channels and format; string labels get an
integer vocabulary fitted on TRAIN; every row that cannot be converted is listed in
``discarded.csv`` with the reason, and never stops the job.
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .dataset_writer import write_dataset

__all__ = ["ConversionSummary", "contact_sheet", "convert", "register_pandas_accessor"]

SPLITS = ("TRAIN", "VALIDATION", "TEST")
ROLES = ("split", "image_uri", "label", "integer", "float", "string")
DEFAULT_SCHEMA = {"split": "split", "image_uri": "image_uri", "label": "label"}
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp")
_CHANNELS = {"1": 1, "L": 1, "LA": 2, "P": 3, "RGB": 3, "YCbCr": 3, "CMYK": 4, "RGBA": 4}


@dataclass
class Job:
    """One conversion's rows and settings, as a runner receives them."""

    rows: list[dict[str, Any]]
    columns: list[str]
    roles: dict[str, str]
    by_role: dict[str, str]
    output_dir: str
    num_shards: int | None
    compression: str | None
    image_size: tuple[int, int] | None
    image_format: str | None
    overwrite: bool
    progress: bool
    started: float


def write_side_files(output_dir: str, summary: ConversionSummary, schema: Any) -> None:
    """``schema.json`` (when anything was written) and ``summary.json``."""
    if schema is not None:
        with open(os.path.join(output_dir, "schema.json"), "w", encoding="utf-8") as f:
            f.write(schema.to_json(indent=1) + "\n")
    with open(os.path.join(output_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(asdict(summary), f, indent=1)


@dataclass
class ConversionSummary:
    """What :func:`convert` wrote."""

    output_dir: str
    rows: dict[str, int] = field(default_factory=dict)
    discarded: int = 0
    bytes: int = 0
    seconds: float = 0.0
    labels: list[str] | None = None

    def __str__(self) -> str:
        splits = ", ".join(f"{k.lower()} {v:,}" for k, v in self.rows.items())
        return (
            f"converted {sum(self.rows.values()):,} rows ({splits}) into {self.output_dir}; "
            f"{self.discarded:,} discarded; {self.bytes:,} bytes in {self.seconds:.1f}s"
        )


def _rows(source: Any) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """Column names and rows of a CSV or Parquet path, a DataFrame, or a directory tree."""
    if type(source).__module__.startswith("pandas"):
        frame = source
        return list(frame.columns), (
            {str(k): v for k, v in row.items()} for row in frame.to_dict("records")
        )
    path = os.fspath(source)
    if os.path.isdir(path):
        return ["split", "image_uri", "label"], _tree_rows(path)
    if path.lower().endswith(".parquet"):
        import pandas as pd

        return _rows(pd.read_parquet(path))
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    return list(reader.fieldnames or []), iter(rows)


def _tree_rows(root: str) -> Iterator[dict[str, Any]]:
    """``root/SPLIT/LABEL/image.jpg`` as rows."""
    for split in sorted(os.listdir(root)):
        split_dir = os.path.join(root, split)
        if not os.path.isdir(split_dir):
            continue
        for label in sorted(os.listdir(split_dir)):
            label_dir = os.path.join(split_dir, label)
            if not os.path.isdir(label_dir):
                continue
            for name in sorted(os.listdir(label_dir)):
                if name.lower().endswith(IMAGE_SUFFIXES):
                    path = os.path.join(label_dir, name)
                    yield {"split": split, "image_uri": path, "label": label}


def load_image(
    uri: str, size: tuple[int, int] | None, fmt: str | None
) -> tuple[bytes, int, int, int, str]:
    """The image's bytes (re-encoded when resizing or changing format) and its height,
    width, channels and format. Raises ValueError for anything that is not an image."""
    from PIL import Image, UnidentifiedImageError

    if "://" in uri and not uri.startswith("file://"):
        import fsspec

        with fsspec.open(uri, "rb") as f:
            data = f.read()
    else:
        with open(uri.removeprefix("file://"), "rb") as f:
            data = f.read()
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()  # decode fully: a truncated or damaged image is refused here
            source_format = (img.format or "").upper()
            if size is not None or (fmt is not None and fmt.upper() != source_format):
                out_format = (fmt or source_format or "PNG").upper()
                if size is not None:
                    img = img.resize((size[1], size[0]), Image.Resampling.BILINEAR)
                if out_format == "JPEG" and img.mode not in ("L", "RGB", "CMYK"):
                    img = img.convert("RGB")
                buf = io.BytesIO()
                img.save(buf, format=out_format)
                data, source_format = buf.getvalue(), out_format
            width, height = img.size
            channels = _CHANNELS.get(img.mode, len(img.getbands()))
    except UnidentifiedImageError:
        raise ValueError("undecodable image: not a recognized image format") from None
    except (OSError, SyntaxError, ValueError) as err:
        raise ValueError(f"undecodable image: {err}") from None
    return data, height, width, channels, source_format.lower()


def _roles(schema: Mapping[str, str] | None, columns: list[str]) -> dict[str, str]:
    roles = dict(schema or DEFAULT_SCHEMA)
    for column, role in roles.items():
        if role not in ROLES:
            raise ValueError(f"column {column!r} has role {role!r}; roles are {', '.join(ROLES)}")
        if column not in columns:
            raise ValueError(f"the source has no column {column!r} (it has {columns})")
    for role in ("split", "image_uri"):
        if list(roles.values()).count(role) != 1:
            raise ValueError(f"the schema needs exactly one {role!r} column")
    if list(roles.values()).count("label") > 1:
        raise ValueError("the schema allows at most one 'label' column")
    return roles


def _missing(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and np.isnan(value))


def label_kind(values: Iterable[Any]) -> str:
    """ "int" when every present label is an integer (or its text), else "string"."""
    for v in values:
        if _missing(v):
            continue
        if isinstance(v, (bool, np.bool_)):
            return "string"
        if isinstance(v, (int, np.integer)):
            continue
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            continue
        if isinstance(v, str) and v.strip().lstrip("-").isdigit():
            continue
        return "string"
    return "int"


def convert(
    source: Any,
    output_dir: str | os.PathLike[str],
    *,
    schema: Mapping[str, str] | None = None,
    runner: str = "local",
    pipeline_options: Mapping[str, Any] | None = None,
    num_shards: int | None = None,
    max_shard_bytes: int | str = "128MiB",
    compression: str | None = None,
    image_size: tuple[int, int] | None = None,
    image_format: str | None = None,
    workers: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> ConversionSummary:
    """Converts a table of images and labels into TFRecord splits.

    ``source`` is a CSV path, a Parquet path, a pandas DataFrame, or a directory tree
    ``SPLIT/LABEL/*.jpg``. ``schema`` maps column names to roles: ``"split"`` (TRAIN,
    VALIDATION or TEST, any case), ``"image_uri"`` (a local path or any fsspec URL),
    ``"label"``, and ``"integer"`` / ``"float"`` / ``"string"`` for other inputs; the
    default is ``{"split": "split", "image_uri": "image_uri", "label": "label"}``.

    Each image is stored as its encoded bytes (``image``), with ``image_height``,
    ``image_width``, ``image_channels`` and ``image_format``; ``image_size=(h, w)`` resizes
    and ``image_format`` re-encodes. String labels become integers by a vocabulary fitted on
    TRAIN (sorted; ``label_text`` keeps the string) saved as ``labels.txt``; a label unseen in
    TRAIN discards its row. Writes ``{train,validation,test}-SSSSS-of-NNNNN.tfrecord`` with
    manifests, ``schema.json`` and ``discarded.csv`` into ``output_dir``; returns a summary.

    ``runner`` is ``"local"`` (threads on this machine) or the name of an Apache Beam runner
    (``"DirectRunner"``, ``"DataflowRunner"``, ``"FlinkRunner"``...): the same Examples are
    then made in Beam ``DoFn``s, with the vocabulary as a combine over TRAIN and shards
    written by Beam's sink; ``pipeline_options`` (project, region, temp_location...) pass
    through to Beam. Manifests and indexes are added when ``output_dir`` is local.

    >>> summary = convert("images.csv", "out/")  # doctest: +SKIP
    >>> summary.rows  # doctest: +SKIP
    {'TRAIN': 800, 'VALIDATION': 100, 'TEST': 100}
    """
    started = time.monotonic()
    output_dir = os.fspath(output_dir)
    columns, rows = _rows(source)
    roles = _roles(schema, columns)
    by_role = {role: col for col, role in roles.items() if role in ("split", "image_uri", "label")}
    rows = list(rows)
    if runner.lower() != "local":
        from ._beam_conversion import convert_with_beam

        job = Job(
            rows,
            columns,
            roles,
            by_role,
            output_dir,
            num_shards,
            compression,
            image_size,
            image_format,
            overwrite,
            progress,
            started,
        )
        return convert_with_beam(job, runner, dict(pipeline_options or {}))
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

    def load(item: tuple[int, dict[str, Any], str]) -> Any:
        _, row, _ = item
        try:
            return load_image(str(row[by_role["image_uri"]]), image_size, image_format)
        except (OSError, ValueError) as err:
            return err

    with ThreadPoolExecutor(max_workers=workers or min(32, (os.cpu_count() or 1) * 4)) as pool:
        images = list(pool.map(load, kept))

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
            num_shards=num_shards,
            max_shard_bytes=max_shard_bytes,
            compression=compression,
            workers=workers,
            overwrite=overwrite,
            progress=progress,
        )
        summary.rows[split] = manifest.records
        summary.bytes += manifest.bytes
        written_schema = manifest.schema
    if vocab is not None:
        with open(os.path.join(output_dir, "labels.txt"), "w", encoding="utf-8") as f:
            f.writelines(v + "\n" for v in vocab)
    discarded.sort(key=lambda d: d["row"])
    write_discarded(os.path.join(output_dir, "discarded.csv"), columns, discarded)
    summary.discarded = len(discarded)
    summary.seconds = time.monotonic() - started
    write_side_files(output_dir, summary, written_schema)
    if progress:
        print(summary)
    return summary


def check_row(row: dict[str, Any], by_role: dict[str, str]) -> tuple[str, str | None]:
    """The row's split, and why it cannot be converted (None if it can, so far)."""
    split = str(row.get(by_role["split"]) or "").strip().upper()
    if split not in SPLITS:
        return split, f"unknown split {row.get(by_role['split'])!r}"
    if "label" in by_role and _missing(row.get(by_role["label"])):
        return split, "missing label"
    if _missing(row.get(by_role["image_uri"])):
        return split, "missing image_uri"
    return split, None


def discard_entry(i: int, row: dict[str, Any], reason: str, columns: list[str]) -> dict[str, Any]:
    return {"row": i, "reason": reason, **{k: row.get(k) for k in columns}}


def features_of(
    row: dict[str, Any], roles: dict[str, str], image: Any, vocab: dict[str, int] | None
) -> dict[str, Any]:
    data, height, width, channels, fmt = image
    out: dict[str, Any] = {
        "image": data,
        "image_height": height,
        "image_width": width,
        "image_channels": channels,
        "image_format": fmt,
    }
    for column, role in roles.items():
        value = row.get(column)
        if role == "label":
            if vocab is None:
                out["label"] = int(float(value))
            else:
                out["label"] = vocab[str(value)]
                out["label_text"] = str(value)
        elif role in ("integer", "float", "string"):
            if _missing(value):
                raise ValueError(f"missing value in column {column!r}")
            try:
                out[column] = {"integer": lambda v: int(float(v)), "float": float, "string": str}[
                    role
                ](value)
            except (TypeError, ValueError):
                raise ValueError(f"column {column!r}: {value!r} is not {role}") from None
    return out


def write_discarded(path: str, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["row", "reason", *columns])
        writer.writeheader()
        writer.writerows(rows)


def register_pandas_accessor() -> None:
    """Registers ``DataFrame.tfrecord.to_tfrecord(output_dir, **kwargs)`` (done on
    ``import tfrecordkit`` when pandas is already imported)."""
    import pandas as pd

    if hasattr(pd.DataFrame, "tfrecord"):
        return

    @pd.api.extensions.register_dataframe_accessor("tfrecord")
    class TFRecordAccessor:
        """``df.tfrecord.to_tfrecord(output_dir, **kwargs)``: :func:`convert` on ``df``."""

        def __init__(self, frame: Any) -> None:
            self._frame = frame

        def to_tfrecord(self, output_dir: str | os.PathLike[str], **kwargs: Any) -> Any:
            return convert(self._frame, output_dir, **kwargs)


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

    from .example import decode_example
    from .records import read_records

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
    from .dataset import Dataset
    from .dataset_writer import Manifest, manifest_path
    from .schema import Schema

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
