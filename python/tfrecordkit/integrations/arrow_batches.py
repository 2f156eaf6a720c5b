"""The Arrow adapter: a parsed pipeline's batches as a ``pyarrow.RecordBatchReader``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..schema.arrow import (
    Strings,
    arrow_type,
    is_text,
    list_array,
    nest_fixed_size,
    ragged_array,
    sparse_array,
    text_features,
    values_array,
    with_strings,
)
from ..schema.features import FixedLen, FixedLenSequence, RaggedFeature, SparseFeature, Spec
from ..schema.values import Ragged, Sparse

if TYPE_CHECKING:
    from ..pipeline.dataset import Dataset


def _rank(spec: Spec) -> int:
    """The number of dimensions of one Example's ``spec`` feature."""
    if isinstance(spec, FixedLen):
        return len(spec.shape)
    if isinstance(spec, FixedLenSequence):
        return 1 + len(spec.shape)
    if isinstance(spec, SparseFeature):
        return len(spec.size)
    if isinstance(spec, RaggedFeature):
        return 1 + len(spec.partitions)
    return 1


def _array(pa: Any, key: str, spec: Spec, value: Any) -> Any:
    """A batch of feature ``key`` as the pipeline gives it, as an Arrow array (bytes
    ``large_binary``)."""
    if isinstance(value, Sparse) and isinstance(spec, SparseFeature):
        batch = value.dense_shape[0]
        indices = np.asarray(value.indices).reshape(-1, len(value.dense_shape))
        splits = np.searchsorted(indices[:, 0], np.arange(batch + 1))
        by_dimension = [np.ascontiguousarray(indices[:, d]) for d in range(1, indices.shape[1])]
        return sparse_array(pa, spec, splits, by_dimension, values_array(pa, value.values))
    if isinstance(value, Ragged):
        levels = [np.asarray(s, dtype=np.int64) for s in value.nested_row_splits]
        parts = spec.partitions if isinstance(spec, RaggedFeature) else ()
        return ragged_array(pa, values_array(pa, value.flat_values), levels, parts)
    value = np.asarray(value)
    leaf = values_array(pa, value.reshape(-1))
    if isinstance(spec, FixedLenSequence):
        # [batch, longest, *shape], padded: every row holds the batch's longest.
        batch, width = value.shape[:2]
        fixed = nest_fixed_size(pa, leaf, spec.shape)
        return list_array(pa, np.arange(batch + 1, dtype=np.int64) * width, fixed)
    if not isinstance(spec, FixedLen):
        raise TypeError(f"feature {key!r}: to_arrow() got a {type(value).__name__}")
    return nest_fixed_size(pa, leaf, spec.shape)


def to_arrow(dataset: Dataset, strings: Strings = False) -> Any:
    """``dataset`` (parsed and batched) as a ``pyarrow.RecordBatchReader``; see
    :meth:`tfrecordkit.Dataset.to_arrow`."""
    import pyarrow as pa

    schema = dataset.element_schema
    spec = dataset.element_spec
    if schema is None or spec is None:
        raise TypeError(
            "to_arrow() needs a pipeline that parses Examples with a schema (call .parse(); "
            "map() and filter() after it hide the schema); read SequenceExamples with "
            "tfrecordkit.read_arrow(paths, schema, sequence_schema=...)"
        )
    for key, feature in schema.items():
        if spec[key].dtype != feature.dtype:
            raise TypeError(
                f"feature {key!r} is decoded to {spec[key].dtype} pixels; to_arrow() takes "
                "parsed features"
            )
    if not schema:
        raise TypeError("to_arrow() needs a schema with features")
    key, feature = next(iter(schema.items()))
    if len(spec[key].shape) == _rank(feature):
        raise TypeError("to_arrow() needs batches: call .batch() first")
    text_features(strings, list(schema))
    kinds = {k: arrow_type(pa, s, is_text(strings, k), key=k) for k, s in schema.items()}
    arrow_schema = pa.schema(list(kinds.items()))

    def batches() -> Iterator[Any]:
        for element in dataset:
            arrays = [
                with_strings(pa, k, _array(pa, k, s, element[k]), kinds[k])
                for k, s in schema.items()
            ]
            yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)

    return pa.RecordBatchReader.from_batches(arrow_schema, batches())
