"""Spark's ``partitionBy`` for ``format("tfrecord")``: Hive-style ``name=value``
directories under the path saved to, each a committed dataset of its rows, all written by
one Spark job and committed by the driver.

``df.write.format("tfrecord").partitionBy("lang").save("out/train")`` gives
``out/train/lang=en/part-00000-of-00002.tfrecord`` (with ``.idx`` sidecars and
``part.manifest.json``), as Spark and spark-tfrecord lay out partitioned output: the path
is the output's directory, laid out for Spark's partition discovery (which
:func:`partitioned_files` and :func:`partition_values` do for a reader). Values are
strings, as Spark casts them for paths, escaped as Spark escapes them; a null or empty one
is ``__HIVE_DEFAULT_PARTITION__``.

>>> partition_dir(["lang", "year"], ["en", "2024"])
'lang=en/year=2024'
>>> partition_dir(["url"], ["a/b:c"]), partition_dir(["lang"], [None])
('url=a%2Fb%3Ac', 'lang=__HIVE_DEFAULT_PARTITION__')
>>> partition_values(["out/train/lang=en/part-00000-of-00001.tfrecord"], ["out/train"])
(['lang'], [('en',)])
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from ..datasets.commit import DatasetCommit
from ..datasets.manifest import SHARD_GLOB, existing_files, manifest_path
from ..io.paths import StorageOptions, as_url, filesystem, is_sidecar, is_url, join, remove
from ..schema.columns import as_table
from ..schema.features import Schema

__all__ = [
    "HIVE_NULL",
    "PartitionedWriter",
    "datasets_under",
    "partition_dir",
    "partition_values",
    "partitioned_files",
    "prepare",
]

#: The directory value of a null (or empty) partition value, as Hive and Spark name it.
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
#: The prefix of each partition's dataset inside its directory.
STEM = "part"
_MANIFEST = ".manifest.json"
# What Spark's ExternalCatalogUtils.escapePathName escapes, as %XX.
_ESCAPED = frozenset([chr(c) for c in range(1, 32)] + list("\"#%'*/:=?\\\x7f{[]^"))
_UNESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def escape(text: str) -> str:
    """``text`` as a path segment, escaped as Spark escapes partition names and values."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def unescape(text: str) -> str:
    return _UNESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def partition_dir(columns: Sequence[str], values: Sequence[str | None]) -> str:
    """The directory of one partition: ``name=value`` segments, nested in column order."""
    return "/".join(
        f"{escape(c)}={HIVE_NULL if v is None or v == '' else escape(v)}"
        for c, v in zip(columns, values, strict=True)
    )


# -- reading back --------------------------------------------------------------------------


def _hidden(name: str) -> bool:
    """Names Spark's file listing skips: staging (``.``) and job files (``_SUCCESS``), but
    not the directory of a partition column named with ``_`` (``_split=a``)."""
    return name.startswith(".") or (name.startswith("_") and "=" not in name)


def partitioned_files(directory: str, storage_options: StorageOptions = None) -> list[str]:
    """The data files in ``directory`` and in its ``name=value`` subdirectories, at any
    depth, sorted: sidecars, hidden names (``.staging-*``) and ``_``-names (``_SUCCESS``)
    left out, and other subdirectories not entered."""
    found: list[str] = []
    if is_url(directory):
        fs, inner = filesystem(directory, storage_options=storage_options)
        inner = inner.rstrip("/")
        for path in fs.find(inner):
            *dirs, name = path[len(inner) + 1 :].split("/")
            if all("=" in d and not _hidden(d) for d in dirs) and not _hidden(name):
                found.append(as_url(directory, path))
    else:
        for here, subdirs, names in os.walk(directory):
            subdirs[:] = sorted(d for d in subdirs if "=" in d and not _hidden(d))
            found += [os.path.join(here, n) for n in names if not _hidden(n)]
    return sorted(f for f in found if not is_sidecar(f))


def _split(path: str) -> tuple[str, str]:
    """A path's directory and last name, for a local path or a URL."""
    if is_url(path):
        head, _, name = path.rstrip("/").rpartition("/")
        return head, name
    return os.path.split(path)


def partition_values(
    files: Sequence[str], bases: Sequence[str] = ()
) -> tuple[list[str], list[tuple[str | None, ...]]]:
    """The partition columns of ``files`` and each file's values, as Spark discovers them:
    from the ``name=value`` directories above each file, up to the first other directory
    or one of ``bases`` (the paths that were loaded); names and values unescaped,
    ``__HIVE_DEFAULT_PARTITION__`` None. Files outside partition directories give no
    columns; files whose directories name different columns raise ``ValueError``."""
    stops = {b.rstrip("/") if is_url(b) else os.path.abspath(b) for b in bases}
    columns: list[str] | None = None
    values: list[tuple[str | None, ...]] = []
    first = ""
    for f in files:
        found: list[tuple[str, str | None]] = []
        here, _ = _split(f if is_url(f) else os.path.abspath(f))
        while here and here not in stops:
            parent, name = _split(here)
            key, eq, value = name.partition("=")
            if not eq or not key or parent == here:
                break
            found.append((unescape(key), None if value == HIVE_NULL else unescape(value)))
            here = parent
        found.reverse()
        names = [k for k, _ in found]
        if columns is None:
            columns, first = names, f
        elif names != columns:
            raise ValueError(
                f"conflicting partition directories: {f} has columns {names}, {first} {columns}"
            )
        values.append(tuple(v for _, v in found))
    return columns or [], values


