"""Ray Data: TFRecords of Examples as a ``ray.data.Dataset``, and a datasink that writes
one as sharded TFRecords with a manifest.

Reading is :func:`tfrecordkit.read_arrow` inside Ray's read tasks: each task reads a group
of files natively and hands Ray Arrow blocks, with no Python object per row. Writing
encodes each task's blocks natively into one shard; the shards take their final
``-SSSSS-of-NNNNN`` names, and the manifest is written, once every task has finished.

>>> import ray  # doctest: +SKIP
>>> ds = tfr.ray.read("data/train-*.tfrecord")  # doctest: +SKIP
>>> ds.map_batches(fn).write_datasink(tfr.ray.Sink("out/train"))  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import inspect
import os
import types
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import ray.data
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask

from ..datasets.commit import DatasetCommit
from ..datasets.manifest import Manifest
from ..io.options import DEFAULT_BATCH_BYTES, ReadOptions, check_count
from ..io.paths import Paths, StorageOptions, expand_paths, file_size, is_sidecar, is_url
from ..io.ranges import ByteRange, cut, span_bytes
from ..schema.columns import as_table
from ..schema.features import Schema, _as_schema
from .arrow import columns_to_read, read_arrow

__all__ = ["Sink", "read"]

#: Ray read tasks get at least this many bytes each: smaller files are not split.
MIN_TASK_BYTES = 16 << 20


def read(
    paths: Paths,
    schema: Schema | dict[str, Any] | None = None,
    *,
    columns: Sequence[str] | None = None,
    batch_size: int = 65_536,
    strings: bool | Sequence[str] = False,
    compression: str | None = "auto",
    storage_options: StorageOptions = None,
    sequence_schema: Schema | dict[str, Any] | None = None,
    override_num_blocks: int | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    on_error: str = "raise",
    resync: bool = False,
    nullable: bool | Sequence[str] = False,
    **ray_args: Any,
) -> Any:
    """The Examples of ``paths`` (files, globs, directories or URLs) as a
    ``ray.data.Dataset`` with one column per feature, typed as :func:`tfrecordkit.read_arrow`
    types them.

    The files are split among Ray's read tasks (``override_num_blocks`` caps their number),
    and a file larger than a task's share is itself split by the record offsets of its
    ``.idx`` sidecar (:func:`tfrecordkit.byte_ranges`); each task streams its part in
    Arrow blocks of up to ``batch_size`` rows, a block ending sooner once its records hold
    ``batch_bytes`` (4 MiB by default), so that large rows (images, audio) keep blocks
    small. ``schema`` is
    inferred from the first Examples when omitted; ``sequence_schema`` reads
    SequenceExamples, as :func:`tfrecordkit.read_arrow` does; ``on_error="skip"`` steps
    over damaged records (``resync``: on to the next intact one after a damaged header);
    ``nullable`` reads features that an Example may lack as null there, as
    :func:`tfrecordkit.read_arrow` does. A local directory is read as the data files in
    it. Other keyword arguments go to ``ray.data.read_datasource`` (``concurrency``,
    ``num_cpus``, ...); any it does not take is a ``TypeError``.

    >>> ds = tfr.ray.read("s3://bucket/train-*.tfrecord")  # doctest: +SKIP
    >>> ds.take(1)  # doctest: +SKIP
    """
    taken = set(inspect.signature(ray.data.read_datasource).parameters) - {"datasource"}
    unknown = sorted(set(ray_args) - taken)
    if unknown:
        raise TypeError(f"read() got an unexpected keyword argument {unknown[0]!r}")
    if isinstance(columns, str):
        raise TypeError(f"columns is a list of names, not the string {columns!r}")
    check_count("batch_size", batch_size, low=1)
    check_count("batch_bytes", batch_bytes, low=1)
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    files = _data_files(paths, storage_options)
    read: dict[str, Any] = {"on_error": on_error, "resync": bool(resync)}
    sampled = ReadOptions(compression=compression, storage_options=storage_options, **read)
    given = (files, schema, sequence_schema, columns, strings, nullable)
    context, lists, arrow_schema, optional = columns_to_read(*given, sampled)
    read["nullable"] = sorted(optional)
    sizes = [file_size(f, storage_options) for f in files]
    options = (batch_size, batch_bytes, strings, compression, storage_options, lists, read)
    source = _Source(files, sizes, context, arrow_schema, options)
    return ray.data.read_datasource(source, override_num_blocks=override_num_blocks, **ray_args)


def _read_files(
    files: list[str | ByteRange],
    schema: Schema,
    batch_size: int,
    batch_bytes: int,
    strings: bool | Sequence[str],
    compression: str | None,
    storage_options: StorageOptions,
    sequence_schema: Schema | None,
    read: dict[str, Any],
) -> Iterator[Any]:
    import pyarrow as pa

    reader = read_arrow(
        files,
        schema,
        batch_size=batch_size,
        batch_bytes=batch_bytes,
        strings=strings,
        compression=compression,
        storage_options=storage_options,
        sequence_schema=sequence_schema,
        **read,
    )
    for batch in reader:
        yield pa.Table.from_batches([batch])


class _Source(Datasource):
    def __init__(
        self,
        files: list[str],
        sizes: list[int],
        schema: Schema,
        arrow_schema: Any,
        options: tuple[Any, ...],
    ) -> None:
        super().__init__()
        self.files, self.sizes = files, sizes
        self.schema, self.arrow_schema = schema, arrow_schema
        # batch_size, batch_bytes, strings, compression, storage_options, sequence_schema,
        # and the error policy
        self.options = options

    def get_name(self) -> str:
        return "TFRecords"

    def estimate_inmemory_data_size(self) -> int | None:
        return sum(self.sizes)

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        parallelism = max(1, parallelism)
        # Files larger than a task's share are split by the record offsets of their index,
        # so that one large file still feeds every task.
        share = max(MIN_TASK_BYTES, -(-sum(self.sizes) // parallelism))
        compression, options = self.options[3], self.options[4]
        items: list[str | ByteRange] = []
        sizes: list[int] = []
        for f, size in zip(self.files, self.sizes, strict=True):
            pieces = cut(f, size, share, compression, options)
            items += pieces
            sizes += [span_bytes(p, size) for p in pieces]
        groups = _balanced(items, sizes, min(parallelism, len(items)))
        tasks = []
        for group in groups:
            files = [items[i] for i in group]
            metadata = BlockMetadata(
                num_rows=None,
                size_bytes=sum(sizes[i] for i in group),
                input_files=tuple(f if isinstance(f, str) else f.path for f in files),
                exec_stats=None,
            )
            read_fn = functools.partial(_read_files, files, self.schema, *self.options)
            tasks.append(
                ReadTask(
                    read_fn,
                    metadata,
                    schema=self.arrow_schema,
                    per_task_row_limit=per_task_row_limit,
                )
            )
        return tasks


def _data_files(paths: Paths, storage_options: StorageOptions) -> list[str]:
    """The files ``paths`` name (see :func:`tfrecordkit.expand_paths`), a local directory
    standing for the data files in it: not its sidecars, its hidden or ``_`` names (such
    as ``_SUCCESS``) or its subdirectories."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    if not isinstance(items, (list, tuple)):
        return expand_paths(paths, storage_options=storage_options)
    files: list[str] = []
    named: list[Any] = []  # paths and globs, expanded together (sidecars among them skipped)
    for item in items:
        path = os.fspath(item) if isinstance(item, os.PathLike) else item
        if not (isinstance(path, str) and not is_url(path) and os.path.isdir(path)):
            named.append(item)
            continue
        if named:
            files += expand_paths(named, storage_options=storage_options)
            named = []
        found = [
            os.path.join(path, name)
            for name in sorted(os.listdir(path))
            if not name.startswith((".", "_"))
            and not is_sidecar(name)
            and os.path.isfile(os.path.join(path, name))
        ]
        if not found:
            raise FileNotFoundError(2, "no data files in the directory", path)
        files += found
    if named or not files:
        files += expand_paths(named, storage_options=storage_options)
    return files


