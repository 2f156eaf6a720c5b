"""The one way a dataset is committed, whoever writes it (``write_dataset``, ``reshard``,
``convert``, ``tfr.ray.Sink``, the Beam ``WriteExamples``): claim the prefix, write the
parts under temporary names, then give them all their final names or remove them all,
write the manifest, and clean up what the previous dataset left. ``repair``, which writes
one file and no manifest, gives it its name with the same ``commit_shard``."""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Callable
from typing import Any

from .. import _core
from ..io.paths import CLAIM_SUFFIX, StorageOptions, filesystem, is_url, remove, upload, write_file
from ..schema.features import Schema
from .manifest import (
    SHARD_GLOB,
    Manifest,
    ShardInfo,
    existing_files,
    index_sidecar,
    manifest_path,
    shard_name,
)

__all__ = ["DatasetCommit"]


class DatasetCommit:
    """One dataset at ``prefix`` (a path or a URL prefix), committed all or nothing.

    :meth:`begin` claims the prefix (on object stores, by an exclusive create of
    ``{prefix}.writing``) and refuses an existing dataset unless ``overwrite``; the writer
    then writes its parts under temporary names (each part a ``RecordWriter.finish()``
    info: ``data``, ``index``, ``records``, ``bytes``, ``crc32c``); :meth:`commit` gives
    them their final names ``{prefix}-SSSSS-of-NNNNN`` in order, or none of them, saves the
    manifest, and removes what is left of the previous dataset; :meth:`release` lets go of
    the claim. Used as a context manager, ``begin`` and ``release`` come with it.

    >>> with DatasetCommit("out/train", compression=None, index=False) as c:  # doctest: +SKIP
    ...     manifest = c.commit(parts, schema)
    """

    def __init__(
        self,
        prefix: str,
        *,
        compression: str | None,
        index: bool,
        overwrite: bool = False,
        storage_options: StorageOptions = None,
    ) -> None:
        check_prefix(prefix)
        self.url = is_url(prefix)
        self.prefix = prefix
        self.compression = compression
        self.index = index
        self.overwrite = overwrite
        self.storage_options = storage_options
        self.previous: list[str] = []
        self.claimed = False
        # Directories ``begin`` made for the prefix, deepest first: a write that fails
        # removes those it left empty.
        self.made: list[str] = []
        self.committed = False
        # Names the parts of this write, apart from any other writer's.
        self.token = uuid.uuid4().hex[:12]

    def __enter__(self) -> DatasetCommit:
        self.begin()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.release()
        if exc_type is not None:
            self.remove_made()

    @property
    def directory(self) -> str:
        """The prefix's directory, with its separator."""
        sep = "/" if self.url else os.sep
        head, _, _ = self.prefix.rpartition(sep)
        return head + sep if head else ""

    @property
    def stem(self) -> str:
        return self.prefix[len(self.directory) :]

    def begin(self) -> None:
        """Claims the prefix, and refuses a dataset already there unless ``overwrite``."""
        if self.url:
            _claim(self.prefix, self.storage_options, self.overwrite)
            self.claimed = True
        else:
            self.made = _make_parents(self.prefix)
        self.previous = self._existing()
        if self.previous and not self.overwrite:
            self.release()
            raise FileExistsError(
                errno.EEXIST,
                "a dataset already exists here; pass overwrite=True to replace it",
                self.previous[0],
            )

    def commit(self, parts: list[dict[str, Any]], schema: Schema | None) -> Manifest:
        """Gives ``parts`` their final names, in order, then saves the manifest: all or
        nothing (a failure removes the shards already moved, and the parts). Without
        ``overwrite`` a dataset that another writer finished here meanwhile stays whole:
        ``FileExistsError``. Returns the manifest."""
        shards = self._move(parts)
        manifest = Manifest(
            prefix=self.stem,
            shards=shards,
            compression=self.compression,
            schema=schema,
            index=self.index,
            path=manifest_path(self.prefix),
        )
        final = [self.directory + s.file for s in shards]
        final += [index_sidecar(f, self.compression) for f in final if self.index]
        try:
            manifest.save(replace=self.overwrite, storage_options=self.storage_options)
        except BaseException:
            for path in final:
                remove(path, self.storage_options)
            raise
        kept = {self._key(p) for p in [*final, manifest.path]}
        for stale in self.previous:
            if self._key(stale) not in kept:
                remove(stale, self.storage_options)
        self.committed = True
        return manifest

    def abort(self, parts: list[dict[str, Any]]) -> None:
        """Removes parts written under temporary names."""
        for info in parts:
            remove(info["data"], self.storage_options)
            remove(info["index"], self.storage_options)

    def release(self) -> None:
        """Lets go of the claim on the prefix (object stores)."""
        if self.claimed:
            remove(self.prefix + CLAIM_SUFFIX, self.storage_options)
            self.claimed = False

    def remove_made(self) -> None:
        """After a write that failed, removes the directories :meth:`begin` made for the
        prefix, those still empty."""
        if not self.committed:
            for directory in self.made:
                try:
                    os.rmdir(directory)
                except OSError:  # another writer's files, or gone already
                    break
        self.made = []

    def write_part(self, name: str, fill: Callable[[Any], None]) -> dict[str, Any]:
        """Writes one part where distributed writers (Ray tasks, Beam workers) leave their
        parts for :meth:`commit`: ``fill(writer)`` writes the records to a
        ``_core.RecordWriter``. ``name`` tells the part apart from the others of this
        write. A URL prefix's part is written on local disk, then uploaded beside the
        prefix under a hidden name. Returns the part's info."""
        part = self.part_path(name)
        local = tempfile.mkdtemp(prefix="tfrecordkit-") if self.url else None
        try:
            path = os.path.join(local, os.path.basename(part)) if local else part
            writer = _core.RecordWriter(
                path, self.compression or "none", None, True, self.index, None, part=True
            )
            try:
                fill(writer)
                info = writer.finish()
            except BaseException:
                writer.abort()
                raise
            if local:
                info = self.upload_part(info, part)
        finally:
            if local:
                shutil.rmtree(local, ignore_errors=True)
        return info

    def upload_part(self, info: dict[str, Any], part: str) -> dict[str, Any]:
        """Uploads a part written on local disk (``info`` as ``RecordWriter.finish`` gives
        it) to ``part`` beside the prefix, its index sidecar beside it; returns the info
        of the uploaded part."""
        upload(info["data"], part, storage_options=self.storage_options)
        if info["index"]:
            upload(info["index"], part + ".idx", storage_options=self.storage_options)
        return {**info, "data": part, "index": part + ".idx" if info["index"] else None}

    def clean_parts(self) -> None:
        """Removes what is left of this write's parts (those of failed or retried
        tasks)."""
        pattern = f"*{self.stem}.part-{self.token}-*"
        if self.url:
            fs, path = filesystem(self.prefix, "writing to", self.storage_options)
            parent = path.rsplit("/", 1)[0]
            for p in fs.glob(f"{parent}/{pattern}"):
                with contextlib.suppress(FileNotFoundError):
                    fs.rm_file(p)
            return
        directory = self.directory or "."
        names = os.listdir(directory) if os.path.isdir(directory) else []
        for name in fnmatch.filter(names, pattern):
            remove(os.path.join(directory, name))

    # -- internals -------------------------------------------------------------------

    def part_path(self, name: str) -> str:
        """Where part ``name`` waits for its final name (locally, the writer hides it
        under a temporary name of its own until then)."""
        hidden = "." if self.url else ""
        return f"{self.directory}{hidden}{self.stem}.part-{self.token}-{name}.tfrecord"

    def _key(self, path: str) -> str:
        return path if self.url else os.path.abspath(path)

    def _existing(self) -> list[str]:
        if not self.url:
            return existing_files(self.prefix)
        fs, path = filesystem(self.prefix, "writing to", self.storage_options)
        found = sorted(fs.glob(f"{path}{SHARD_GLOB}"))
        found += [p for p in (manifest_path(path),) if fs.exists(p)]
        return [self.directory + p.rsplit("/", 1)[-1] for p in found]

    def _move(self, parts: list[dict[str, Any]]) -> list[ShardInfo]:
        """Moves every part (and its index sidecar) to its final name, in order; on a
        failure, removes what was moved and the parts not yet moved."""
        n = len(parts)
        shards: list[ShardInfo] = []
        moved: list[str] = []
        try:
            for i, info in enumerate(parts):
                final = shard_name(self.prefix, i, n, self.compression)
                sidecar = index_sidecar(final, self.compression) if info["index"] else None
                if self.url:
                    fs, _ = filesystem(self.prefix, "writing to", self.storage_options)
                    for source, target in [(info["data"], final), (info["index"], sidecar)]:
                        if source is None or target is None:
                            continue
                        fs.mv(self._inner(source), self._inner(target))
                        moved.append(target)
                else:
                    # Without overwrite, a name another writer took meanwhile fails here.
                    _core.commit_shard(info["data"], final, info["index"], sidecar, self.overwrite)
                    moved += [final] + ([sidecar] if sidecar else [])
                name = final[len(self.directory) :]
                crc = f"{info['crc32c']:08x}"
                shards.append(ShardInfo(name, info["records"], info["bytes"], crc))
        except BaseException:
            for path in moved:
                remove(path, self.storage_options)
            self.abort(parts[len(shards) :])
            raise
        return shards

    def _inner(self, url: str) -> str:
        return filesystem(url, "writing to", self.storage_options)[1]


