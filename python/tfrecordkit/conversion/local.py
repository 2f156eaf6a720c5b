"""``tfr.convert`` on this machine: rows checked, images loaded on threads, splits written
with :func:`tfrecordkit.write_dataset`; reading a conversion back with ``tfr.load``."""

from __future__ import annotations

import errno
import io
import os
import time
import warnings
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from .. import _core
from ..datasets.index import trusted
from ..datasets.manifest import Manifest
from ..datasets.sources import SKIPPED
from ..datasets.writer import Progress, write_dataset
from ..integrations import tfds
from ..io.paths import (
    StorageOptions,
    basename,
    exists,
    expand_paths,
    is_url,
    join,
    remove,
    write_file,
)
from ..io.records import read_records
from ..io.sidecars import read_sidecar
from ..pipeline.dataset import Dataset
from ..schema.example import decode_example
from ..schema.features import Schema
from .rows import (
    SPLITS,
    ConversionSummary,
    Job,
    check_row,
    discard_entry,
    features_of,
    is_integer_label,
    load_image,
    warn_look_alike_labels,
    write_discarded,
    write_side_files,
)

__all__ = ["contact_sheet", "convert_locally", "load"]


def ordered_map(
    fn: Callable[[Any], Any], items: Iterable[Any], workers: int
) -> Iterator[tuple[Any, Any]]:
    """``(item, fn(item))`` in order, ``fn`` running on ``workers`` threads with at most
    ``2 * workers`` items in flight, so that memory stays flat however many items come."""
    with ThreadPoolExecutor(workers, thread_name_prefix="tfrecordkit-map") as pool:
        pending: deque[tuple[Any, Any]] = deque()
        for item in items:
            pending.append((item, pool.submit(fn, item)))
            if len(pending) >= 2 * workers:
                item, done = pending.popleft()
                yield item, done.result()
        while pending:
            item, done = pending.popleft()
            yield item, done.result()


def convert_locally(job: Job) -> ConversionSummary:
    """Runs a conversion on this machine (see :func:`tfrecordkit.convert`), streaming: a
    first pass over the table checks the rows and fits the label vocabulary on TRAIN;
    then each split's rows are read again, their images loaded on threads a few at a time
    and written to shards as they come. Memory does not grow with the table."""
    columns, by_role, output_dir = job.columns, job.by_role, job.output_dir
    options = job.storage_options
    if not is_url(output_dir):
        os.makedirs(output_dir, exist_ok=True)
    discarded: list[dict[str, Any]] = []
    label_col = by_role.get("label")

    # Pass 1: which rows can be converted, per split and label, and the label vocabulary.
    per_label: dict[str, Counter[str | None]] = {s: Counter() for s in SPLITS}
    integer_labels = True
    for i, row in enumerate(job.rows()):
        split, problem = check_row(row, by_role)
        if problem:
            discarded.append(discard_entry(i, row, problem, columns))
            continue
        label = None
        if label_col is not None:
            label = str(row[label_col])
            integer_labels = integer_labels and is_integer_label(row[label_col])
        per_label[split][label] += 1
    vocab = None if label_col is None or integer_labels else sorted(per_label["TRAIN"])
    if vocab is not None:
        warn_look_alike_labels(vocab)
    label_ids = None if vocab is None else {v: k for k, v in enumerate(vocab)}

    def candidates(split: str) -> int:
        counts = per_label[split]
        return sum(n for k, n in counts.items() if label_ids is None or k in label_ids)

    summary = ConversionSummary(output_dir, labels=vocab)
    written_schema = None
    bar = Progress(job.progress, sum(candidates(s) for s in SPLITS), "converting", "rows")
    workers = job.workers or min(32, (os.cpu_count() or 1) * 4)
    try:
        for split in SPLITS:
            if not per_label[split]:
                continue
            rows = _split_rows(job, split, label_ids, discarded)
            examples = _examples(job, rows, label_ids, workers, discarded, bar)
            manifest = write_dataset(
                _Sized(examples, candidates(split)),
                join(output_dir, split.lower()),
                num_shards=job.num_shards,
                max_shard_bytes=job.max_shard_bytes,
                compression=job.compression,
                overwrite=job.overwrite,
                progress=False,
                storage_options=options,
            )
            if not manifest.records:
                # A split whose rows all failed: its empty shards are not kept.
                _remove_split(manifest, options)
                continue
            summary.rows[split] = manifest.records
            summary.bytes += manifest.bytes
            written_schema = manifest.schema
    finally:
        bar.close()
    if vocab is not None:
        write_file(join(output_dir, "labels.txt"), "".join(v + "\n" for v in vocab), options)
    discarded.sort(key=lambda d: d["row"])
    write_discarded(join(output_dir, "discarded.csv"), columns, discarded, options)
    summary.discarded = len(discarded)
    summary.seconds = time.monotonic() - job.started
    write_side_files(output_dir, summary, written_schema, options)
    return summary


