"""Type stubs for the tfrecordkit._core extension (kept in step with crates/python)."""

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, final

import numpy as np

__all__ = [
    "MAX_FILL",
    "MAX_PIXELS",
    "MAX_VALUES",
    "CompiledSchema",
    "ElementPipeline",
    "FileOrder",
    "ImageSpec",
    "ListSchema",
    "OffsetReader",
    "Pipeline",
    "PipelineCache",
    "Plan",
    "RecordReader",
    "RecordWriter",
    "RowSummary",
    "Repeat",
    "Shard",
    "Shuffle",
    "Skip",
    "StatsPass",
    "Table",
    "Take",
    "commit_shard",
    "count_records",
    "decode_image",
    "decode_images",
    "decode_example",
    "decode_sequence_example",
    "encode_columns",
    "framed_row_sizes",
    "index_records",
    "encode_example",
    "encode_row",
    "encode_sequence_example",
    "file_crc32c",
    "frame_record",
    "masked_crc32c",
    "rows",
    "stack_dicts",
    "foreign_format",
    "stop_threads",
    "member_records",
    "mix_seed",
    "parse_index",
    "parse_sequence_lists",
    "parse_tensors",
    "parse_examples",
    "read_member",
    "read_record_at",
    "read_records_at",
    "unframe_records",
    "__version__",
    "_selftest_panic",
    "serialize_tensor",
]
__version__: str
MAX_VALUES: int
MAX_FILL: int
MAX_PIXELS: int

def _selftest_panic(message: str) -> None: ...
def encode_example(features: Mapping[str, Any]) -> bytes: ...
def decode_example(data: bytes) -> dict[str, Any]: ...
def encode_sequence_example(context: Any, feature_lists: Any) -> bytes: ...
def decode_sequence_example(data: bytes) -> tuple[dict[str, Any], dict[str, list[Any]]]: ...
def parse_examples(records: Iterable[bytes], schema: CompiledSchema) -> list[tuple[Any, ...]]: ...
def encode_columns(table: Table) -> list[bytes]: ...
def framed_row_sizes(table: Table) -> np.ndarray: ...
def count_records(
    path: str, compression: str | None = "auto", opener: Callable[[str], Any] | None = None
) -> int: ...
def masked_crc32c(data: bytes) -> int: ...
def read_record_at(path: str, offset: int, length: int, verify: bool = True) -> bytes: ...
def read_member(path: str, offset: int, length: int, verify: bool = True) -> list[bytes]: ...
def index_records(
    path: str, opener: Callable[[str], Any] | None = None
) -> list[tuple[int, int]]: ...
def unframe_records(
    framed: list[bytes], offsets: list[int], path: str, verify: bool = True
) -> list[bytes]: ...
def member_records(data: bytes, path: str, verify: bool = True) -> list[bytes]: ...
def read_records_at(
    path: str, positions: list[tuple[int, int]], verify: bool = True
) -> list[bytes]: ...
def frame_record(data: bytes) -> bytes: ...
def file_crc32c(path: str) -> int: ...
def commit_shard(
    data: str | os.PathLike[str],
    path: str | os.PathLike[str],
    index: str | os.PathLike[str] | None = None,
    index_path: str | os.PathLike[str] | None = None,
    replace: bool = False,
) -> None: ...
def parse_index(text: bytes, columns: int) -> np.ndarray: ...
def mix_seed(a: int, b: int) -> int: ...
def rows(columns: dict[Any, Any], n: int) -> list[dict[Any, Any]]: ...
def stack_dicts(
    elements: list[Any], prefix: str, stack: Callable[[list[Any], str], Any]
) -> dict[Any, Any] | None: ...
def stop_threads() -> None: ...
def foreign_format(head: bytes) -> str | None: ...

@final
class Table:
    def __new__(cls, names: list[str], columns: list[Any], n_rows: int) -> Table: ...
    @property
    def n_rows(self) -> int: ...

@final
class CompiledSchema:
    def __new__(
        cls,
        columns: list[tuple[str, Any]],
        features: list[tuple[str, Any]] | None = None,
        unpadded: bool = False,
        nullable: list[str] = ...,
    ) -> CompiledSchema: ...
    def outputs(self, parsed: list[Any]) -> dict[str, Any]: ...

@final
class StatsPass:
    def __new__(
        cls,
        splits: list[tuple[str, list[str]]],
        compression: str | None = "auto",
        threads: int = 0,
        opener: Any = None,
    ) -> StatsPass: ...
    def step(self, max_records: int) -> int: ...
    @property
    def records(self) -> int: ...
    @property
    def done(self) -> bool: ...
    def report(
        self, baseline: str | None = None, threshold: float = 0.1, top: int = 10
    ) -> dict[str, Any]: ...

@final
class RecordReader:
    def __new__(
        cls,
        paths: list[str],
        compression: str | None = "auto",
        verify: bool = True,
        max_record_bytes: int | None = None,
        resync: bool = False,
        follow: bool = False,
        opener: Callable[[str], Any] | None = None,
        spans: list[tuple[int, int, int] | None] | None = None,
        ahead: bool = False,
    ) -> RecordReader: ...
    def read_batch(
        self, max_records: int = 1024, max_bytes: int = 16777216, one_by_one: bool = False
    ) -> list[bytes]: ...
    def read_parsed(
        self,
        schema: CompiledSchema,
        max_records: int = 1024,
        raw_bytes: bool = False,
        feature_lists: list[tuple[str, str]] | None = None,
        max_bytes: int = ...,
        as_dict: bool = False,
    ) -> Any: ...
    def delivered(self) -> list[tuple[str, int]]: ...
    def origin_in_batch(self, i: int) -> tuple[str, int, int] | None: ...

