"""What parsing gives besides arrays: :class:`Ragged` rows and :class:`Sparse` tensors."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

__all__ = ["Ragged", "Sparse"]


def _row(i: int, n: int) -> int:
    """Row ``i`` of ``n`` (negative counts from the end), or ``IndexError``."""
    row = i + n if i < 0 else i
    if not 0 <= row < n:
        raise IndexError(f"row {i} out of range for {n} rows")
    return row


@dataclass(frozen=True, eq=False)
class Ragged:
    """Variable-length rows: row ``i`` is ``values[row_splits[i]:row_splits[i + 1]]``.

    ``values`` is an array, or another :class:`Ragged` for each further ragged dimension
    (a ``RaggedFeature`` with partitions): then row ``i`` is itself a ``Ragged``.
    """

    values: Any
    row_splits: np.ndarray

    @cached_property
    def _lengths(self) -> np.ndarray:
        # Worked out when first asked for: a pipeline makes a Ragged per batch and
        # feature, and most are never asked their row lengths.
        splits = np.asarray(self.row_splits)
        return splits[1:] - splits[:-1]

    def __len__(self) -> int:
        return len(self.row_splits) - 1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ragged):
            return NotImplemented
        if not np.array_equal(self.row_splits, other.row_splits):
            return False
        if isinstance(self.values, Ragged) or isinstance(other.values, Ragged):
            return bool(self.values == other.values)
        return bool(np.array_equal(self.values, other.values))

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, i: int) -> Any:
        row = _row(i, len(self))
        start, stop = int(self.row_splits[row]), int(self.row_splits[row + 1])
        if isinstance(self.values, Ragged):
            return self.values._rows(start, stop)
        return self.values[start:stop]

    def _rows(self, start: int, stop: int) -> Ragged:
        """Rows ``start..stop`` as a Ragged of their own."""
        splits = self.row_splits[start : stop + 1]
        first, last = int(splits[0]), int(splits[-1])
        inner = (
            self.values._rows(first, last)
            if isinstance(self.values, Ragged)
            else self.values[first:last]
        )
        return Ragged(inner, splits - splits[0])

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    @property
    def ragged_rank(self) -> int:
        """The number of ragged dimensions (1 for a ``VarLen``)."""
        return 1 + (self.values.ragged_rank if isinstance(self.values, Ragged) else 0)

    @property
    def flat_values(self) -> np.ndarray:
        """The innermost values, all rows of all dimensions back to back."""
        return self.values.flat_values if isinstance(self.values, Ragged) else self.values

    @property
    def nested_row_splits(self) -> tuple[np.ndarray, ...]:
        """The row splits of every ragged dimension, outermost first."""
        inner = self.values.nested_row_splits if isinstance(self.values, Ragged) else ()
        return (self.row_splits, *inner)

    def row_lengths(self) -> np.ndarray:
        """How many values (or inner rows) each row holds."""
        return self._lengths

    def to_list(self) -> list[Any]:
        """The rows as nested Python lists."""
        return [row.tolist() if isinstance(row, np.ndarray) else row.to_list() for row in self]

    def to_dense(self, default: Any = None) -> np.ndarray:
        """Pads rows to the longest with ``default`` (zero or ``b""`` when omitted); one
        ragged dimension only."""
        if isinstance(self.values, Ragged):
            raise ValueError("to_dense pads one ragged dimension; this Ragged has more")
        width = int(self._lengths.max()) if len(self) else 0
        if default is None:
            default = b"" if self.values.dtype == object else 0
        out = np.full((len(self), width), default, dtype=self.values.dtype)
        for i, row in enumerate(self):
            out[i, : len(row)] = row
        return out


@dataclass(frozen=True, eq=False)
class Sparse:
    """A sparse tensor, as ``tf.SparseTensor``: entry ``k`` holds ``values[k]`` at
    ``indices[k]`` (a row of ``len(dense_shape)`` ints) in a tensor of ``dense_shape``.

    Batched, the first index is the Example; ``sparse[i]`` is Example ``i``'s own.
    """

    indices: np.ndarray
    values: np.ndarray
    dense_shape: tuple[int, ...]

    def __len__(self) -> int:
        return self.dense_shape[0]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sparse):
            return NotImplemented
        return (
            self.dense_shape == other.dense_shape
            and np.array_equal(self.indices, other.indices)
            and np.array_equal(self.values, other.values)
        )

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, i: int) -> Sparse:
        row = _row(i, len(self))
        first = self.indices[:, 0]
        start, stop = np.searchsorted(first, [row, row + 1])
        return Sparse(self.indices[start:stop, 1:], self.values[start:stop], self.dense_shape[1:])

    def __iter__(self) -> Iterator[Sparse]:
        return (self[i] for i in range(len(self)))

    def to_dense(self, default: Any = None) -> np.ndarray:
        """The dense array, ``default`` (zero or ``b""`` when omitted) where no entry is;
        of two entries at one index, the later wins."""
        if default is None:
            default = b"" if self.values.dtype == object else 0
        out = np.full(self.dense_shape, default, dtype=self.values.dtype)
        if len(self.values):
            bounds = np.asarray(self.dense_shape)
            outside = ((self.indices < 0) | (self.indices >= bounds)).any(axis=1)
            if outside.any():
                at = self.indices[np.argmax(outside)].tolist()
                raise ValueError(f"index {at} is outside the dense shape {self.dense_shape}")
            out[tuple(self.indices.T)] = self.values
        return out
