"""Type stubs for the tfrecordkit._core extension (kept in step with crates/python)."""

from collections.abc import Iterable, Mapping
from typing import Any, final

import numpy as np

__all__ = [
    "CompiledSchema",
    "FileOrder",
    "ImageSpec",
    "Pipeline",
    "PipelineCache",
    "RecordReader",
    "RecordWriter",
    "count_records",
    "decode_image",
    "decode_images",
    "decode_example",
    "decode_sequence_example",
    "encode_columns",
    "framed_row_sizes",
    "index_records",
    "encode_example",
    "encode_sequence_example",
    "masked_crc32c",
    "parse_examples",
    "read_member",
    "read_record_at",
    "__version__",
]
__version__: str

def encode_example(features: Mapping[str, Any]) -> bytes: ...
def decode_example(data: bytes) -> dict[str, Any]: ...
def encode_sequence_example(context: Any, feature_lists: Any) -> bytes: ...
def decode_sequence_example(data: bytes) -> tuple[dict[str, Any], dict[str, list[Any]]]: ...
def parse_examples(
    records: Iterable[bytes], schema: CompiledSchema
) -> list[tuple[np.ndarray, list[int], np.ndarray | None]]: ...
def encode_columns(names: list[str], columns: list[Any], n_rows: int) -> list[bytes]: ...
def framed_row_sizes(names: list[str], columns: list[Any], n_rows: int) -> np.ndarray: ...
def count_records(path: str, compression: str | None = "auto") -> int: ...
def masked_crc32c(data: bytes) -> int: ...
def read_record_at(path: str, offset: int, length: int, verify: bool = True) -> bytes: ...
def read_member(path: str, offset: int, length: int, verify: bool = True) -> list[bytes]: ...
def index_records(path: str) -> list[tuple[int, int]]: ...

@final
class CompiledSchema:
    def __new__(cls, specs: list[tuple[Any, ...]]) -> CompiledSchema: ...

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
    ) -> RecordReader: ...
    def read_batch(self, max_records: int = 1024, max_bytes: int = 16777216) -> list[bytes]: ...
    def read_parsed(
        self, schema: CompiledSchema, max_records: int = 1024
    ) -> list[tuple[np.ndarray, list[int], np.ndarray | None]] | None: ...
    def delivered(self) -> list[tuple[str, int]]: ...
    @property
    def current_path(self) -> str | None: ...

@final
class RecordWriter:
    def __new__(
        cls,
        path: str,
        compression: str | None = None,
        level: int | None = None,
        atomic: bool = True,
        index: bool = False,
        member_bytes: int | None = None,
    ) -> RecordWriter: ...
    def write(self, data: bytes) -> None: ...
    def write_many(self, records: Iterable[bytes]) -> int: ...
    def write_columns(
        self,
        names: list[str],
        columns: list[Any],
        n_rows: int,
        start: int = 0,
        end: int | None = None,
        parallel: bool = True,
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
    @property
    def current_path(self) -> str: ...

@final
class PipelineCache:
    def __new__(cls, filename: str | None = None) -> PipelineCache: ...
    @property
    def complete(self) -> bool: ...

@final
class FileOrder:
    def __new__(cls, n: int, file_ops: list[tuple[Any, ...]], epoch: int = 0) -> FileOrder: ...
    def __iter__(self) -> FileOrder: ...
    def __next__(self) -> int: ...

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

@final
class Pipeline:
    def __new__(
        cls,
        files: list[str],
        *,
        compression: str | None = "auto",
        verify: bool = True,
        max_record_bytes: int | None = None,
        file_ops: list[tuple[Any, ...]] = ...,
        cycle_length: int = 1,
        block_length: int = 1,
        deterministic: bool = True,
        record_ops: list[tuple[Any, ...]] = ...,
        batch_size: int = 256,
        drop_remainder: bool = False,
        schema: CompiledSchema | None = None,
        parse_workers: int = 1,
        prefetch: int = 2,
        continue_on_error: bool = False,
        epoch: int = 0,
        opener: Any = None,
        images: list[tuple[int, ImageSpec, int]] = ...,
    ) -> Pipeline: ...
    def close(self) -> None: ...
    def next(self) -> list[bytes] | tuple[int, list[Any]] | None: ...
