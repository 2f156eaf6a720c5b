"""Apache Beam transforms that read and write TFRecords with tfrecordkit.

``WriteExamples`` writes a dataset as :func:`tfrecordkit.write_dataset` does: each worker
writes its parts under temporary names, and one final step gives them all their
``-SSSSS-of-NNNNN`` names or removes them all, then saves the manifest (and ``.idx``
sidecars); an existing dataset is refused unless ``overwrite=True``. ``ReadExamples`` reads
and decodes (or parses by a schema) the Examples of local files matching a pattern.

>>> with beam.Pipeline() as p:  # doctest: +SKIP
...     rows = p | beam.Create([{"label": 1}, {"label": 2}])
...     rows | WriteExamples("out/train", num_shards=2)
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator, Mapping
from typing import Any

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from .._core import frame_record
from ..datasets.commit import DatasetCommit
from ..datasets.manifest import MAX_SHARDS, Manifest
from ..errors import TFRecordError
from ..io.options import check_count
from ..io.paths import StorageOptions, expand_paths
from ..io.records import read_records
from ..schema.example import decode_example, encode_example
from ..schema.features import Schema, _as_schema, parse_example, parsing_schema
from ..schema.reading import infer_schema

__all__ = ["ReadExamples", "WriteExamples", "frame"]


def frame(data: bytes) -> bytes:
    """One record in TFRecord framing: length, its masked CRC32C, data, its masked CRC32C."""
    return frame_record(data)


def _serialized(value: bytes | Mapping[str, Any]) -> bytes:
    if isinstance(value, bytes):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(
            "WriteExamples takes serialized records (bytes) or dicts of features, "
            f"not {type(value).__name__}"
        )
    return encode_example(value)


class _Deal(beam.DoFn):
    """Keys records ``0..n-1`` in turn, from a random start in each bundle."""

    def __init__(self, n: int) -> None:
        self.n = n

    def start_bundle(self) -> None:
        self.turn = random.randrange(self.n)

    def process(self, record: bytes) -> Iterator[tuple[int, bytes]]:
        self.turn = (self.turn + 1) % self.n
        yield self.turn, record


class _WriteShard(beam.DoFn):
    """Writes the records of shard ``k`` as one part."""

    def __init__(self, commit: DatasetCommit) -> None:
        self.commit = commit

    def process(self, keyed: tuple[int, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        k, records = keyed
        name = f"{k:05d}-{os.urandom(4).hex()}"
        yield name, self.commit.write_part(name, lambda w: w.write_many(list(records)))


class _WriteBundles(beam.DoFn):
    """Writes each bundle's records as one part (the runner chooses the shards)."""

    def __init__(self, commit: DatasetCommit) -> None:
        self.commit = commit

    def start_bundle(self) -> None:
        self.records: list[bytes] = []
        self.held = 0
        self.parts: list[tuple[str, dict[str, Any]]] = []

    def process(self, record: bytes) -> None:
        self.records.append(record)
        self.held += len(record)
        if self.held >= 64 << 20:  # a part at most about this size in memory
            self._flush()

    def _flush(self) -> None:
        if self.records:
            name = os.urandom(8).hex()
            records = self.records
            self.parts.append((name, self.commit.write_part(name, lambda w: w.write_many(records))))
            self.records, self.held = [], 0

    def finish_bundle(self) -> Iterator[WindowedValue]:
        self._flush()
        for part in self.parts:
            yield WindowedValue(part, MIN_TIMESTAMP, [GlobalWindow()])


def _commit(
    parts: list[tuple[str, dict[str, Any]]],
    commit: DatasetCommit,
    num_shards: int,
    schema: Schema | None,
) -> Manifest:
    """Gives the parts their final names, in order, and saves the manifest; a fixed
    ``num_shards`` gets an empty shard for each that received no records."""
    parts = sorted(parts, key=lambda p: p[0])
    if num_shards:
        have = {int(name.split("-")[0]) for name, _ in parts}
        for k in sorted(set(range(num_shards)) - have):
            name = f"{k:05d}-empty"
            parts.append((name, commit.write_part(name, lambda w: None)))
        parts.sort(key=lambda p: p[0])
    elif not parts:
        parts = [("empty", commit.write_part("empty", lambda w: None))]
    infos = [info for _, info in parts]
    try:
        commit.begin()
        try:
            if schema is None:
                schema = _guess(infos, commit.storage_options)
            return commit.commit(infos, schema)
        finally:
            commit.release()
    except BaseException:
        commit.abort(infos)
        raise
    finally:
        commit.clean_parts()


