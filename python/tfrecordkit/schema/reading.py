"""Reading Examples by a schema, and guessing the schema of records."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..io.options import ReadOptions
from ..io.paths import Paths, StorageOptions
from ..io.policy import OnError
from ..io.records import _batches, _located, _open, read_records
from ..io.reports import ReadReport
from .example import decode_sequence_example
from .features import Schema, _as_schema
from .guess import SchemaGuess
from .sequence import SequenceGuess

__all__ = ["infer_schema", "read_examples"]


def read_examples(
    paths: Paths,
    schema: Any,
    batch_size: int = 1024,
    *,
    compression: str | None = "auto",
    verify: bool = True,
    on_error: OnError = "raise",
    resync: bool = False,
    max_record_bytes: int | None = None,
    report: ReadReport | None = None,
    storage_options: StorageOptions = None,
    options: ReadOptions | None = None,
) -> Iterator[dict[str, Any]]:
    """Reads and parses Examples in batches: each item is what :func:`parse_examples`
    returns for up to ``batch_size`` records. Reading, checksums and parsing all run in
    native code without the GIL.

    >>> schema = {"label": FixedLen([], "int64")}
    >>> for batch in read_examples("train-*.tfrecord", schema, 256):  # doctest: +SKIP
    ...     train_step(batch["label"])
    """
    o = ReadOptions.given(options, locals())
    schema = _as_schema(schema)
    compiled = schema.compiled()
    reader = _open(paths, o)
    batches = _batches(lambda: reader.read_parsed(compiled, batch_size), o, reader)
    return (_located(reader, schema.outputs, parsed) for parsed in batches)


def infer_schema(paths: Paths, sample: int = 1000, **read_kwargs: Any) -> Schema:
    """Guesses a schema from the first ``sample`` Examples of ``paths`` (see
    :class:`SchemaGuess`); ``read_kwargs`` go to :func:`read_records`. For
    ``SequenceExample``s the schema is the context's, and its ``sequence`` attribute the
    feature lists' (``FixedLenSequence`` where every step has one size, else ``VarLen``).

    >>> infer_schema("train-*.tfrecord")  # doctest: +SKIP
    Schema({'label': FixedLen(shape=(), dtype='int64', default=None), ...})
    """
    guess = SchemaGuess()
    steps = SequenceGuess()
    for record in read_records(paths, **read_kwargs):
        if guess.examples >= sample:
            break
        context, lists = decode_sequence_example(record)
        guess.add(context)
        steps.add(lists)
    schema = guess.schema()
    if steps.seen:
        schema.sequence = steps.schema()
    return schema
