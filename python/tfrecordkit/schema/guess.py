"""Guessing a schema from decoded Examples."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import SchemaError, SchemaWarning
from ..io.paths import first_few
from .features import FixedLen, Schema, Spec, VarLen

__all__ = ["SchemaGuess"]


class SchemaGuess:
    """Accumulates decoded Examples and guesses their schema: a feature present in every
    Example with the same number of values is ``FixedLen`` (shape ``[]`` for one value),
    anything else ``VarLen``."""

    def __init__(self) -> None:
        self.examples = 0
        self._kinds: dict[str, str] = {}
        self._counts: dict[str, set[int]] = {}
        self._present: dict[str, int] = {}

    def add(self, example: Mapping[str, Any]) -> None:
        """Takes one Example as :func:`decode_example` returns it."""
        self.examples += 1
        for key, values in example.items():
            if isinstance(values, np.ndarray):
                kind = "int64" if values.dtype == np.int64 else "float32"
            elif values:
                kind = "bytes"
            else:
                kind = self._kinds.get(key, "")
            if kind and self._kinds.setdefault(key, kind) != kind:
                raise SchemaError(
                    f"feature {key!r} is {self._kinds[key]} in some Examples and {kind} in others",
                    key=key,
                )
            self._counts.setdefault(key, set()).add(len(values))
            self._present[key] = self._present.get(key, 0) + 1

    def add_summary(
        self, examples: int, features: Mapping[str, tuple[list[str], int, int, int]]
    ) -> None:
        """Takes ``examples`` Examples at once, as ``features`` sums them up: for each
        feature, the types of its values, the fewest and the most values an Example had,
        and how many Examples had it."""
        self.examples += examples
        for key, (kinds, fewest, most, present) in features.items():
            for kind in kinds:
                if self._kinds.setdefault(key, kind) != kind:
                    raise SchemaError(
                        f"feature {key!r} is {self._kinds[key]} in some Examples and {kind} "
                        "in others",
                        key=key,
                    )
            self._counts.setdefault(key, set()).update((fewest, most))
            self._present[key] = self._present.get(key, 0) + present

    def check(self, schema: Schema) -> None:
        """Raises :class:`~tfrecordkit.errors.SchemaError` naming the first feature of
        ``schema`` that some of the Examples taken would not parse with."""
        for key, spec in schema.items():
            dtype = getattr(spec, "dtype", None)
            kind = self._kinds.get(key)
            if dtype is None or key not in self._counts:
                if isinstance(spec, FixedLen) and spec.default is None and self.examples:
                    raise SchemaError(
                        f"feature {key!r} is in none of the rows, and its FixedLen has no default",
                        key=key,
                    )
                continue
            if kind is not None and kind != dtype:
                raise SchemaError(
                    f"feature {key!r} holds {kind} values, and the schema says {dtype}", key=key
                )
            if not isinstance(spec, FixedLen):
                continue
            n = int(np.prod(spec.shape, dtype=np.int64))
            sizes = self._counts[key]
            if sizes != {n}:
                other = min(sizes - {n})
                raise SchemaError(
                    f"feature {key!r} has {other} value{'' if other == 1 else 's'} in some "
                    f"rows, and the schema's FixedLen of shape {list(spec.shape)} takes {n}",
                    key=key,
                )
            missing = self.examples - self._present[key]
            if missing and spec.default is None:
                raise SchemaError(
                    f"feature {key!r} is missing from {missing} row{'' if missing == 1 else 's'}"
                    ", and its FixedLen has no default",
                    key=key,
                )

    @property
    def kinds(self) -> dict[str, str]:
        """The type (``int64``, ``float32``, ``bytes``) of each feature seen with a value."""
        return dict(self._kinds)

    def schema(self, nullable: bool = False) -> Schema:
        """The guessed schema. Features empty in every Example (no value, so no type)
        are left out, with a :class:`~tfrecordkit.SchemaWarning` naming them. With
        ``nullable``, a feature of one value wherever it is present is ``FixedLen([])``
        even where some Examples lack it (to read with ``nullable``)."""
        unknown = [key for key in self._counts if key not in self._kinds]
        if unknown:
            shown = first_few([repr(k) for k in unknown], 5)
            warnings.warn(
                f"left out of the schema: {shown}, empty wherever the {self.examples} "
                "Examples read have it, so of no known type; give them in a schema to read them",
                SchemaWarning,
                stacklevel=3,
            )
        specs: dict[str, Spec] = {}
        for key, kind in self._kinds.items():
            sizes = self._counts[key]
            everywhere = self._present[key] == self.examples
            if len(sizes) == 1 and (everywhere or (nullable and sizes == {1})):
                (size,) = sizes
                specs[key] = FixedLen([] if size == 1 else [size], kind)
            else:
                specs[key] = VarLen(kind)
        return Schema(specs)