# -- writing ---------------------------------------------------------------------------------


def prepare(df: Any, columns: Iterable[Any]) -> tuple[Any, list[str]]:
    """``df`` ready for a partitioned write, and the partition columns' names as ``df``
    spells them: those columns cast to strings (as Spark casts values for paths, an empty
    string null) and each Spark partition sorted by them, as Spark sorts a partitioned
    write, so that a task writes one part per value it sees."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    fields = {f.name.lower(): f for f in df.schema.fields}
    chosen: list[str] = []
    for c in columns:
        if not isinstance(c, str):
            raise TypeError(f"partitionBy takes column names, not {type(c).__name__}")
        f = fields.get(c.lower())
        if f is None:
            raise ValueError(f"partitionBy column {c!r} is not in the DataFrame: {df.columns}")
        if isinstance(f.dataType, (T.ArrayType, T.MapType, T.StructType)):
            raise TypeError(
                f"partitionBy column {c!r} is {f.dataType.simpleString()}, not single values"
            )
        if f.name in chosen:
            raise ValueError(f"partitionBy names the column {c!r} twice")
        chosen.append(f.name)
    if len(chosen) == len(df.columns):
        raise ValueError("partitionBy takes every column: the records would be empty")

    def col(name: str) -> Any:
        return F.col("`" + name.replace("`", "``") + "`")

    # An empty value is null's directory, so it shares null's run and null's part.
    as_text = {n: F.nullif(col(n).cast("string"), F.lit("")).alias(n) for n in chosen}
    cast = [as_text.get(n, col(n)) for n in df.columns]
    return df.select(*cast).sortWithinPartitions(*[col(n) for n in chosen]), chosen


def datasets_under(root: str, storage_options: StorageOptions = None) -> list[str]:
    """The prefixes of the committed datasets (their manifests) under ``root``, at any
    depth, hidden directories (a write's staging) left out."""
    if is_url(root):
        fs, inner = filesystem(root, storage_options=storage_options)
        inner = inner.rstrip("/")
        try:
            paths = fs.find(inner)
        except FileNotFoundError:
            return []
        return sorted(
            as_url(root, p[: -len(_MANIFEST)])
            for p in paths
            if p.endswith(_MANIFEST) and not any(s.startswith(".") for s in p.split("/"))
        )
    found = []
    for here, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]
        found += [os.path.join(here, n[: -len(_MANIFEST)]) for n in names if n.endswith(_MANIFEST)]
    return sorted(found)


def _dataset_files(prefix: str, storage_options: StorageOptions) -> list[str]:
    """A dataset's files, its manifest first: removed in this order, it is never a
    manifest naming missing shards."""
    if not is_url(prefix):
        shards = [f for f in existing_files(prefix) if f != manifest_path(prefix)]
    else:
        fs, inner = filesystem(prefix, "writing to", storage_options)
        shards = [as_url(prefix, p) for p in fs.glob(inner + SHARD_GLOB)]
    return [manifest_path(prefix), *shards]


def _missing(path: str) -> list[str]:
    """``path`` and its ancestors that do not exist yet, deepest first."""
    out = []
    while path and not os.path.exists(path):
        out.append(path)
        path = os.path.dirname(path)
    return out


@dataclass
class _Parts(WriterCommitMessage):
    """One task's parts, each with the partition directory it belongs in."""

    task: int
    parts: list[tuple[str, dict[str, Any]]]
    schema: str | None


class _Runs:
    """The rows of Arrow batches in runs of one partition value: ``head`` is the next run
    (its value and its rows), ``pop`` takes it."""

    def __init__(self, batches: Iterator[Any], columns: list[str]) -> None:
        self.columns = columns
        self.pending = self._split(batches)
        self.head = next(self.pending, None)

    def pop(self) -> tuple[tuple[str | None, ...], Any]:
        assert self.head is not None
        run, self.head = self.head, next(self.pending, None)
        return run

    def _split(self, batches: Iterator[Any]) -> Iterator[tuple[tuple[str | None, ...], Any]]:
        import numpy as np
        import pyarrow.compute as pc

        for batch in batches:
            n = batch.num_rows
            if not n:
                continue
            keys = [batch.column(c) for c in self.columns]
            change = np.zeros(n - 1, bool)
            for key in keys:  # where a value differs from the one before (null equal to null)
                a, b = key.slice(1), key.slice(0, n - 1)
                na, nb = pc.is_null(a), pc.is_null(b)
                differs = pc.if_else(pc.or_(na, nb), pc.xor(na, nb), pc.not_equal(a, b))
                change |= differs.to_numpy(zero_copy_only=False)
            starts = [0, *(np.flatnonzero(change) + 1).tolist()]
            for start, end in zip(starts, [*starts[1:], n], strict=True):
                yield tuple(k[start].as_py() for k in keys), batch.slice(start, end - start)


