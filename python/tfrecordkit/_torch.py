"""The PyTorch adapter: a pipeline as an ``IterableDataset``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

if TYPE_CHECKING:
    from .dataset import Dataset


def consumer() -> tuple[int, int]:
    """``(count, index)`` of this consumer among DataLoader workers and distributed ranks."""
    info = get_worker_info()
    worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
    rank, world = 0, 1
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    return world * workers, rank * workers + worker


def _tensors(element: Any) -> Any:
    if isinstance(element, dict):
        return {k: _tensors(v) for k, v in element.items()}
    if isinstance(element, tuple):
        return tuple(_tensors(v) for v in element)
    if isinstance(element, np.ndarray) and element.dtype != object:
        return torch.from_numpy(element)
    return element


class TorchDataset(IterableDataset):  # type: ignore[type-arg]
    """A :class:`tfrecordkit.Dataset` for ``torch.utils.data.DataLoader``.

    Each DataLoader worker of each ``torch.distributed`` rank reads its own share (whole
    files when there are at least as many files as consumers, otherwise every n-th
    record), so every record is delivered once per epoch. Numeric arrays become tensors;
    bytes stay NumPy object arrays, :class:`tfrecordkit.Ragged` stays as it is.
    """

    def __init__(self, dataset: Dataset, *, epoch: int = 0, tensors: bool = True) -> None:
        super().__init__()
        self.dataset = dataset
        self.epoch = epoch
        self.tensors = tensors

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch the next iteration reads (its shuffle order), in every worker."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[Any]:
        count, index = consumer()
        for element in self.dataset._split(count, index).iterate(epoch=self.epoch):
            yield _tensors(element) if self.tensors else element