def _guess(infos: list[dict[str, Any]], storage_options: StorageOptions) -> Schema | None:
    """The schema of the first records written, when they are Examples."""
    first = next((i["data"] for i in infos if i["records"]), None)
    if first is None:
        return None
    try:
        return infer_schema(first, storage_options=storage_options)
    except (TFRecordError, ValueError):
        return None


class WriteExamples(beam.PTransform):
    """Writes a PCollection of serialized records (bytes) or dicts (encoded as Examples) as
    a dataset at ``file_path_prefix``: ``{prefix}-SSSSS-of-NNNNN.tfrecord`` shards
    (``.gz`` with gzip), ``.idx`` sidecars (uncompressed) and the manifest
    ``{prefix}.manifest.json``, committed all or nothing once every worker is done.
    ``num_shards=0`` lets the runner choose (a shard per bundle); ``schema`` goes into the
    manifest (inferred from the first records when omitted). An existing dataset at the
    prefix is refused unless ``overwrite=True``; ``storage_options`` go to the filesystem
    of a URL prefix."""

    def __init__(
        self,
        file_path_prefix: str,
        *,
        num_shards: int = 0,
        compression: str | None = None,
        schema: Mapping[str, Any] | None = None,
        index: bool = True,
        overwrite: bool = False,
        storage_options: StorageOptions = None,
    ) -> None:
        super().__init__()
        if compression not in (None, "gzip", "zlib"):
            raise ValueError(f'compression must be None, "gzip" or "zlib", not {compression!r}')
        check_count("num_shards", num_shards, low=0, high=MAX_SHARDS)
        prefix = os.fspath(file_path_prefix)
        self.num_shards = num_shards
        self.schema = None if schema is None else _as_schema(schema)
        self.commit = DatasetCommit(
            prefix,
            compression=compression,
            index=bool(index) and compression is None,
            overwrite=overwrite,
            storage_options=storage_options,
        )
        # Refused before the pipeline runs, where it can be; checked again at the commit.
        self.commit.begin()
        self.commit.release()

    def expand(self, pcoll: Any) -> Any:
        records = pcoll | "Serialize" >> beam.Map(_serialized)
        if self.num_shards:
            parts = (
                records
                | "Deal" >> beam.ParDo(_Deal(self.num_shards))
                | "Shards" >> beam.GroupByKey()
                | "WriteShards" >> beam.ParDo(_WriteShard(self.commit))
            )
        else:
            parts = records | "WriteBundles" >> beam.ParDo(_WriteBundles(self.commit))
        return (
            parts
            | "Parts" >> beam.combiners.ToList()
            | "Commit" >> beam.Map(_commit, self.commit, self.num_shards, self.schema)
        )


class ReadExamples(beam.PTransform):
    """Reads the Examples of local files matching ``file_pattern``: decoded dicts, or, with
    a ``schema``, dicts parsed as :func:`tfrecordkit.parse_example` parses them."""

    def __init__(self, file_pattern: str, schema: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.file_pattern = file_pattern
        self.schema = None if schema is None else parsing_schema(schema, "ReadExamples")

    def expand(self, pbegin: Any) -> Any:
        schema = self.schema

        def examples(path: str) -> Iterator[dict[str, Any]]:
            for record in read_records(path):
                yield decode_example(record) if schema is None else parse_example(record, schema)

        return (
            pbegin
            | "Pattern" >> beam.Create([self.file_pattern])
            | "Match" >> beam.FlatMap(expand_paths)
            | "Reshuffle" >> beam.Reshuffle()
            | "Read" >> beam.FlatMap(examples)
        )
