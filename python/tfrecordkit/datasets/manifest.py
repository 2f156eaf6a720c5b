"""Dataset manifests and shard names: ``{prefix}.manifest.json`` beside
``{prefix}-SSSSS-of-NNNNN.tfrecord`` shards."""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import _core
from ..errors import SidecarError
from ..io.paths import StorageOptions, contained, dirname, quote, write_file
from ..io.sidecars import read_sidecar
from ..schema.features import Schema

__all__ = ["SHARD_RE", "Manifest", "ShardInfo", "manifest_path", "shard_name"]

MANIFEST_FORMAT = "tfrecordkit.manifest/1"
_EXT = {None: ".tfrecord", "gzip": ".tfrecord.gz", "zlib": ".tfrecord.zz"}
SHARD_RE = re.compile(
    r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.tfrecord(\.gz|\.zz)?$"
)
#: The glob of a prefix's shards, after the escaped prefix.
SHARD_GLOB = "-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].tfrecord*"
#: The most shards a dataset has: as many as five-digit ``-of-NNNNN`` names count.
MAX_SHARDS = 99_999


def shard_name(prefix: str, index: int, count: int, compression: str | None = None) -> str:
    """``{prefix}-{index:05d}-of-{count:05d}.tfrecord`` (``.gz`` / ``.zz`` when compressed)."""
    return f"{prefix}-{index:05d}-of-{count:05d}{_EXT[compression]}"


def manifest_path(prefix: str) -> str:
    return f"{prefix}.manifest.json"


def index_sidecar(shard: str, compression: str | None) -> str:
    """The index sidecar of a shard: ``.idx`` when uncompressed, ``.gzi`` for seekable gzip."""
    return shard + (".idx" if compression is None else ".gzi")


def existing_files(prefix: str) -> list[str]:
    """Everything a dataset at local ``prefix`` consists of: shards, sidecars, manifest."""
    found = [
        p
        for p in glob.glob(glob.escape(prefix) + SHARD_GLOB)
        if SHARD_RE.match(os.path.basename(p))
    ]
    found += [p + s for p in found for s in (".idx", ".gzi") if os.path.exists(p + s)]
    if os.path.exists(manifest_path(prefix)):
        found.append(manifest_path(prefix))
    return sorted(found)


@dataclass
class ShardInfo:
    file: str
    records: int
    bytes: int
    crc32c: str


def _shard_info(path: str, i: int, s: Any) -> ShardInfo:
    """One shard entry of a manifest, its fields checked."""
    if not isinstance(s, Mapping):
        raise SidecarError(f"shard {i} is not a JSON object", path=path or None)
    file, crc = s.get("file"), s.get("crc32c", "")
    counts = [s.get("records"), s.get("bytes")]
    if not isinstance(file, str) or not isinstance(crc, str):
        raise SidecarError(f"shard {i} needs a file name and a crc32c string", path=path or None)
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**63 for n in counts):
        raise SidecarError(
            f"shard {i} needs whole, non-negative records and bytes counts",
            path=path or None,
        )
    return ShardInfo(file, counts[0], counts[1], crc)


@dataclass
class Manifest:
    """What :func:`write_dataset` wrote: ``{prefix}.manifest.json`` beside the shards."""

    prefix: str
    shards: list[ShardInfo]
    compression: str | None = None
    schema: Schema | None = None
    index: bool = False
    version: str = _core.__version__
    path: str = field(default="", compare=False)

    @property
    def records(self) -> int:
        """The records in all shards."""
        return sum(s.records for s in self.shards)

    @property
    def bytes(self) -> int:
        """The size of all shards, in bytes, as written."""
        return sum(s.bytes for s in self.shards)

    @property
    def files(self) -> list[str]:
        """The shards' paths, in order: each a plain file beside the manifest (see
        :func:`from_dict`)."""
        directory = dirname(self.path)
        where = self.path or "manifest"
        return [
            contained(directory, s.file, sidecar=where, entry=f"shard {i}")
            for i, s in enumerate(self.shards)
        ]

    def to_dict(self) -> dict[str, Any]:
        """The manifest as its JSON file holds it (see :func:`from_dict`)."""
        return {
            "format": MANIFEST_FORMAT,
            "version": self.version,
            "prefix": self.prefix,
            "compression": self.compression,
            "index": self.index,
            "records": self.records,
            "bytes": self.bytes,
            "schema": None if self.schema is None else self.schema.to_dict(),
            "shards": [asdict(s) for s in self.shards],
        }

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Manifest:
        """A manifest from its JSON form, every field checked: anything malformed is a
        :class:`SidecarError`, a shard named outside the manifest's directory an
        :class:`UnsafePathError` (a manifest names plain files beside itself), a bad
        schema a :class:`SchemaError`; all before any shard is opened."""
        where = path or "manifest"
        if not isinstance(d, Mapping) or d.get("format") != MANIFEST_FORMAT:
            raise SidecarError(f"not a {MANIFEST_FORMAT} manifest", path=path or None)
        compression = d.get("compression")
        known = compression is None or (isinstance(compression, str) and compression in _EXT)
        if not known:
            raise SidecarError(
                f"compression {quote(str(compression))} is not gzip, zlib or null",
                path=path or None,
            )
        shards = d.get("shards")
        if not isinstance(shards, list):
            raise SidecarError("no list of shards", path=path or None)
        infos = [_shard_info(path, i, s) for i, s in enumerate(shards)]
        directory = dirname(path)
        for i, info in enumerate(infos):
            contained(directory, info.file, sidecar=where, entry=f"shard {i}")
        schema = d.get("schema")
        if schema is not None and not isinstance(schema, Mapping):
            raise SidecarError("the schema is not a JSON object", path=path or None)
        prefix, version = d.get("prefix", ""), d.get("version", "?")
        if not isinstance(prefix, str) or not isinstance(version, str):
            raise SidecarError("prefix and version are strings", path=path or None)
        return cls(
            prefix=prefix,
            shards=infos,
            compression=compression,
            schema=None if schema is None else Schema.from_dict(schema),
            index=bool(d.get("index", False)),
            version=version,
            path=path,
        )

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, storage_options: StorageOptions = None
    ) -> Manifest:
        """Reads a manifest file, or the manifest of a dataset prefix; a URL is read
        through its filesystem, opened with ``storage_options``.

        >>> Manifest.load("s3://bucket/data/train").files  # doctest: +SKIP
        ['s3://bucket/data/train-00000-of-00004.tfrecord', ...]
        """
        path = os.fspath(path)
        if not path.endswith(".manifest.json"):
            path += ".manifest.json"
        data = read_sidecar(path, storage_options)
        try:
            d = json.loads(data)
        except (ValueError, RecursionError) as err:  # bad JSON, bad UTF-8, too deep
            raise SidecarError(f"not JSON ({type(err).__name__})", path=path) from None
        return cls.from_dict(d, path)

    def save(self, *, replace: bool = True, storage_options: StorageOptions = None) -> None:
        """Writes the manifest to :attr:`path` (a path or a URL) whole, atomically. Without
        ``replace``, an existing manifest (another writer's) raises ``FileExistsError`` and
        stays."""
        text = json.dumps(self.to_dict(), indent=1) + "\n"
        write_file(self.path, text, storage_options, replace=replace)
