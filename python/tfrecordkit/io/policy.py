"""The ``on_error`` policy: what damaged or unparsable records do.

``"raise"`` (the default) raises; ``"skip"`` steps over them; ``"warn"`` steps over them
with a :class:`~tfrecordkit.errors.DataLossWarning`; a callable is given each error, and
reading goes on unless it raises.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar

from ..errors import DataLossError, DataLossWarning, TFRecordError

OnError = Literal["raise", "skip", "warn"] | Callable[[DataLossError], Any]

T = TypeVar("T")


def check_on_error(on_error: object) -> None:
    """Rejects an ``on_error`` policy that is not one of the documented ones."""
    if on_error not in ("raise", "skip", "warn") and not callable(on_error):
        raise ValueError(
            f'on_error must be "raise", "skip", "warn" or a callable, not {on_error!r}'
        )


def apply_on_error(err: Exception, on_error: Any, what: str, stacklevel: int) -> None:
    """Applies a non-raising ``on_error`` policy to ``err``: warn, call, or skip silently."""
    if on_error == "warn":
        warnings.warn(f"skipped {what}: {err}", DataLossWarning, stacklevel=stacklevel + 1)
    elif callable(on_error):
        on_error(err)


def policed(
    next_item: Callable[[], T | None],
    on_error: Any,
    *,
    catch: type[TFRecordError] = DataLossError,
    what: str = "damaged data",
    note: Callable[[Any], None] | None = None,
) -> Iterator[T]:
    """Calls ``next_item`` until it returns nothing (``None``, an empty batch), applying the
    ``on_error`` policy to the ``catch`` errors it raises.

    The native readers step past damage before raising it, so going on is calling again.
    ``note`` sees every error that is skipped.
    """
    while True:
        try:
            item = next_item()
        except catch as err:
            if on_error == "raise":
                raise
            if note is not None:
                note(err)
            apply_on_error(err, on_error, what, stacklevel=3)
            continue
        if not item:
            return
        yield item
