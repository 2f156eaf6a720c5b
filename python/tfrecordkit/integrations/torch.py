"""The PyTorch adapter: a pipeline as an ``IterableDataset``."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from ..errors import TFRecordError
from ..schema.features import Sparse

if TYPE_CHECKING:
    from ..pipeline.dataset import Dataset, DatasetIterator


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


def _tensors(
    element: Any, device: torch.device | None = None, pin: bool = False, name: str = ""
) -> Any:
    if isinstance(element, dict):
        return {
            k: _tensors(v, device, pin, f"{name}.{k}" if name else str(k))
            for k, v in element.items()
        }
    if isinstance(element, tuple):
        return tuple(_tensors(v, device, pin, f"{name}[{i}]") for i, v in enumerate(element))
    if isinstance(element, Sparse) and element.values.dtype != object:
        try:
            tensor = torch.sparse_coo_tensor(
                torch.from_numpy(np.ascontiguousarray(element.indices.T)),
                torch.from_numpy(element.values),
                element.dense_shape,
                # Indices come from the file unchecked against the size, as tf.io takes
                # them: they are checked here rather than crash later.
                check_invariants=True,
            )
        except RuntimeError as err:
            why = str(err).splitlines()[0] if str(err) else "not a sparse tensor"
            raise ValueError(
                f"feature {name!r} is not a sparse tensor of shape "
                f"{list(element.dense_shape)}: {why}"
            ) from None
        return tensor.to(device) if device is not None else tensor
    if isinstance(element, np.generic) and element.dtype.kind in "biuf":
        element = np.asarray(element)  # a scalar feature: a 0-d tensor, like the rest
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
    record, split after any ``shard``, ``skip`` or ``take``), so every record is delivered
    once per epoch. Numeric arrays become tensors;
    numeric :class:`tfrecordkit.Sparse` features become sparse COO tensors; bytes stay NumPy
    object arrays, :class:`tfrecordkit.Ragged` stays as it is.

    ``pin_memory`` copies each tensor into page-locked memory and ``device`` moves it
    there (asynchronously from pinned memory): iterate in the main process, without
    DataLoader workers, as the pipeline's native threads do the decoding.

    Iterating gives a :class:`TorchIterator`, whose ``state_dict()`` and
    ``load_state_dict()`` let ``torchdata``'s ``StatefulDataLoader`` save and resume an
    epoch exactly, in each worker (a deterministic pipeline: seeded shuffles).

    ``len()`` is the number of elements this rank's DataLoader delivers in an epoch when
    :meth:`tfrecordkit.Dataset.cardinality` knows it (a ``TypeError`` otherwise). It is
    exact without DataLoader workers; with them each worker batches its own share, so a
    pipeline that batches may deliver up to one more (or, dropping remainders, fewer)
    batch per worker, as PyTorch allows for an ``IterableDataset``'s length.
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
        self.device = None if device is None else _device(device)
        self.pin_memory = bool(pin_memory)
        if self.pin_memory and not torch.cuda.is_available():
            raise ValueError("pin_memory needs a CUDA device, and torch finds none")
        self.dataset = dataset
        # In shared memory, so that set_epoch reaches DataLoader workers that persist
        # from one epoch to the next.
        self._epoch = torch.zeros(1, dtype=torch.int64).share_memory_()
        self.set_epoch(epoch)
        self.tensors = tensors
        # Given, the rank and world size are used as they are; otherwise those of the
        # process group, read in the process that iterates (DataLoader workers do not
        # join the group: they keep what was read here).
        self.explicit = rank is not None or world_size is not None
        if self.explicit and (rank is None or world_size is None):
            raise ValueError("pass rank and world_size together, or neither")
        found = distributed_rank()
        if not self.explicit and found is not None:
            rank, world_size = found
        self.rank = _whole("rank", 0 if rank is None else rank)
        self.world_size = _whole("world_size", 1 if world_size is None else world_size)
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank {self.rank} is not in a world of {self.world_size}")

    @property
    def epoch(self) -> int:
        return int(self._epoch[0])

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch the next iteration reads (its shuffle order), in every worker."""
        epoch = _whole("epoch", epoch)
        if epoch >= 1 << 63:
            raise ValueError(f"epoch must be below 2**63, not {epoch}")
        self._epoch[0] = epoch

    def _rank(self) -> tuple[int, int]:
        found = None if self.explicit else distributed_rank()
        return found or (self.rank, self.world_size)

    def __len__(self) -> int:
        rank, world = self._rank()
        return len(self.dataset.share(world, rank))

    def __iter__(self) -> TorchIterator:
        if (self.device is not None or self.pin_memory) and get_worker_info() is not None:
            raise RuntimeError(
                "device= and pin_memory= hand batches to the GPU from the main process: "
                "use DataLoader(..., num_workers=0), or DataLoader's own pin_memory"
            )
        rank, world = self._rank()
        return TorchIterator(self, consumer(rank, world))


