"""The TensorFlow adapter: a pipeline as a ``tf.data.Dataset``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..schema.features import Ragged, Sparse

if TYPE_CHECKING:
    from ..pipeline.dataset import Dataset


def _tensors(tf: Any, element: Any) -> Any:
    if isinstance(element, dict):
        return {k: _tensors(tf, v) for k, v in element.items()}
    if isinstance(element, Ragged):
        return tf.RaggedTensor.from_nested_row_splits(
            element.flat_values, element.nested_row_splits, validate=False
        )
    if isinstance(element, Sparse):
        return tf.SparseTensor(element.indices, element.values, element.dense_shape)
    return element


def signature(tf: Any, spec: Any) -> Any:
    """``tf.TensorSpec`` / ``tf.RaggedTensorSpec`` for a ``Dataset.element_spec``."""
    if spec is None:
        raise ValueError("map() or filter() changes the elements: pass output_signature")
    if isinstance(spec, dict):
        return {k: signature(tf, v) for k, v in spec.items()}
    dtype = tf.string if spec.dtype == "bytes" else tf.as_dtype(spec.dtype)
    if spec.sparse:
        return tf.SparseTensorSpec(list(spec.shape), dtype)
    if spec.ragged:
        return tf.RaggedTensorSpec(
            list(spec.shape),
            dtype,
            ragged_rank=spec.ragged,
            row_splits_dtype=tf.as_dtype(spec.row_splits_dtype),
        )
    return tf.TensorSpec(list(spec.shape), dtype)


def to_tf(dataset: Dataset, output_signature: Any = None) -> Any:
    """``dataset`` as a ``tf.data.Dataset`` (see :meth:`tfrecordkit.Dataset.to_tf`)."""
    import tensorflow as tf

    sig = output_signature or signature(tf, dataset.element_spec)

    def generate() -> Iterator[Any]:
        for element in dataset:
            yield _tensors(tf, element)

    out = tf.data.Dataset.from_generator(generate, output_signature=sig)
    n = dataset.cardinality()
    if n >= 0 or n == tf.data.INFINITE_CARDINALITY:
        # Known without reading: ``len()`` works, and Keras knows the steps per epoch.
        out = out.apply(tf.data.experimental.assert_cardinality(n))
    return out
