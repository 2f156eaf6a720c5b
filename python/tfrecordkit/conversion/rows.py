"""The rows of a conversion: reading the table, checking rows, loading images, and the
features each row becomes. Shared by the local and the Beam runners."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .. import _core
from ..io.paths import (
    StorageOptions,
    filesystem,
    first_few,
    is_url,
    join,
    open_text,
    read_bytes,
    read_ranges,
    remote_errors,
    write_file,
)

SPLITS = ("TRAIN", "VALIDATION", "TEST")
ROLES = ("split", "image_uri", "label", "integer", "float", "string")
DEFAULT_ROLES = {"split": "split", "image_uri": "image_uri", "label": "label"}
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp")
_CHANNELS = {"1": 1, "L": 1, "LA": 2, "P": 3, "RGB": 3, "YCbCr": 3, "CMYK": 4, "RGBA": 4}


@dataclass
class Job:
    """One conversion's rows and settings, as a runner receives them. ``rows`` streams the
    table's rows, again on every call."""

    rows: Callable[[], Iterator[dict[str, Any]]]
    columns: list[str]
    roles: dict[str, str]
    by_role: dict[str, str]
    output_dir: str
    num_shards: int | None
    max_shard_bytes: int | str
    compression: str | None
    image_size: tuple[int, int] | None
    image_format: str | None
    workers: int | None
    overwrite: bool
    progress: bool
    started: float
    storage_options: Mapping[str, Any] | None = None


def write_side_files(
    output_dir: str, summary: ConversionSummary, schema: Any, options: StorageOptions = None
) -> None:
    """``schema.json`` (when anything was written) and ``summary.json``."""
    if schema is not None:
        write_file(join(output_dir, "schema.json"), schema.to_json(indent=1) + "\n", options)
    write_file(join(output_dir, "summary.json"), json.dumps(asdict(summary), indent=1), options)


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
        discarded = f"{self.discarded:,} discarded"
        if self.discarded:
            where = join(self.output_dir, "discarded.csv")
            discarded += f" (the reasons are in {where})"
        n = sum(self.rows.values())
        splits = f" ({splits})" if splits else ""
        return (
            f"converted {n:,} row{'' if n == 1 else 's'}{splits} into {self.output_dir}; "
            f"{discarded}; {self.bytes:,} bytes in {self.seconds:.1f}s"
        )


# Rows read from a table at a time (a DataFrame slice, a Parquet batch).
_CHUNK_ROWS = 10_000


def read_rows(
    source: Any, options: StorageOptions = None
) -> tuple[list[str], Callable[[], Iterator[dict[str, Any]]]]:
    """Column names of a CSV or Parquet path or URL, a DataFrame, or a directory tree, and
    a function that streams its rows, again on every call: CSV line by line, Parquet batch
    by batch, a DataFrame slice by slice, a tree as it is walked."""
    if type(source).__module__.startswith("pandas"):
        frame = source

        def frame_rows() -> Iterator[dict[str, Any]]:
            for start in range(0, len(frame), _CHUNK_ROWS):
                chunk = frame.iloc[start : start + _CHUNK_ROWS].to_dict("records")
                for row in chunk:
                    yield {str(k): v for k, v in row.items()}

        return [str(c) for c in frame.columns], frame_rows
    path = os.fspath(source)
    if not is_url(path) and os.path.isdir(path):
        return ["split", "image_uri", "label"], lambda: tree_rows(path)
    if path.lower().endswith(".parquet"):
        import pyarrow.parquet as pq

        def parquet_file() -> Any:
            import pyarrow as pa

            try:
                if not is_url(path):
                    return pq.ParquetFile(path)
                fs, inner = filesystem(path, storage_options=options)
                with remote_errors(path):
                    return pq.ParquetFile(fs.open(inner, "rb"))
            except pa.ArrowException as err:
                # Arrow's words for what it found, and the file it found it in.
                raise ValueError(f"{path} is not a readable Parquet file: {err}") from None

        def parquet_rows() -> Iterator[dict[str, Any]]:
            with parquet_file() as f:
                for batch in f.iter_batches(batch_size=_CHUNK_ROWS):
                    yield from batch.to_pylist()

        with parquet_file() as f:
            return list(f.schema_arrow.names), parquet_rows

    def csv_rows() -> Iterator[dict[str, Any]]:
        with open_text(path, options) as f:
            yield from csv.DictReader(f)

    try:
        with open_text(path, options) as f:
            columns = list(csv.DictReader(f).fieldnames or [])
    except UnicodeDecodeError as err:
        head = read_ranges(path, [0], [64], options)[0] if is_url(path) else _head(path)
        looks = _core.foreign_format(head)
        what = f"it starts with {looks}" if looks and not looks.startswith("text") else str(err)
        raise ValueError(
            f"{path} is not a CSV or Parquet table of split, image_uri, label rows: {what}"
        ) from None
    return columns, csv_rows


