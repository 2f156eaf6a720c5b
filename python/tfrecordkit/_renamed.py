"""Arguments that were renamed: the old spelling keeps working, with a warning."""

from __future__ import annotations

import warnings
from typing import Any


def renamed(call: str, now: str, value: Any, before: str, old: Any, why: str) -> Any:
    """The value of argument ``now`` of ``call``, or of its deprecated spelling ``before``
    (``old``, None when not given) with a ``DeprecationWarning`` that says ``why``; both
    given is a ``TypeError``."""
    if old is None:
        return value
    if value is not None:
        raise TypeError(f"{call}() takes {now}=, not also {before}=")
    warnings.warn(f"{call}({before}=) is now {call}({now}=): {why}", DeprecationWarning, 3)
    return old