def _make_parents(prefix: str) -> list[str]:
    """Makes the directory a local prefix names; returns those it made, deepest first."""
    directory = os.path.dirname(os.path.abspath(prefix))
    missing = []
    while directory and not os.path.isdir(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    return missing


def _claim(url_prefix: str, options: StorageOptions, overwrite: bool) -> None:
    """Claims a URL prefix for one writer, by an exclusive create of ``{prefix}.writing``
    (a note of who holds it): ``FileExistsError`` when another writer holds it, unless
    ``overwrite`` (which clears a claim a killed writer left)."""
    note = json.dumps({"host": socket.gethostname(), "pid": os.getpid()})
    try:
        write_file(url_prefix + CLAIM_SUFFIX, note, options, replace=overwrite)
    except FileExistsError:
        raise FileExistsError(
            errno.EEXIST,
            "another writer is writing a dataset here (if it was killed, remove this "
            "claim or pass overwrite=True)",
            url_prefix + CLAIM_SUFFIX,
        ) from None
    except OSError as err:
        # The claim is the first thing written: what stops it stops the dataset.
        why = err.strerror or str(err)
        raise type(err)(err.errno, f"cannot write a dataset here: {why}", url_prefix) from None


def check_prefix(prefix: str) -> None:
    """Refuses a dataset prefix that names no file: empty, or a directory (ending in a
    separator, ``.`` or ``..``), where the shards would be hidden ``-SSSSS-of-NNNNN`` files."""
    name = prefix.replace(os.sep, "/").rsplit("/", 1)[-1]
    if name in ("", ".", ".."):
        raise ValueError(
            f"the dataset prefix {prefix!r} names a directory, not the shards' common start: "
            "give one such as 'out/train' (shards out/train-00000-of-00004.tfrecord...)"
        )