def _whole(name: str, value: Any) -> int:
    """``value`` as a whole number of at least 0, or a ``ValueError`` naming it."""
    try:
        n = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be a whole number, not {value!r}") from None
    if n < 0:
        raise ValueError(f"{name} must be at least 0, not {n}")
    return n


def _device(device: Any) -> torch.device:
    """``device`` as torch names it, refused at once when torch cannot reach it."""
    try:
        found = torch.device(device)
    except (RuntimeError, TypeError) as err:
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"device {device!r} is not one torch knows: {why}") from None
    if found.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (found.index or 0) >= count:
            raise ValueError(f"device {str(found)!r}: torch finds {count} CUDA devices")
    elif found.type != "cpu":
        backend = getattr(torch, found.type, None)
        available = getattr(backend, "is_available", None)
        if available is not None and not available():
            raise ValueError(f"device {str(found)!r}: torch finds no {found.type} device")
    return found


class TorchIterator(Iterator[Any]):
    """One epoch of a :class:`TorchDataset` for one consumer (a DataLoader worker of a
    rank), with torchdata's ``Stateful`` protocol: ``state_dict()`` is its position, a
    small dict, and ``load_state_dict()`` on a fresh iterator resumes there exactly.

    The pipeline starts on the first ``next()``, so a restored iterator starts only the
    resumed one (which replays its epoch up to the position, as
    :meth:`tfrecordkit.Dataset.iterate` does). Saving state needs a deterministic
    pipeline: ``state_dict()`` raises a ``ValueError`` otherwise, except in a DataLoader
    worker, where ``StatefulDataLoader`` asks for the state after every batch: there the
    state it saves raises when loaded.
    """

    def __init__(self, owner: TorchDataset, consumer: tuple[int, int]) -> None:
        self._owner = owner
        self._consumer = consumer
        self._part = owner.dataset.share(*consumer)
        self._epoch = owner.epoch
        self._it: DatasetIterator | None = None
        self._resume: dict[str, Any] | None = None

    def __iter__(self) -> TorchIterator:
        return self

    def __next__(self) -> Any:
        try:
            if self._it is None:
                self._it = self._start()
            element = next(self._it)
        except TFRecordError as err:
            if get_worker_info() is not None:
                # The DataLoader makes the error again from its text alone.
                err.note_location()
            raise
        owner = self._owner
        return _tensors(element, owner.device, owner.pin_memory) if owner.tensors else element

    def _start(self) -> DatasetIterator:
        state, self._resume = self._resume, None
        if state is None:
            return self._part.iterate(epoch=self._epoch)
        keys = ("epoch", "position", "fingerprint")
        return self._part.iterate(state={k: state[k] for k in keys})

    def state_dict(self) -> dict[str, Any]:
        """This consumer's position: epoch, elements delivered, the pipeline's fingerprint."""
        if self._resume is not None:
            return dict(self._resume)
        if self._it is None:
            self._it = self._start()
        count, index = self._consumer
        state: dict[str, Any] = {"consumer": [count, index]}
        try:
            state.update(self._it.state())
        except ValueError as err:
            if get_worker_info() is None:
                raise
            state.update(epoch=self._it.epoch, position=self._it.position, error=str(err))
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Resumes from a :meth:`state_dict` of the same pipeline and consumer."""
        if not isinstance(state_dict, dict) or "position" not in state_dict:
            raise ValueError(f"not a state of this iterator: {state_dict!r}")
        if list(state_dict.get("consumer", ())) != list(self._consumer):
            count, index = state_dict.get("consumer", (None, None))
            raise ValueError(
                f"this state was saved by consumer {index} of {count} (DataLoader workers "
                f"times ranks), and this iterator is consumer {self._consumer[1]} of "
                f"{self._consumer[0]}: resume with the same workers and world size"
            )
        if state_dict.get("error"):
            raise ValueError(f"this state cannot be resumed: {state_dict['error']}")
        if self._it is not None:
            self._it.close()
            self._it = None
        self._resume = dict(state_dict)
