"""The PyTorch adapter: a pipeline as an ``IterableDataset``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

if TYPE_CHECKING:
    from .dataset import Dataset


def distributed_rank() -> tuple[int, int] | None:
    """``(rank, world_size)`` when this process is part of a ``torch.distributed`` group."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None


def consumer(rank: int, world: int) -> tuple[int, int]:
    """``(count, index)`` of this consumer among DataLoader workers and distributed ranks."""
    info = get_worker_info()
    worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
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

    def __init__(
        self,
        dataset: Dataset,
        *,
        epoch: int = 0,
        tensors: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
    ) -> None:
        super().__init__()
        self.dataset = dataset
        self.epoch = epoch
        self.tensors = tensors
        # DataLoader workers do not join the process group: the rank is read here, in
        # the process that creates the adapter.
        found = distributed_rank()
        if rank is None and world_size is None and found is not None:
            rank, world_size = found
        self.rank, self.world_size = rank or 0, world_size or 1
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank {self.rank} is not in a world of {self.world_size}")

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch the next iteration reads (its shuffle order), in every worker."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[Any]:
        rank, world = distributed_rank() or (self.rank, self.world_size)
        count, index = consumer(rank, world)
        for element in self.dataset._split(count, index).iterate(epoch=self.epoch):
            yield _tensors(element) if self.tensors else element