class PartitionedWriter(DataSourceArrowWriter):
    """Writes a DataFrame partitioned by ``columns`` under the directory ``root``: each
    task writes a part per partition value it sees into a hidden staging directory
    (``root/.staging-*``); once every task has succeeded, the driver commits one dataset
    per value, ``root/name=value/part``, from the parts the tasks reported, and removes
    the staging directory. A failed job removes the staging directory, and the
    directories it made, and so leaves nothing. A failure while the driver commits
    removes the datasets it had committed (with ``overwrite``, a partition's old dataset
    is gone once its new one is committed)."""

    def __init__(
        self,
        root: str,
        columns: list[str],
        *,
        compression: str | None,
        index: bool,
        mode: str,
        dynamic: bool = False,
        storage_options: StorageOptions = None,
    ) -> None:
        self.url = is_url(root)
        self.root = root.rstrip("/") if self.url else os.path.abspath(root)
        self.columns = columns
        self.compression = compression
        self.index = index
        self.overwrite = mode == "overwrite"
        self.dynamic = dynamic
        self.storage_options = storage_options
        self.staging = join(self.root, f".staging-{uuid.uuid4().hex[:12]}")
        # Made here, on the driver: a task never makes it, so that a task that outlives
        # the job (a lost executor's) cannot leave parts after the staging is removed.
        self.made = [] if self.url else _missing(self.staging)
        if not self.url:
            os.makedirs(self.staging)

    def _commit(self, prefix: str) -> DatasetCommit:
        return DatasetCommit(
            prefix,
            compression=self.compression,
            index=self.index,
            overwrite=self.overwrite,
            storage_options=self.storage_options,
        )

    def write(self, iterator: Iterator[Any]) -> _Parts:
        import pyarrow as pa
        from pyspark import TaskContext

        ctx = TaskContext.get()
        task = ctx.partitionId() if ctx else 0
        attempt = ctx.attemptNumber() if ctx else 0
        staged = self._commit(join(self.staging, STEM))
        runs = _Runs(iterator, self.columns)
        parts: list[tuple[str, dict[str, Any]]] = []
        schema: str | None = None

        def fill(writer: Any) -> None:
            nonlocal schema
            assert runs.head is not None
            value = runs.head[0]
            while runs.head is not None and runs.head[0] == value:
                rows = pa.Table.from_batches([runs.pop()[1]]).drop_columns(self.columns)
                table = as_table(rows)
                if schema is None:
                    schema = table.schema().to_json()
                writer.write_columns(table.native())

        while runs.head is not None:
            where = partition_dir(self.columns, runs.head[0])
            parts.append((where, staged.write_part(f"{task:05d}-{attempt}-{len(parts)}", fill)))
        return _Parts(task, parts, schema)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        # Only the parts the tasks reported: a lost task's retry may have left others.
        reports = sorted((m for m in messages if isinstance(m, _Parts)), key=lambda m: m.task)
        groups: dict[str, list[dict[str, Any]]] = {}
        for m in reports:
            for where, info in m.parts:
                groups.setdefault(where, []).append(info)
        schemas = {m.schema for m in reports if m.schema is not None}
        schema = Schema.from_json(schemas.pop()) if len(schemas) == 1 else None
        committed: list[str] = []
        emptied: list[str] = []
        try:
            replace = self.overwrite and not self.dynamic
            stale = datasets_under(self.root, self.storage_options) if replace else []
            for where in sorted(groups):
                commit = self._commit(join(join(self.root, where), STEM))
                emptied += [] if self.url else _missing(os.path.dirname(commit.prefix))
                commit.begin()
                try:
                    commit.commit(groups[where], schema)
                finally:
                    commit.release()
                committed.append(commit.prefix)
            for prefix in sorted(set(stale) - set(committed)):
                self._remove(prefix)
                emptied.append(os.path.dirname(prefix))
        except BaseException:
            for prefix in committed:
                self._remove(prefix)
            raise
        finally:
            self._clean(emptied)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._clean([])

    def _remove(self, prefix: str) -> None:
        for path in _dataset_files(prefix, self.storage_options):
            remove(path, self.storage_options)

    def _clean(self, emptied: list[str]) -> None:
        """Removes the staging directory (every part, reported or not), then the
        directories this write made or emptied, where they are empty."""
        if self.url:
            fs, inner = filesystem(self.staging, "writing to", self.storage_options)
            with contextlib.suppress(FileNotFoundError):
                fs.rm(inner, recursive=True)
            return
        shutil.rmtree(self.staging, ignore_errors=True)
        below = set()
        for path in emptied:
            while path.startswith(self.root + os.sep):
                below.add(path)
                path = os.path.dirname(path)
        for path in [*sorted(below, key=len, reverse=True), *self.made]:
            with contextlib.suppress(OSError):  # not empty: kept
                os.rmdir(path)
