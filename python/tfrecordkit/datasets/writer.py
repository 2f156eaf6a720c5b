"""Writing whole datasets: sharded, parallel, atomic, indexed, with a manifest."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import _core
from ..io.paths import StorageOptions, is_url, remove
from ..io.records import SEEKABLE_MEMBER_BYTES
from .commit import DatasetCommit
from .manifest import Manifest, shard_name
from .sources import source_of, write_source

__all__ = ["parse_size", "write_dataset"]

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1e3,
    "kb": 1e3,
    "kib": 2**10,
    "m": 1e6,
    "mb": 1e6,
    "mib": 2**20,
    "g": 1e9,
    "gb": 1e9,
    "gib": 2**30,
    "t": 1e12,
    "tb": 1e12,
    "tib": 2**40,
}


def parse_size(size: int | str) -> int:
    """``"128MiB"``, ``"100MB"``, ``"1.5GiB"`` or a number of bytes."""
    if isinstance(size, (int, np.integer)):
        value = int(size)
    else:
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*", str(size))
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"cannot read {size!r} as a size such as '128MiB'")
        value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if not 0 < value < 2**63:
        raise ValueError(f"size must be positive and under 8 EiB, not {size!r}")
    return value


class Progress:
    """A tqdm bar on stderr when asked for and on a terminal, else nothing. It appears
    with the first update, once :meth:`counts` may have named what it counts."""

    def __init__(self, enabled: bool, total: int | None, desc: str, unit: str = "rows") -> None:
        self.enabled, self.total, self.desc, self.unit = enabled, total, desc, unit
        self.bar: Any = None

    def counts(self, unit: str) -> None:
        """Names what the bar counts, once that is known."""
        self.unit = unit

    def update(self, n: int) -> None:
        if self.bar is None and self.enabled:
            self.enabled = False
            try:
                from tqdm.auto import tqdm
            except ImportError:  # pragma: no cover - tqdm is a dependency
                return
            self.bar = tqdm(
                total=self.total, desc=self.desc, unit=f" {self.unit}", disable=None, leave=False
            )
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class _Shards:
    """Open shard writers under temporary names; all renamed together or all removed."""

    def __init__(
        self, prefix: str, compression: str | None, index: bool, member_bytes: int | None
    ) -> None:
        self.prefix = prefix
        self.compression = compression
        self.index = index
        self.member_bytes = member_bytes
        self.done: list[dict[str, Any]] = []
        self.open: list[Any] = []

    def new(self, i: int) -> Any:
        # The name given here only shapes the temporary's name; the final name is given
        # when the shard count is known.
        w = _core.RecordWriter(
            shard_name(self.prefix, i, 0, self.compression),
            self.compression or "none",
            None,
            True,
            self.index,
            self.member_bytes,
            part=True,
        )
        self.open.append(w)
        return w

    def finish(self, w: Any) -> dict[str, Any]:
        info = w.finish()
        self.open.remove(w)
        self.done.append(info)
        return info

    def abort(self) -> None:
        for w in self.open:
            w.abort()
        for info in self.done:
            remove(info["data"])
            remove(info["index"])


class _RemoteShards(_Shards):
    """Shards for a URL prefix: each is written on local disk and uploaded, under a hidden
    temporary name beside the prefix, as soon as it is finished, so local disk holds only
    the shards being written (all of them only when an unsized stream is dealt
    round-robin to a fixed ``num_shards``). The commit moves them to their final names."""

    def __init__(
        self,
        commit: DatasetCommit,
        local_dir: str,
        compression: str | None,
        index: bool,
        member_bytes: int | None,
    ) -> None:
        local_prefix = os.path.join(local_dir, commit.stem)
        super().__init__(local_prefix, compression, index, member_bytes)
        self.commit, self.options = commit, commit.storage_options
        self.numbers = itertools.count()

    def finish(self, w: Any) -> dict[str, Any]:
        info = super().finish(w)
        local = info["data"], info["index"]
        part = self.commit.part_path(f"{next(self.numbers):05d}")
        try:
            # In place: what `done` holds is what an abort removes.
            info.update(self.commit.upload_part(info, part))
        finally:
            remove(local[0])
            remove(local[1])
        return info

    def abort(self) -> None:
        for w in self.open:
            w.abort()
        for info in self.done:
            remove(info["data"], self.options)
            remove(info["index"], self.options)
        # A part uploaded whose sidecar then failed to follow is not in `done`. Best
        # effort: a store that cannot be reached must not hide the error being raised.
        with contextlib.suppress(OSError):
            self.commit.clean_parts()


def _write_remote(
    url_prefix: str, data: Any, kwargs: dict[str, Any], options: StorageOptions
) -> Manifest:
    """Writes the dataset to a URL prefix: each shard uploaded under a temporary name as
    it is finished, all moved to their final names at the end, the manifest last (see
    :class:`~tfrecordkit.datasets.commit.DatasetCommit`).

    Object stores cannot rename, so a writer first claims the prefix with an exclusive
    create of ``{prefix}.writing`` (S3's conditional put): of two writers racing for one
    prefix, one claims it and the other raises ``FileExistsError`` before uploading
    anything. The manifest is put the same way, so a finished dataset is never replaced
    without ``overwrite``. A dataset is complete once its manifest exists; a killed writer
    leaves its claim, which ``overwrite=True`` (or removing it) clears.
    """
    import tempfile

    with _commit_of(url_prefix, kwargs, options) as commit:
        with tempfile.TemporaryDirectory(prefix="tfrecordkit-") as local:
            shards = _RemoteShards(
                commit, local, kwargs["compression"], kwargs["index"], kwargs["member_bytes"]
            )
            return _written(data, shards, kwargs, commit)


def _commit_of(prefix: str, kwargs: dict[str, Any], options: StorageOptions) -> DatasetCommit:
    return DatasetCommit(
        prefix,
        compression=kwargs["compression"],
        index=kwargs["index"],
        overwrite=kwargs["overwrite"],
        storage_options=options,
    )


def _written(data: Any, shards: _Shards, kwargs: dict[str, Any], commit: DatasetCommit) -> Manifest:
    """Writes ``data`` to ``shards`` and commits them with their manifest. Any error
    (Ctrl-C included) removes every shard."""
    try:
        infos, schema = _write_all(data, shards, kwargs)
    except BaseException:
        shards.abort()
        raise
    return commit.commit(infos, schema)


def _write_all(data: Any, shards: _Shards, kwargs: dict[str, Any]) -> tuple[list[Any], Any]:
    """Writes ``data`` (any kind ``write_dataset`` takes) to ``shards``: the finished
    shards' infos, in order, and the schema of what was written (when known)."""
    threads = max(1, kwargs["workers"] or os.cpu_count() or 1)
    bar = Progress(kwargs["progress"], None, "writing")
    try:
        source = source_of(data, kwargs["schema"], threads, bar)
        bar.total = source.total
        cuts = (kwargs["num_shards"], kwargs["max_shard_bytes"], kwargs["hosts"])
        infos = write_source(source, shards, *cuts, threads)
    finally:
        bar.close()
    return infos, source.schema()


def shard_compression(compression: str | None) -> str | None:
    """``compression`` as the shards are written, spelled as the readers and the command
    line spell it: None, ``"none"`` or ``""`` (no compression), ``"gzip"``, ``"zlib"``, in
    any case. ``"auto"`` has nothing to go by here: the shards' names come from it."""
    name = compression.lower() if isinstance(compression, str) else compression
    if name in (None, "", "none"):
        return None
    if name in ("gzip", "zlib"):
        return name
    if name == "auto":
        raise ValueError(
            'compression="auto" reads the compression from a file\'s name, and write_dataset '
            'names its shards after the compression: pass None, "gzip" or "zlib"'
        )
    raise ValueError(f'compression must be None, "gzip" or "zlib", not {compression!r}')


def write_dataset(
    data: Any,
    prefix: str | os.PathLike[str],
    *,
    num_shards: int | None = None,
    max_shard_bytes: int | str = "128MiB",
    hosts: int | None = None,
    compression: str | None = None,
    schema: Mapping[str, Any] | None = None,
    workers: int | None = None,
    index: bool = True,
    overwrite: bool = False,
    progress: bool = True,
    seekable: bool = False,
    storage_options: StorageOptions = None,
) -> Manifest:
    """Writes ``data`` as TFRecord shards ``{prefix}-SSSSS-of-NNNNN.tfrecord`` and a manifest.

    ``data`` is a dict of NumPy columns, a pandas DataFrame, a pyarrow Table, a Polars
    DataFrame, a ``pyarrow.RecordBatchReader``, ``pyarrow.dataset.Dataset`` or Hugging Face
    ``datasets.Dataset`` (streamed a record batch at a time), an iterable of dicts (one
    Example per dict), or an iterable of already-serialized records (bytes).
    Columns become features by dtype (see :func:`tfrecordkit.encode_examples`); ``schema``
    overrides the dtypes inferred. Tables are encoded and written on native threads,
    ``workers`` (default: all cores) shards at a time, with no Python object per row;
    ``workers=1`` uses one thread. Iterables are taken a few MiB of items at a time, and
    their rows encoded natively (as :func:`tfrecordkit.encode_example` encodes a dict).
    The manifest's schema describes every row; a ``schema`` given is checked against
    the rows (one it would not parse raises :class:`~tfrecordkit.errors.SchemaError`,
    and nothing is written), and whole numbers where it says ``float32`` are written
    as floats.

    Shards: ``num_shards`` fixed, or as many as keep each under ``max_shard_bytes`` and, given
    ``hosts`` (reading machines), at least ten per host when the data is large enough.
    Table rows (and sized iterables) are split into contiguous runs; unsized iterables are
    dealt round-robin across a fixed ``num_shards`` (a stream of record batches: each batch
    in contiguous runs), or fill one shard after another.

    Every shard is written under a temporary name and renamed only when all are complete
    and synced; any error (disk full, Ctrl-C) removes the temporaries and leaves no final
    file. An existing dataset at ``prefix`` is refused unless ``overwrite=True``. A URL
    prefix (``s3://``, ``gs://``, ``memory://``, any fsspec filesystem) gets each shard
    uploaded under a temporary name as soon as it is written (local disk holds only the
    shards in progress), moved to its final name at the end, and the manifest last: there,
    a dataset is complete once its manifest exists, since object stores cannot rename
    atomically; ``storage_options`` (credentials, an endpoint) go to its filesystem.
    ``index=True`` writes ``.idx`` sidecars for uncompressed shards; with
    ``compression="gzip", seekable=True`` shards are written as gzip members of whole records
    (ordinary GZIP to TensorFlow) indexed by ``.gzi`` sidecars, for random access. Returns
    the :class:`Manifest`, also saved as ``{prefix}.manifest.json``.

    >>> columns = {"x": np.arange(1000)}
    >>> manifest = write_dataset(columns, "out/train", num_shards=4)  # doctest: +SKIP
    >>> manifest.records  # doctest: +SKIP
    1000
    """
    # A file:// URL is a local path.
    prefix = os.fspath(prefix).removeprefix("file://")
    compression = shard_compression(compression)
    if seekable and compression != "gzip":
        raise ValueError('seekable=True needs compression="gzip"')
    kwargs: dict[str, Any] = {
        "num_shards": num_shards,
        "max_shard_bytes": parse_size(max_shard_bytes),
        "hosts": hosts,
        "compression": compression,
        "schema": schema,
        "workers": workers,
        "index": bool(index) and (compression is None or seekable),
        "member_bytes": SEEKABLE_MEMBER_BYTES if seekable else None,
        "overwrite": overwrite,
        "progress": progress,
    }
    if is_url(prefix):
        return _write_remote(prefix, data, kwargs, storage_options)
    with _commit_of(prefix, kwargs, None) as commit:
        shards = _Shards(prefix, compression, kwargs["index"], kwargs["member_bytes"])
        return _written(data, shards, kwargs, commit)
