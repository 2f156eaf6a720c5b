"""Iterating a :class:`~tfrecordkit.Dataset`, one epoch at a time, and resuming it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .dataset import Dataset


class DatasetIterator(Iterator[Any]):
    """Iterates one epoch of a :class:`Dataset`; :meth:`state` saves the position."""

    def __init__(self, dataset: Dataset, epoch: int, position: int) -> None:
        self._dataset = dataset
        self.epoch = epoch
        self.position = 0
        self._it = dataset._elements(epoch)
        for _ in range(position):
            try:
                next(self._it)
            except StopIteration:
                raise ValueError(
                    f"cannot resume at element {position}: the epoch has only {self.position}"
                ) from None
            self.position += 1

    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Any:
        element = next(self._it)
        self.position += 1
        return element

    def state(self) -> dict[str, Any]:
        """A small JSON-able position; ``dataset.iterate(state=...)`` resumes from it."""
        self._dataset._check_deterministic()
        return {
            "epoch": self.epoch,
            "position": self.position,
            "fingerprint": self._dataset._fingerprint(),
        }

    def close(self) -> None:
        """Stops the pipeline's threads now rather than when the iterator is collected."""
        close = getattr(self._it, "close", None)
        if close is not None:
            close()


def state_of(state: Any) -> tuple[int, int]:
    """The epoch and position of a :meth:`DatasetIterator.state`, checked."""
    if not isinstance(state, dict):
        raise ValueError(f"a state is the dict DatasetIterator.state() returns, not {state!r}")
    for key in ("epoch", "position"):
        value = state.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(
                f"this state's {key} is {value!r}, not a count: it is not one "
                "DatasetIterator.state() returned"
            )
    return state["epoch"], state["position"]