def _balanced(files: list[str | ByteRange], sizes: list[int], n: int) -> list[list[int]]:
    """``n`` groups of file (or range) indexes of about equal total size, each in file
    order."""
    groups: list[list[int]] = [[] for _ in range(n)]
    loads = [0] * n
    for i in sorted(range(len(files)), key=lambda i: -sizes[i]):
        k = loads.index(min(loads))
        groups[k].append(i)
        loads[k] += sizes[i]
    return [sorted(g) for g in groups if g]


class Sink(Datasink):
    """Writes a ``ray.data.Dataset`` as TFRecord shards ``{prefix}-SSSSS-of-NNNNN.tfrecord``
    and a manifest, the layout :func:`tfrecordkit.write_dataset` writes: one shard per
    write task, with rows encoded natively from Arrow blocks (columns become features as
    ``write_dataset`` makes them; ``schema`` overrides the dtypes).

    Shards are written under temporary names and take their final names when every task
    has finished, so a failed write leaves no shard behind, and an existing dataset at the
    prefix fails the write with ``FileExistsError`` unless ``overwrite``. ``prefix`` may be
    a URL: then the shards are uploaded under temporary names, and the prefix is claimed
    for the write as :func:`tfrecordkit.write_dataset` claims it. ``rows_per_shard`` asks
    Ray for at least that many rows per write task (use ``Dataset.repartition(n)`` for
    ``n`` shards).

    >>> ds.write_datasink(tfr.ray.Sink("out/train", rows_per_shard=100_000))  # doctest: +SKIP
    >>> tfr.Manifest.load("out/train").records  # doctest: +SKIP
    """

    def __init__(
        self,
        prefix: str | os.PathLike[str],
        *,
        compression: str | None = None,
        schema: dict[str, Any] | Schema | None = None,
        index: bool = True,
        overwrite: bool = False,
        rows_per_shard: int | None = None,
        storage_options: StorageOptions = None,
    ) -> None:
        if compression not in (None, "gzip", "zlib"):
            raise ValueError(f'compression must be None, "gzip" or "zlib", not {compression!r}')
        prefix = os.fspath(prefix)
        self.url = is_url(prefix)
        self.prefix = prefix if self.url else os.path.abspath(prefix)
        self.compression = compression
        self.schema = None if schema is None else dict(_as_schema(schema))
        self.index = bool(index) and compression is None
        self.overwrite = overwrite
        if rows_per_shard is not None:
            check_count("rows_per_shard", rows_per_shard, low=1)
        self.rows_per_shard = rows_per_shard
        self.storage_options = storage_options
        self.manifest: Manifest | None = None
        self.commit = DatasetCommit(
            self.prefix,
            compression=compression,
            index=self.index,
            overwrite=overwrite,
            storage_options=storage_options,
        )

    @property
    def min_rows_per_write(self) -> int | None:
        return self.rows_per_shard

    def get_name(self) -> str:
        return "TFRecords"

    def on_write_start(self, schema: Any = None) -> None:
        self.commit.begin()

    def write(self, blocks: Iterable[Any], ctx: Any) -> dict[str, Any]:
        """Encodes one task's blocks into one part under a temporary name."""
        task = int(ctx.task_idx)
        schema = None

        def fill(writer: Any) -> None:
            nonlocal schema
            for block in blocks:
                table = as_table(block, self.schema)
                if schema is None:
                    schema = table.schema().to_json()
                writer.write_columns(table.native())

        info = self.commit.write_part(f"{task:05d}", fill)
        return {"task": task, "info": info, "schema": schema}

    def on_write_complete(self, write_result: Any) -> None:
        returns = sorted(write_result.write_returns, key=lambda r: r["task"])
        if not returns:  # no rows, no tasks: the dataset is one empty shard
            returns = [self.write([], types.SimpleNamespace(task_idx=0))]
        kept = [r for r in returns if r["info"]["records"]] or returns[:1]
        self.commit.abort([r["info"] for r in returns if r not in kept])
        try:
            schemas = {r["schema"] for r in kept if r["schema"] is not None}
            schema = Schema.from_json(schemas.pop()) if len(schemas) == 1 else None
            self.manifest = self.commit.commit([r["info"] for r in kept], schema)
        finally:
            self.commit.clean_parts()
            self.commit.release()

    def on_write_failed(self, error: Exception) -> None:
        self.commit.clean_parts()
        self.commit.release()
        self.commit.remove_made()