def _head(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read(64)


def tree_rows(root: str) -> Iterator[dict[str, Any]]:
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
    uri: str, size: tuple[int, int] | None, fmt: str | None, options: StorageOptions = None
) -> tuple[bytes, int, int, int, str]:
    """The image's bytes (re-encoded when resizing or changing format) and its height,
    width, channels and format. Raises ValueError for anything that is not an image."""
    from PIL import Image, UnidentifiedImageError

    data = read_bytes(uri, options)
    try:
        with warnings.catch_warnings():
            # Sizes are checked below, against the bound decode_image keeps too.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
        with img:
            width, height = img.size
            if width * height > _core.MAX_PIXELS:
                raise ValueError(
                    f"image too large: {width}x{height} pixels, more than the "
                    f"{_core.MAX_PIXELS:,} an image may decode to"
                )
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
    except Image.DecompressionBombError as err:
        raise ValueError(f"image too large: {err}") from None
    except (OSError, SyntaxError, ValueError) as err:
        raise ValueError(f"undecodable image: {err}") from None
    return data, height, width, channels, source_format.lower()


def check_image_size(size: Any) -> tuple[int, int] | None:
    """``image_size`` as ``(height, width)``: positive ints whose product stays within the
    pixels an image may decode to."""
    if size is None:
        return None
    try:
        h, w = size
        ok = all(isinstance(v, (int, np.integer)) and v > 0 for v in (h, w))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"image_size must be (height, width), two positive ints, not {size!r}")
    if int(h) * int(w) > _core.MAX_PIXELS:
        raise ValueError(
            f"image_size {int(h)}x{int(w)} is more than the {_core.MAX_PIXELS:,} pixels an "
            "image may decode to"
        )
    return int(h), int(w)


def check_roles(given: Mapping[str, str] | None, columns: list[str]) -> dict[str, str]:
    roles = dict(given or DEFAULT_ROLES)
    for column, role in roles.items():
        if role not in ROLES:
            raise ValueError(f"column {column!r} has role {role!r}; roles are {', '.join(ROLES)}")
        if column not in columns:
            raise ValueError(f"the source has no column {column!r} (it has {columns})")
    for role in ("split", "image_uri"):
        if list(roles.values()).count(role) != 1:
            raise ValueError(f"roles need exactly one {role!r} column (roles={roles})")
    if list(roles.values()).count("label") > 1:
        raise ValueError(f"roles allow at most one 'label' column (roles={roles})")
    return roles


def missing(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and np.isnan(value))


def is_integer_label(v: Any) -> bool:
    """Whether a label is an integer (or its text); missing labels count as integers."""
    if missing(v):
        return True
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (int, np.integer)):
        return True
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return True
    return isinstance(v, str) and v.strip().lstrip("-").isdigit()


def label_kind(values: Iterable[Any]) -> str:
    """ "int" when every present label is an integer (or its text), else "string"."""
    return "int" if all(is_integer_label(v) for v in values) else "string"


def warn_look_alike_labels(vocab: Iterable[str]) -> None:
    """Labels are kept exactly as the table has them, as TFRecorder kept them, so "Apple"
    and "Apple " are two classes: warns about labels that differ only in surrounding
    whitespace or in case."""
    groups: dict[str, list[str]] = {}
    for label in vocab:
        groups.setdefault(label.strip().casefold(), []).append(label)
    alike = [sorted(g) for g in groups.values() if len(g) > 1]
    if alike:
        shown = first_few([" and ".join(repr(v) for v in g) for g in alike], sep="; ")
        warnings.warn(
            f"labels that differ only in whitespace or case are distinct classes: "
            f"{shown}; clean the table if each is one class",
            UserWarning,
            stacklevel=3,
        )


def check_row(row: dict[str, Any], by_role: dict[str, str]) -> tuple[str, str | None]:
    """The row's split, and why it cannot be converted (None if it can, so far)."""
    split = str(row.get(by_role["split"]) or "").strip().upper()
    if split not in SPLITS:
        return split, f"unknown split {row.get(by_role['split'])!r}"
    if "label" in by_role and missing(row.get(by_role["label"])):
        return split, "missing label"
    if missing(row.get(by_role["image_uri"])):
        return split, "missing image_uri"
    return split, None


def whole_number(value: Any, what: str = "") -> int:
    """An integer cell (a number, or its text: "7", "7.0") as an int64, exactly: text is
    never read through a float, which would round integers past 2^53."""
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
        n = int(value)
    elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        n = int(value)
    else:
        number = float(value)
        if not number.is_integer():
            raise ValueError(f"{what or repr(value)} is not a whole number")
        n = int(number)
    if not -(2**63) <= n < 2**63:
        raise ValueError(f"{what or repr(value)} is beyond int64")
    return n


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
                out["label"] = whole_number(value, f"label {value!r}")
            else:
                out["label"] = vocab[str(value)]
                out["label_text"] = str(value)
        elif role in ("integer", "float", "string"):
            if missing(value):
                raise ValueError(f"missing value in column {column!r}")
            try:
                out[column] = {"integer": whole_number, "float": float, "string": str}[role](value)
            except (TypeError, ValueError):
                raise ValueError(f"column {column!r}: {value!r} is not {role}") from None
    return out


def write_discarded(
    path: str, columns: list[str], rows: list[dict[str, Any]], options: StorageOptions = None
) -> None:
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=["row", "reason", *columns])
    writer.writeheader()
    writer.writerows(rows)
    write_file(path, text.getvalue(), options)
