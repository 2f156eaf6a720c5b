"""The JAX adapter: a pipeline's numeric arrays placed on JAX's default device (sparse
features made dense)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ..schema.features import Sparse


def map_arrays(element: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` applied to every numeric array of an element (dicts and tuples walked)."""
    if isinstance(element, dict):
        return {k: map_arrays(v, fn) for k, v in element.items()}
    if isinstance(element, tuple):
        return tuple(map_arrays(v, fn) for v in element)
    if isinstance(element, Sparse) and element.values.dtype != object:
        # JAX has no sparse type of its own to share: a sparse feature arrives dense.
        return fn(element.to_dense())
    if isinstance(element, np.ndarray) and element.dtype != object:
        return fn(element)
    return element


def to_jax(dataset: Iterable[Any]) -> Iterator[Any]:
    """Iterates ``dataset`` with every numeric array put on JAX's default device."""
    import jax

    for element in dataset:
        yield map_arrays(element, jax.device_put)