def _remove_split(manifest: Manifest, options: StorageOptions) -> None:
    """Removes a written split: its shards, their sidecars and its manifest."""
    files = [*manifest.files, manifest.path]
    files += [f + ext for f in manifest.files for ext in (".idx", ".gzi")]
    for path in files:
        remove(path, options)


class _Sized:
    """An iterable that says up front how many items (or ``SKIPPED`` places) it yields."""

    def __init__(self, items: Iterator[Any], n: int) -> None:
        self._items, self._n = items, n

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Any]:
        return self._items


def _split_rows(
    job: Job, split: str, label_ids: dict[str, int] | None, discarded: list[dict[str, Any]]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of ``split`` that can be converted, with their row numbers; rows whose
    label does not occur in TRAIN are discarded here."""
    label_col = job.by_role.get("label")
    for i, row in enumerate(job.rows()):
        row_split, problem = check_row(row, job.by_role)
        if problem or row_split != split:
            continue
        if label_ids is not None and str(row[label_col]) not in label_ids:
            reason = f"label {row[label_col]!r} does not occur in TRAIN"
            discarded.append(discard_entry(i, row, reason, job.columns))
            continue
        yield i, row


def _examples(
    job: Job,
    rows: Iterator[tuple[int, dict[str, Any]]],
    label_ids: dict[str, int] | None,
    workers: int,
    discarded: list[dict[str, Any]],
    bar: Progress,
) -> Iterator[Any]:
    """The features of each row, its image loaded on one of ``workers`` threads; a row
    that cannot be converted is discarded and keeps its place as ``SKIPPED``."""
    uri_col = job.by_role["image_uri"]

    def load(item: tuple[int, dict[str, Any]]) -> Any:
        try:
            uri = str(item[1][uri_col])
            return load_image(uri, job.image_size, job.image_format, job.storage_options)
        except (OSError, ValueError) as err:
            return err

    for (i, row), image in ordered_map(load, rows, workers):
        bar.update(1)
        if isinstance(image, Exception):
            reason = f"image {row[uri_col]!r}: {image}"
            discarded.append(discard_entry(i, row, reason, job.columns))
            yield SKIPPED
            continue
        try:
            yield features_of(row, job.roles, image, label_ids)
        except ValueError as err:
            discarded.append(discard_entry(i, row, str(err), job.columns))
            yield SKIPPED


def contact_sheet(
    output_dir: str | os.PathLike[str],
    split: str = "train",
    n: int = 16,
    out: str | os.PathLike[str] | None = None,
    *,
    thumb: int = 128,
    overwrite: bool = True,
    storage_options: StorageOptions = None,
) -> str:
    """Draws the first ``n`` images of a converted split with their labels into one PNG,
    by default ``sheet-{split}.png`` beside the split (a URL works too); returns its path.
    Without ``overwrite``, a file already at ``out`` is a ``FileExistsError``.

    Images that do not decode are drawn as grey tiles, with a warning; Examples with no
    ``image`` feature at all are a ``ValueError``, as is a split with no images that decode.
    """
    from PIL import Image, ImageDraw

    output_dir = os.fspath(output_dir)
    pattern: Any = join(output_dir, f"{split.lower()}-*")
    image_key, label_key, names = "image", None, None
    if exists(join(os.path.expanduser(output_dir), tfds.INFO_FILE), storage_options):
        # A TFDS directory: its split's shards, first Image and first ClassLabel.
        info = tfds.info(output_dir, storage_options=storage_options)
        pattern = info.files(split)
        kinds = info.features
        image_key = next((k for k, kind in kinds.items() if kind == "Image"), image_key)
        label_key = next((k for k, kind in kinds.items() if kind == "ClassLabel"), None)
        names = info.labels.get(label_key or "")
    where = pattern if isinstance(pattern, str) else f"split {split!r} of {output_dir}"
    if isinstance(pattern, str):
        _check_split(output_dir, split, pattern, storage_options)
    tiles: list[tuple[Image.Image, str]] = []
    broken = 0
    for record in read_records(pattern, storage_options=storage_options):
        if len(tiles) >= n:
            break
        ex = decode_example(record)
        if image_key not in ex:
            raise ValueError(
                f"the Examples in {where} have no {image_key!r} feature; a contact sheet is "
                "drawn from the images of a convert output or a TFDS dataset"
            )
        text = ex.get(label_key) if label_key else ex.get("label_text") or ex.get("label")
        label = "" if text is None or len(text) == 0 else text[0]
        if names and isinstance(label, (int, np.integer)) and 0 <= label < len(names):
            label = names[label]
        label = label.decode("utf-8", "replace") if isinstance(label, bytes) else str(label)
        try:
            with warnings.catch_warnings():
                # Sizes are checked here, against the bound decode_image keeps too.
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                img = Image.open(io.BytesIO(ex[image_key][0]))
            with img:
                if img.width * img.height > _core.MAX_PIXELS:
                    raise ValueError(f"image too large: {img.width}x{img.height} pixels")
                img.draft("RGB", (thumb, thumb))
                tile = img.convert("RGB")
                tile.thumbnail((thumb, thumb))
        except (IndexError, OSError, SyntaxError, ValueError, Image.DecompressionBombError):
            broken += 1
            tile = Image.new("RGB", (thumb, thumb), (128, 128, 128))
        tiles.append((tile, label))
    if not tiles:
        raise ValueError(f"no Examples in {where}")
    if broken == len(tiles):
        raise ValueError(f"none of the first {broken} images in {where} decode")
    if broken:
        warnings.warn(
            f"{broken} of {len(tiles)} images did not decode (drawn as grey tiles)", stacklevel=2
        )
    cols = int(np.ceil(np.sqrt(len(tiles))))
    rows = int(np.ceil(len(tiles) / cols))
    cell_w, cell_h = thumb + 8, thumb + 22
    sheet = Image.new("RGB", (cols * cell_w, rows * cell_h), "white")
    draw = ImageDraw.Draw(sheet)
    for k, (tile, label) in enumerate(tiles):
        x, y = (k % cols) * cell_w + 4, (k // cols) * cell_h + 4
        sheet.paste(tile, (x + (thumb - tile.width) // 2, y + (thumb - tile.height) // 2))
        draw.text((x, y + thumb + 3), label[:24], fill="black")
    target = join(output_dir, f"sheet-{split.lower()}.png") if out is None else out
    target = os.fspath(target)
    png = io.BytesIO()
    sheet.save(png, format="PNG")
    write_file(target, png.getvalue(), storage_options, replace=overwrite)
    return target


def _check_split(
    output_dir: str, split: str, pattern: str, storage_options: StorageOptions
) -> None:
    """Refuses a directory that is not there, or that has no shards of ``split``, naming
    the splits it has."""
    if not is_url(output_dir):
        local = os.path.expanduser(output_dir)
        if not os.path.exists(local):
            raise FileNotFoundError(errno.ENOENT, "no such directory", output_dir)
        if not os.path.isdir(local):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", output_dir)
    try:
        expand_paths(pattern, storage_options=storage_options)
        return
    except FileNotFoundError:
        pass
    try:
        shards = expand_paths(join(output_dir, "*-of-*"), storage_options=storage_options)
    except FileNotFoundError:
        shards = []
    splits = sorted({basename(p).split("-")[0] for p in shards})
    raise ValueError(
        f"{output_dir} has no split {split!r}"
        + (f": its splits are {', '.join(splits)}" if splits else ", nor any other split")
    )


def load(
    output_dir: str | os.PathLike[str],
    split: str = "train",
    *,
    shuffle_files: bool = False,
    seed: int | None = None,
    cycle_length: int = -1,
    on_error: Any = "raise",
    storage_options: StorageOptions = None,
) -> Any:
    """The ``split`` of a :func:`convert` output (a directory or a URL) as a
    :class:`tfrecordkit.Dataset` of parsed Examples, with the schema saved beside it; add
    ``shuffle``, ``batch`` and the rest. A directory prepared by TensorFlow Datasets (its
    ``dataset_info.json`` and ``features.json``, no ``schema.json``) is read the same way,
    its schema from its features (see :func:`tfrecordkit.tfds.info`), and so is a
    :func:`write_dataset` output, through its manifest: its prefix (``out/train``, read
    whole), or a directory holding the ``split`` dataset. A manifest without a schema (of
    records written as they were) has it inferred from the first records.

    The shards are read as ``Dataset.list_files(shuffle=shuffle_files, seed=seed,
    on_error=on_error, storage_options=storage_options).interleave(cycle_length=
    cycle_length)`` reads them: in a shuffled order if asked, ``cycle_length`` at a time
    (``-1``: as many as the machine has cores), damage handled as ``on_error`` says.

    >>> ds = tfr.load("out", "train").shuffle(1000, seed=0).batch(32)  # doctest: +SKIP
    >>> ds = tfr.load("s3://bucket/out", "validation")  # doctest: +SKIP
    >>> ds = tfr.load("~/tensorflow_datasets/mnist/3.0.0", "test")  # doctest: +SKIP
    """
    options = storage_options
    output_dir = os.fspath(output_dir)
    schema_file = join(output_dir, "schema.json")
    read = (shuffle_files, seed, cycle_length, on_error, options)
    written = _manifest(output_dir, options)
    if written is not None:  # a write_dataset prefix, read whole
        return _loaded(written.files, written.schema, *read)
    try:
        schema = Schema.from_json(read_sidecar(schema_file, options).decode("utf-8"))
    except FileNotFoundError:
        pass
    else:
        name = split.lower()
        if name.upper() not in SPLITS:
            raise ValueError(f"split must be one of {[s.lower() for s in SPLITS]}, not {split!r}")
        prefix = join(output_dir, name)
        try:
            files = Manifest.load(prefix, storage_options=options).files
        except FileNotFoundError:
            files = f"{prefix}-*-of-*.tfrecord*"
        return _loaded(files, schema, *read)
    if exists(join(os.path.expanduser(output_dir), tfds.INFO_FILE), options):
        info = tfds.info(output_dir, storage_options=options)
        ds = _loaded(info.files(split), info.schema, *read)
        # The shard lengths and image channels the metadata gives: len() and decode_image
        # agree with TFDS without reading a shard.
        counts = info.counts(split)
        source = replace(
            ds._source,
            counts=lambda: tuple(trusted(counts.get(f), f, options) for f in ds._source.files),
            image_channels=info.image_channels,
        )
        return Dataset(source, ds._ops)
    written = _manifest(join(output_dir, split), options)
    if written is not None:  # a directory of write_dataset outputs, one per split
        return _loaded(written.files, written.schema, *read)
    raise FileNotFoundError(
        2,
        "no dataset here: no manifest (a write_dataset() output), schema.json "
        "(a convert() output) nor dataset_info.json (TFDS)",
        output_dir,
    )


def _manifest(prefix: str, options: StorageOptions) -> Manifest | None:
    """The manifest of the :func:`write_dataset` output at ``prefix``, if there is one."""
    try:
        return Manifest.load(prefix, storage_options=options)
    except FileNotFoundError:
        return None


def _loaded(
    files: Any,
    schema: Schema | None,
    shuffle_files: bool,
    seed: int | None,
    cycle_length: int,
    on_error: Any,
    options: StorageOptions,
) -> Any:
    return (
        Dataset.list_files(
            files, shuffle=shuffle_files, seed=seed, on_error=on_error, storage_options=options
        )
        .interleave(cycle_length=cycle_length)
        # A manifest's schema of no features (its rows had none) is refused by parse();
        # inferred from the records instead, they parse as empty dicts.
        .parse(schema or None)
    )
