"""The PyTorch adapter: a pipeline as an ``IterableDataset``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from ..schema import Sparse

if TYPE_CHECKING:
    from ..dataset import Dataset


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


def _tensors(element: Any, device: torch.device | None = None, pin: bool = False) -> Any:
    if isinstance(element, dict):
        return {k: _tensors(v, device, pin) for k, v in element.items()}
    if isinstance(element, tuple):
        return tuple(_tensors(v, device, pin) for v in element)
    if isinstance(element, Sparse) and element.values.dtype != object:
        tensor = torch.sparse_coo_tensor(
            torch.from_numpy(np.ascontiguousarray(element.indices.T)),
            torch.from_numpy(element.values),
            element.dense_shape,
            # Indices come from the file unchecked against the size, as tf.io takes them:
            # torch checks them here rather than crash later.
            check_invariants=True,
        )
        return tensor.to(device) if device is not None else tensor
    if isinstance(element, np.ndarray) and element.dtype != object:
        tensor = torch.from_numpy(element)
        if pin:
            tensor = tensor.pin_memory()
        if device is not None:
            tensor = tensor.to(device, non_blocking=pin)
        return tensor
    return element


class TorchDataset(IterableDataset):  # type: ignore[type-arg]
    """A :class:`tfrecordkit.Dataset` for ``torch.utils.data.DataLoader``.

    Each DataLoader worker of each ``torch.distributed`` rank reads its own share (whole
    files when there are at least as many files as consumers, otherwise every n-th
    record), so every record is delivered once per epoch. Numeric arrays become tensors;
    numeric :class:`tfrecordkit.Sparse` features become sparse COO tensors; bytes stay NumPy
    object arrays, :class:`tfrecordkit.Ragged` stays as it is.

    ``pin_memory`` copies each tensor into page-locked memory and ``device`` moves it
    there (asynchronously from pinned memory): iterate in the main process, without
    DataLoader workers, as the pipeline's native threads do the decoding.
    """

    def __init__(
        self,
        dataset: Dataset,
        *,
        epoch: int = 0,
        tensors: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
        device: Any = None,
        pin_memory: bool = False,
    ) -> None:
        super().__init__()
        self.device = None if device is None else torch.device(device)
        self.pin_memory = bool(pin_memory)
        if self.pin_memory and not torch.cuda.is_available():
            raise ValueError("pin_memory needs a CUDA device, and torch finds none")
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
        if (self.device is not None or self.pin_memory) and get_worker_info() is not None:
            raise RuntimeError(
                "device= and pin_memory= hand batches to the GPU from the main process: "
                "use DataLoader(..., num_workers=0), or DataLoader's own pin_memory"
            )
        rank, world = distributed_rank() or (self.rank, self.world_size)
        count, index = consumer(rank, world)
        for element in self.dataset.share(count, index).iterate(epoch=self.epoch):
            yield _tensors(element, self.device, self.pin_memory) if self.tensors else element
