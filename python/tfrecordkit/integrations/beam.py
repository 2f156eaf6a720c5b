"""Apache Beam transforms that read and write TFRecords with tfrecordkit.

``WriteExamples`` is a small ``FileBasedSink``: Beam writes each shard under a temporary
name and renames it when the bundle commits, with ``-SSSSS-of-NNNNN`` names; records are
framed (and dicts encoded) by tfrecordkit. ``ReadExamples`` reads and decodes (or parses by a
schema) the Examples of local files matching a pattern.

>>> with beam.Pipeline() as p:  # doctest: +SKIP
...     rows = p | beam.Create([{"label": 1}, {"label": 2}])
...     rows | WriteExamples("out/train", num_shards=2)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import apache_beam as beam
from apache_beam import coders
from apache_beam.io import filebasedsink
from apache_beam.io.filesystem import CompressionTypes

from .._core import frame_record
from ..io.paths import expand_paths
from ..io.records import read_records
from ..schema.example import decode_example, encode_example
from ..schema.features import parse_example

__all__ = ["ReadExamples", "WriteExamples", "frame"]

_COMPRESSION = {None: CompressionTypes.UNCOMPRESSED, "gzip": CompressionTypes.GZIP}
_SUFFIX = {None: ".tfrecord", "gzip": ".tfrecord.gz"}


def frame(data: bytes) -> bytes:
    """One record in TFRecord framing: length, its masked CRC32C, data, its masked CRC32C."""
    return frame_record(data)


class _TFRecordSink(filebasedsink.FileBasedSink):
    def __init__(self, prefix: str, num_shards: int, compression: str | None) -> None:
        super().__init__(
            prefix,
            coder=coders.BytesCoder(),
            file_name_suffix=_SUFFIX[compression],
            num_shards=num_shards,
            shard_name_template="-SSSSS-of-NNNNN",
            mime_type="application/octet-stream",
            compression_type=_COMPRESSION[compression],
        )

    def write_encoded_record(self, file_handle: Any, encoded_value: bytes) -> None:
        file_handle.write(frame(encoded_value))


def _serialized(value: bytes | Mapping[str, Any]) -> bytes:
    return value if isinstance(value, bytes) else encode_example(value)


class WriteExamples(beam.PTransform):
    """Writes a PCollection of serialized records (bytes) or dicts (encoded as Examples) to
    ``{file_path_prefix}-SSSSS-of-NNNNN.tfrecord`` shards (``.gz`` with gzip).
    ``num_shards=0`` lets the runner choose."""

    def __init__(
        self, file_path_prefix: str, *, num_shards: int = 0, compression: str | None = None
    ) -> None:
        super().__init__()
        if compression not in _COMPRESSION:
            raise ValueError(f'compression must be None or "gzip", not {compression!r}')
        self.sink = _TFRecordSink(file_path_prefix, num_shards, compression)

    def expand(self, pcoll: Any) -> Any:
        return pcoll | "Serialize" >> beam.Map(_serialized) | "Write" >> beam.io.Write(self.sink)


class ReadExamples(beam.PTransform):
    """Reads the Examples of local files matching ``file_pattern``: decoded dicts, or, with
    a ``schema``, dicts parsed as :func:`tfrecordkit.parse_example` parses them."""

    def __init__(self, file_pattern: str, schema: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.file_pattern = file_pattern
        self.schema = schema

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
