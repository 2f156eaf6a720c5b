"""tfrecordkit: fast, TensorFlow-free TFRecord files and ``tf.train.Example`` data.

>>> import tfrecordkit as tfr
>>> record = tfr.encode_example({"label": 3, "name": "cat"})
>>> tfr.parse_example(record, {"label": tfr.FixedLen([], "int64")})["label"]
np.int64(3)
"""

import sys as _sys

from . import errors, image
from ._core import __version__
from ._renamed import alias_moved_modules as _alias_moved_modules
from .conversion import ConversionSummary, convert, load, register_pandas_accessor
from .datasets.index import RecordIndex, build_index, count
from .datasets.manifest import Manifest, ShardInfo
from .datasets.random_access import IndexedDataset
from .datasets.verify import repair, verify
from .datasets.writer import write_dataset
from .errors import (
    CorruptRecordError,
    DataLossError,
    DataLossWarning,
    ExampleDecodeError,
    ImageDecodeError,
    InternalError,
    NotTFRecordError,
    SchemaError,
    SchemaWarning,
    SidecarError,
    SidecarSkippedWarning,
    TFRecordError,
    TruncatedRecordError,
    UnsafePathError,
)
from .integrations import tfds
from .integrations.arrow import read_arrow, read_table
from .io.options import ReadOptions
from .io.paths import expand_paths
from .io.ranges import ByteRange, byte_ranges
from .io.records import (
    RandomRecordReader,
    RecordWriter,
    TFRecordOptions,
    read_batches,
    read_records,
)
from .io.reports import FileReport, ReadReport
from .pipeline.dataset import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Dataset,
    DatasetIterator,
)
from .schema.example import (
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_examples,
    encode_sequence_example,
)
from .schema.features import (
    FixedLen,
    FixedLenSequence,
    Ragged,
    RaggedFeature,
    Schema,
    Sparse,
    SparseFeature,
    VarLen,
    parse_example,
    parse_examples,
)
from .schema.guess import SchemaGuess
from .schema.json_example import decode_json_example, encode_json_example
from .schema.raw import decode_raw
from .schema.reading import infer_schema, read_examples
from .schema.sequence import parse_sequence_example, parse_single_sequence_example
from .schema.tensors import parse_tensor, serialize_tensor
from .statistics import StatsReport, stats

_alias_moved_modules(__name__)

if "pandas" in _sys.modules:
    register_pandas_accessor()

__all__ = [
    "AUTOTUNE",
    "ByteRange",
    "ConversionSummary",
    "CorruptRecordError",
    "DataLossError",
    "DataLossWarning",
    "Dataset",
    "DatasetIterator",
    "ExampleDecodeError",
    "FileReport",
    "FixedLen",
    "FixedLenSequence",
    "INFINITE_CARDINALITY",
    "ImageDecodeError",
    "IndexedDataset",
    "InternalError",
    "Manifest",
    "NotTFRecordError",
    "Ragged",
    "RaggedFeature",
    "RandomRecordReader",
    "ReadOptions",
    "ReadReport",
    "RecordIndex",
    "RecordWriter",
    "Schema",
    "SchemaError",
    "SchemaGuess",
    "ShardInfo",
    "SidecarError",
    "SchemaWarning",
    "SidecarSkippedWarning",
    "StatsReport",
    "Sparse",
    "SparseFeature",
    "TFRecordError",
    "TFRecordOptions",
    "TruncatedRecordError",
    "UNKNOWN_CARDINALITY",
    "UnsafePathError",
    "VarLen",
    "__version__",
    "build_index",
    "byte_ranges",
    "convert",
    "count",
    "decode_example",
    "decode_json_example",
    "decode_raw",
    "decode_sequence_example",
    "encode_example",
    "encode_json_example",
    "encode_examples",
    "encode_sequence_example",
    "errors",
    "image",
    "expand_paths",
    "infer_schema",
    "load",
    "parse_example",
    "parse_examples",
    "parse_sequence_example",
    "parse_single_sequence_example",
    "parse_tensor",
    "read_batches",
    "read_arrow",
    "read_examples",
    "read_records",
    "read_table",
    "register_pandas_accessor",
    "repair",
    "serialize_tensor",
    "stats",
    "tfds",
    "verify",
    "write_dataset",
]


def __getattr__(name: str) -> object:
    # ``tfr.ray`` and ``tfr.spark`` import Ray / PySpark (optional dependencies) when first
    # used.
    if name in ("ray", "spark"):
        import importlib

        return importlib.import_module(f".integrations.{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
