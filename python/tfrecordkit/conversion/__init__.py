"""Converting a table of ``split, image_uri, label`` rows into TFRecord splits.

``tfr.convert`` does what TFRecorder set out to do, without TensorFlow: images are stored as
their original encoded bytes with their size, channels and format; string labels get an
integer vocabulary fitted on TRAIN; every row that cannot be converted is listed in
``discarded.csv`` with the reason, and never stops the job. The rows are read and checked
in :mod:`.rows`; :mod:`.local` runs the job on this machine, :mod:`.beam` on an Apache
Beam runner.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from typing import Any

from .._renamed import renamed
from ..datasets.writer import shard_compression
from ..integrations import tfds as tfds_lib
from ..io.paths import expand_paths, join
from ..io.sidecars import read_sidecar
from .local import contact_sheet, convert_locally, load
from .rows import SPLITS, ConversionSummary, Job, check_image_size, check_roles, read_rows

__all__ = ["ConversionSummary", "contact_sheet", "convert", "load", "register_pandas_accessor"]


def convert(
    source: Any,
    output_dir: str | os.PathLike[str],
    *,
    roles: Mapping[str, str] | None = None,
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
    tfds: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    schema: Mapping[str, str] | None = None,
) -> ConversionSummary:
    """Converts a table of images and labels into TFRecord splits.

    ``source`` is a CSV path, a Parquet path, a pandas DataFrame, or a directory tree
    ``SPLIT/LABEL/*.jpg``; the table, the images and ``output_dir`` may be URLs
    (``s3://``, ``gs://``...), reached with ``storage_options``. ``roles`` maps column
    names to their roles (``schema=``, TFRecorder's name for it, is the deprecated
    spelling): ``"split"`` (TRAIN, VALIDATION or TEST, any case), ``"image_uri"``
    (a local path or any fsspec URL), ``"label"``, and ``"integer"`` / ``"float"`` /
    ``"string"`` for other inputs; the default is
    ``{"split": "split", "image_uri": "image_uri", "label": "label"}``.

    Each image is stored as its encoded bytes (``image``), with ``image_height``,
    ``image_width``, ``image_channels`` and ``image_format``; ``image_size=(h, w)`` resizes
    and ``image_format`` re-encodes. String labels become integers by a vocabulary fitted on
    TRAIN (sorted; ``label_text`` keeps the string) saved as ``labels.txt``; a label unseen in
    TRAIN discards its row. Writes ``{train,validation,test}-SSSSS-of-NNNNN.tfrecord`` with
    manifests, ``schema.json`` and ``discarded.csv`` into ``output_dir``; returns a summary.
    The table is streamed and images are loaded a few at a time, so memory does not grow
    with the number of rows; ``progress`` shows a bar over the rows on a terminal.

    ``runner`` is ``"local"`` (threads on this machine) or the name of an Apache Beam runner
    (``"DirectRunner"``, ``"DataflowRunner"``, ``"FlinkRunner"``...): the same Examples are
    then made in Beam ``DoFn``s, with the vocabulary as a combine over TRAIN and shards
    written by Beam's sink; ``pipeline_options`` (project, region, temp_location...) pass
    through to Beam. Manifests and indexes are added when ``output_dir`` is local.

    ``compression`` (``"gzip"`` or ``"zlib"``; ``None``, ``"none"`` or ``""`` for none) is
    spelled as for :func:`write_dataset`, on every runner. Each split is written as
    :func:`write_dataset` writes a dataset: in ``num_shards`` shards, or where that is
    ``None`` in shards of up to ``max_shard_bytes`` (a Beam runner leaves the count to
    its sink instead); ``workers`` threads load the images on the local runner (the
    default: four per core, at most 32). Existing splits in ``output_dir`` are an error
    unless ``overwrite=True``; they are replaced only once the new ones are committed.

    ``tfds=True`` also writes TensorFlow Datasets metadata (see
    :func:`tfrecordkit.tfds.write_metadata`), so that ``tfds.builder_from_directory``
    loads the splits: ``image`` as an ``Image``, ``label`` as a ``ClassLabel`` with the
    vocabulary's names, ``label_text`` and ``image_format`` as ``Text``.

    >>> summary = convert("images.csv", "out/")  # doctest: +SKIP
    >>> summary.rows  # doctest: +SKIP
    {'TRAIN': 800, 'VALIDATION': 100, 'TEST': 100}
    """
    started = time.monotonic()
    output_dir = os.fspath(output_dir).removeprefix("file://")
    compression = shard_compression(compression)
    image_size = check_image_size(image_size)
    columns, rows = read_rows(source, storage_options)
    why = "the column roles; schema means feature specs everywhere else"
    roles = check_roles(renamed("convert", "roles", roles, "schema", schema, why), columns)
    by_role = {role: col for col, role in roles.items() if role in ("split", "image_uri", "label")}
    job = Job(
        rows=rows,
        columns=columns,
        roles=roles,
        by_role=by_role,
        output_dir=output_dir,
        num_shards=num_shards,
        max_shard_bytes=max_shard_bytes,
        compression=compression,
        image_size=image_size,
        image_format=image_format,
        workers=workers,
        overwrite=overwrite,
        progress=progress,
        started=started,
        storage_options=storage_options,
    )
    if runner.lower() == "local":
        summary = convert_locally(job)
    else:
        # Apache Beam is imported only for a Beam runner.
        try:
            with beam_import_notes_dropped():
                from .beam_runner import convert_with_beam
        except ImportError as err:
            if (err.name or "").partition(".")[0] != "apache_beam":
                raise
            raise ImportError(
                f"runner={runner!r} needs Apache Beam: pip install 'tfrecordkit[beam]'"
            ) from None

        summary = convert_with_beam(job, runner, dict(pipeline_options or {}))
    if tfds:
        _write_tfds_metadata(summary, image_size, overwrite, storage_options)
    return summary


def _write_tfds_metadata(
    summary: ConversionSummary,
    image_size: tuple[int, int] | None,
    overwrite: bool,
    options: Mapping[str, Any] | None,
) -> None:
    """TFDS metadata for a conversion's splits and the features it writes."""
    out = summary.output_dir
    height, width = image_size or (None, None)
    features: dict[str, Any] = {
        "image": tfds_lib.Image(shape=(height, width, 3)),
        "image_format": tfds_lib.Text(),
    }
    labels = summary.labels
    if labels is None:
        # A Beam run into a URL leaves its vocabulary in labels.txt only.
        with contextlib.suppress(FileNotFoundError):
            labels = read_sidecar(join(out, "labels.txt"), options).decode().splitlines()
    if labels is not None:
        features["label"] = tfds_lib.ClassLabel(names=labels)
        features["label_text"] = tfds_lib.Text()
    splits = {}
    for split in summary.rows or SPLITS:
        prefix = join(out, split.lower())
        with contextlib.suppress(FileNotFoundError):
            expand_paths(f"{prefix}-*-of-*.tfrecord*", storage_options=options)
            splits[split.lower()] = prefix
    tfds_lib.write_metadata(
        out, splits, features=features, overwrite=overwrite, storage_options=options
    )


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


@contextlib.contextmanager
def beam_import_notes_dropped() -> Any:
    """Drops the warnings Apache Beam logs on import when its optional Google Cloud
    clients are missing ("apitools not found..."), which say nothing about the job."""
    import logging

    root = logging.getLogger()

    def warnings_dropped(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR

    root.addFilter(warnings_dropped)
    try:
        yield
    finally:
        root.removeFilter(warnings_dropped)
