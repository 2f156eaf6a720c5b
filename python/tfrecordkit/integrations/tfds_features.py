"""TFDS features (``features.json``) as tfrecordkit specs: what ``tfr.tfds.info`` reads."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..schema.features import (
    FixedLen,
    FixedLenSequence,
    RaggedFeature,
    RowLengths,
    Spec,
    UniformRowLength,
    VarLen,
)


def _wire_dtype(key: str, dtype: str) -> str:
    """The Example type of a TFDS dtype: int64, float32 or bytes, as TFDS stores them."""
    if dtype in ("string", "str", "object", "bytes"):
        return "bytes"
    if dtype == "bool" or re.fullmatch(r"u?int(8|16|32|64)", dtype):
        return "int64"
    if re.fullmatch(r"b?float(16|32|64)", dtype):
        return "float32"
    raise ValueError(f"feature {key!r}: dtype {dtype!r} has no Example representation")


def read_feature(
    feature: Mapping[str, Any],
    key: str,
    outer: tuple[int | None, ...],
    specs: dict[str, Spec],
    kinds: dict[str, str],
    channels: dict[str, int] | None = None,
) -> None:
    """Adds the specs of one TFDS feature inside ``len(outer)`` sequences of ``outer``
    lengths (None where they vary), and the channels of an ``Image`` to ``channels``."""
    cls = str(feature.get("pythonClassName", "")).rsplit(".", 1)[-1] or "feature"
    name = key or "the features"
    if "featuresDict" in feature:
        for child, sub in sorted(feature["featuresDict"].get("features", {}).items()):
            read_feature(sub, f"{key}/{child}" if key else child, outer, specs, kinds, channels)
        return
    if "sequence" in feature:
        length = _whole(name, "a sequence length", feature["sequence"].get("length", -1))
        inner = feature["sequence"]["feature"]
        read_feature(inner, key, (*outer, None if length < 0 else length), specs, kinds, channels)
        return
    default: Any = None
    shape: tuple[int | None, ...] = ()
    if "tensor" in feature or "boundingBox" in feature:
        content = feature.get("tensor") or feature.get("boundingBox") or {}
        encoding = content.get("encoding") or "none"
        if encoding != "none":
            raise ValueError(
                f"feature {name!r}: a {cls} stored {encoding}-encoded has no plain Example "
                "form tfrecordkit parses"
            )
        dims = (content.get("shape") or {}).get("dimensions", [])
        shape = tuple(None if n < 0 else n for n in (_whole(name, "a dimension", d) for d in dims))
        dtype = str(content.get("dtype", ""))
        wire = _wire_dtype(name, dtype)
        if content.get("optional"):
            default = _missing_value(dtype)
    elif "classLabel" in feature:
        wire = "int64"
    elif "text" in feature and not feature["text"]:
        wire = "bytes"
    elif "image" in feature:
        wire = "bytes"
        dims = (feature["image"].get("shape") or {}).get("dimensions", [])
        sizes = [_whole(name, "a dimension", d) for d in dims]
        if channels is not None and len(sizes) == 3 and sizes[2] > 0:
            channels[key] = sizes[2]
    else:
        raise ValueError(
            f"feature {name!r}: {cls} has no plain Example form tfrecordkit maps "
            "(Tensor, ClassLabel, Text, Image, Sequence and dicts of them do)"
        )
    specs[key] = _spec(name, (*outer, *shape), wire, len(outer), default)
    kinds[key] = cls


def _whole(name: str, what: str, value: Any) -> int:
    """A size from TFDS metadata (JSON writes int64 as strings): a whole number, -1 (or
    any negative) for one that varies; anything else a ``ValueError`` naming the feature."""
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,19}", value.strip()):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
        raise ValueError(f"feature {name!r}: {what} is not a whole number: {value!r:.40}")
    return value


def _missing_value(dtype: str) -> Any:
    """What TFDS parses for a missing optional tensor."""
    if dtype in ("string", "str", "object", "bytes"):
        return b""
    if dtype == "bool":
        return 0
    if "int" in dtype:
        return int(np.iinfo(np.dtype(dtype)).min)
    return float(np.finfo(np.dtype("float32" if "bfloat" in dtype else dtype)).min)


def _spec(key: str, shape: tuple[int | None, ...], dtype: str, rank: int, default: Any) -> Spec:
    """The spec TFDS's own parser uses for a tensor of ``shape`` inside ``rank`` sequences."""
    unknown = shape.count(None)
    if unknown == 0:
        return FixedLen(shape, dtype, default)
    if unknown == 1 and shape[0] is None:
        if len(shape) == 1 and default is None:
            return VarLen(dtype)
        return FixedLenSequence(shape[1:], dtype, allow_missing=True, default=default)
    if rank > 1 and None not in shape[rank:]:
        # Nested sequences: TFDS stores the flat values and each level's row lengths.
        parts: list[Any] = [RowLengths(f"{key}/ragged_row_lengths_{i}") for i in range(rank - 1)]
        parts += [UniformRowLength(int(d)) for d in shape[rank:] if d is not None]
        return RaggedFeature(dtype, f"{key}/ragged_flat_values", parts)
    shown = tuple(-1 if d is None else d for d in shape)
    raise ValueError(f"feature {key!r}: TFDS itself parses no Example feature of shape {shown}")