@final
class OffsetReader:
    def __new__(cls, path: str) -> OffsetReader: ...
    def read(self, offset: int, verify: bool = True) -> tuple[bytes, int] | None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

@final
class RowSummary:
    rows: int
    def __init__(self) -> None: ...
    def features(self) -> dict[str, tuple[list[str], int, int, int]]: ...

def encode_row(
    row: dict[str, Any], typed: dict[str, str], seen: RowSummary | None = None
) -> bytes: ...

@final
class RecordWriter:
    def __new__(
        cls,
        path: str,
        compression: str | None = None,
        zlib: Mapping[str, int] | None = None,
        atomic: bool = True,
        index: bool = False,
        member_bytes: int | None = None,
        part: bool = False,
    ) -> RecordWriter: ...
    def write(self, data: bytes) -> None: ...
    def write_many(self, records: Iterable[bytes]) -> int: ...
    def write_rows(
        self,
        items: list[Any],
        typed: dict[str, str],
        skip: object,
        start: int = 0,
        end: int | None = None,
        limit: int | None = None,
        seen: RowSummary | None = None,
    ) -> tuple[int, int, int, bool, bool]: ...
    def write_columns(
        self, table: Table, start: int = 0, end: int | None = None, parallel: bool = True
    ) -> int: ...
    def finish(self) -> dict[str, Any]: ...
    @property
    def summary(self) -> dict[str, Any] | None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def records_written(self) -> int: ...
    @property
    def compression(self) -> str | None: ...

@final
class PipelineCache:
    def __new__(cls, filename: str | None = None) -> PipelineCache: ...

@final
class Shuffle:
    def __new__(cls, buffer_size: int, seed: int | None = None) -> Shuffle: ...
    def __getnewargs__(self) -> tuple[int, int | None]: ...
    @property
    def buffer_size(self) -> int: ...
    @property
    def seed(self) -> int | None: ...

@final
class Shard:
    def __new__(cls, num_shards: int, index: int) -> Shard: ...
    def __getnewargs__(self) -> tuple[int, int]: ...
    @property
    def num_shards(self) -> int: ...
    @property
    def index(self) -> int: ...

@final
class Skip:
    def __new__(cls, count: int) -> Skip: ...
    def __getnewargs__(self) -> tuple[int]: ...
    @property
    def count(self) -> int: ...

@final
class Take:
    def __new__(cls, count: int) -> Take: ...
    def __getnewargs__(self) -> tuple[int]: ...
    @property
    def count(self) -> int: ...

@final
class Repeat:
    def __new__(cls, count: int | None = None) -> Repeat: ...
    def __getnewargs__(self) -> tuple[int | None]: ...
    @property
    def count(self) -> int | None: ...

@final
class ListSchema:
    def __new__(cls, specs: list[tuple[str, Any]]) -> ListSchema: ...

def parse_sequence_lists(
    records: Iterable[bytes], lists: ListSchema, pad: bool = True
) -> list[tuple[Any, ...]]: ...

@final
class Plan:
    def __new__(cls, files_level: bool, ops: list[Any]) -> Plan: ...
    @property
    def files_only(self) -> bool: ...
    @property
    def deterministic(self) -> bool: ...
    @property
    def schema(self) -> Any: ...
    @property
    def sequence(self) -> Any: ...
    @property
    def batch(self) -> Any: ...
    @property
    def images(self) -> list[Any]: ...
    @property
    def element_ops(self) -> list[Any]: ...
    def start(self, source: Any, epoch: int) -> Pipeline: ...
    def file_order(self, source: Any, epoch: int) -> FileOrder: ...
    def share(self, files: int, count: int) -> tuple[str, int, int]: ...
    def cardinality(self, source: Any) -> int: ...

@final
class FileOrder:
    def __iter__(self) -> FileOrder: ...
    def __next__(self) -> int: ...

@final
class ElementPipeline:
    def __new__(
        cls,
        source: Callable[[int], Iterable[Any]],
        ops: list[Any],
        epoch: int,
        tagged: bool,
        collate: Callable[[list[Any], list[Any] | None], tuple[Any, Any]] | None = None,
        chunks: bool = False,
        pairs: bool | None = None,
    ) -> ElementPipeline: ...
    def __iter__(self) -> ElementPipeline: ...
    def __next__(self) -> Any: ...

@final
class ImageSpec:
    def __new__(
        cls,
        channels: int = 3,
        size: tuple[int, int] | None = None,
        dtype: str = "float32",
        resize: str = "bilinear",
        crop_scale: tuple[float, float] | None = None,
        crop_ratio: tuple[float, float] = ...,
        flip: bool = False,
        max_pixels: int = ...,
    ) -> ImageSpec: ...

def decode_image(image: bytes, spec: ImageSpec, seed: int) -> np.ndarray: ...
def decode_images(images: list[bytes], spec: ImageSpec, seeds: list[int]) -> np.ndarray: ...
def parse_tensors(records: Iterable[bytes], dtype: str) -> tuple[list[int], np.ndarray]: ...
def serialize_tensor(
    dtype: str,
    shape: list[int],
    data: np.ndarray | None = None,
    strings: list[bytes] | None = None,
) -> bytes: ...

@final
class Pipeline:
    def close(self) -> None: ...
    def next(self) -> tuple[np.ndarray, list[Any]] | None: ...
    def next_dict(self, schema: CompiledSchema) -> tuple[int, dict[str, Any]] | None: ...
