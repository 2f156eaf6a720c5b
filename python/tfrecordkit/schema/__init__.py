"""What the records hold: feature specs and schemas, parsing Examples and
SequenceExamples into arrays, encoding them, the ragged and sparse values parsing
returns, schema inference, and how features lay out as columns and in Arrow."""

from .features import (
    FixedLen,
    FixedLenSequence,
    RaggedFeature,
    Schema,
    SparseFeature,
    VarLen,
    parse_example,
    parse_examples,
)
from .values import Ragged, Sparse

__all__ = [
    "FixedLen",
    "FixedLenSequence",
    "Ragged",
    "RaggedFeature",
    "Schema",
    "Sparse",
    "SparseFeature",
    "VarLen",
    "parse_example",
    "parse_examples",
]
