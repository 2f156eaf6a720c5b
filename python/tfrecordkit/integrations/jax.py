"""The JAX adapter: a pipeline's numeric arrays placed on JAX's default device (sparse
features made dense)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ..schema.features import Sparse


def map_arrays(element: Any, fn: Callable[[Any, str], Any], name: str = "") -> Any:
    """``fn(array, name)`` applied to every numeric array of an element (dicts and tuples
    walked; ``name`` is where in the element the array is, ``"image"`` or ``"[0]"``)."""
    if isinstance(element, dict):
        return {k: map_arrays(v, fn, f"{name}.{k}" if name else str(k)) for k, v in element.items()}
    if isinstance(element, tuple):
        return tuple(map_arrays(v, fn, f"{name}[{i}]") for i, v in enumerate(element))
    if isinstance(element, Sparse) and element.values.dtype != object:
        # JAX has no sparse type of its own to share: a sparse feature arrives dense.
        return fn(element.to_dense(), name)
    if isinstance(element, np.generic) and element.dtype.kind in "biuf":
        element = np.asarray(element)  # a scalar feature: a 0-d array, like the rest
    if isinstance(element, np.ndarray) and element.dtype != object:
        return fn(element, name)
    return element


def to_jax(dataset: Iterable[Any]) -> Iterator[Any]:
    """Iterates ``dataset`` with every numeric array put on JAX's default device.

    Without ``jax_enable_x64``, JAX keeps 32-bit numbers: int64 features arrive as int32,
    and one whose values do not fit is a ``ValueError`` naming it rather than numbers
    silently wrapped around."""
    import jax

    def put(array: np.ndarray, name: str) -> Any:
        if array.dtype.kind in "iu" and array.dtype.itemsize == 8 and array.size:
            if not jax.config.jax_enable_x64:
                low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
                if array.min() < low or array.max() > high:
                    raise ValueError(
                        f"feature {name!r} holds 64-bit integers beyond int32, which JAX "
                        "keeps without jax_enable_x64: jax.config.update('jax_enable_x64', "
                        "True) keeps them whole"
                    )
        return jax.device_put(array)

    for element in dataset:
        yield map_arrays(element, put)
