"""The Arrow adapter: a parsed pipeline's batches as a ``pyarrow.RecordBatchReader``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arrow import arrow_type, fixed_size_dims, nest_fixed_size
from ..schema import FixedLen, VarLen
from ..tensors import Ragged

if TYPE_CHECKING:
    from ..dataset import Dataset


def _array(pa: Any, value: Any, kind: Any) -> Any:
    if isinstance(value, Ragged):
        inner = pa.array(value.values, type=kind.value_type)
        return pa.LargeListArray.from_arrays(pa.array(np.asarray(value.row_splits)), inner)
    leaf, dims = fixed_size_dims(pa, kind)
    return nest_fixed_size(pa, pa.array(np.asarray(value).reshape(-1), type=leaf), dims)


def to_arrow(dataset: Dataset, strings: bool = False) -> Any:
    """``dataset`` (parsed and batched, with ``FixedLen`` and ``VarLen`` features) as a
    ``pyarrow.RecordBatchReader``; see :meth:`tfrecordkit.Dataset.to_arrow`."""
    import pyarrow as pa

    schema = dataset.element_schema
    if schema is None or dataset.element_spec is None:
        raise TypeError("to_arrow() needs a pipeline that parses: call .parse() first")
    for key, spec in schema.items():
        if not isinstance(spec, (FixedLen, VarLen)):
            raise TypeError(
                f"feature {key!r}: to_arrow() takes FixedLen and VarLen features, "
                f"not {type(spec).__name__}"
            )
    batched = dataset.element_spec[next(iter(schema))].shape[:1] != ()
    if not batched:
        raise TypeError("to_arrow() needs batches: call .batch() first")
    arrow_schema = pa.schema([(k, arrow_type(pa, s, strings)) for k, s in schema.items()])

    def batches() -> Iterator[Any]:
        for element in dataset:
            arrays = [_array(pa, element[f.name], f.type) for f in arrow_schema]
            yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)

    return pa.RecordBatchReader.from_batches(arrow_schema, batches())
