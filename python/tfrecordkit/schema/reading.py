"""Reading Examples by a schema, and guessing the schema of records."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, TypeVar

from ..errors import ExampleDecodeError, SchemaError, TFRecordError
from ..io.options import DEFAULT_BATCH_BYTES, ReadOptions, check_count
from ..io.paths import StorageOptions
from ..io.policy import OnError
from ..io.ranges import ReadPaths
from ..io.records import _batches, _open
from ..io.reports import ReadReport
from .example import decode_sequence_example, foreign
from .features import Schema, parsing_schema
from .guess import SchemaGuess
from .sequence import SequenceGuess

E = TypeVar("E", bound=TFRecordError)

__all__ = ["infer_schema", "read_examples"]


def read_examples(
    paths: ReadPaths,
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
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> Iterator[dict[str, Any]]:
    """Reads and parses Examples in batches: each item is what :func:`parse_examples`
    returns for up to ``batch_size`` records, or fewer once they hold ``batch_bytes``
    (4 MiB by default), or before a record over 1 MiB (with bytes features in the
    schema). Reading, checksums and parsing all run in native code without the GIL.
    The next batch is read and checked on a thread of its own while the last one is
    used, and parsed there too while the caller is still busy with the one before:
    parsing falls to whichever thread would otherwise wait.

    >>> schema = {"label": FixedLen([], "int64")}
    >>> for batch in read_examples("train-*.tfrecord", schema, 256):  # doctest: +SKIP
    ...     train_step(batch["label"])
    """
    check_count("batch_size", batch_size)
    check_count("batch_bytes", batch_bytes)
    o = ReadOptions.given(options, locals())
    lists = getattr(schema, "sequence", None)
    if lists:
        raise ValueError(
            f"the schema has feature lists ({', '.join(sorted(lists))}): the records are "
            "SequenceExamples, and read_examples reads their context only; read them whole "
            "with read_arrow(paths, schema, sequence_schema=schema.sequence), "
            "Dataset.parse(schema, schema.sequence) or parse_sequence_example"
        )
    compiled = parsing_schema(schema, "read_examples()").compiled()
    reader = _open(paths, o, ahead=True)
    return _batches(
        lambda: reader.read_parsed(compiled, batch_size, max_bytes=batch_bytes, as_dict=True),
        o,
        reader,
    )


#: Schema inference reads at most this many bytes of records (large ones: images, audio).
SAMPLE_BYTES = 16 << 20


def infer_schema(
    paths: ReadPaths, sample: int = 1000, *, nullable: bool = False, **read_kwargs: Any
) -> Schema:
    """Guesses a schema from the first ``sample`` Examples of ``paths``, or fewer once they
    hold 16 MiB (each feature seen in every one of them with the same number of values is
    ``FixedLen``, any other ``VarLen``); ``read_kwargs`` are the read options of
    :func:`read_records`. With ``nullable``, a feature that some Examples lack is
    ``FixedLen([])`` where those that have it hold one value, as
    ``read_arrow(nullable=True)`` reads it (null where missing).
    A record that is not an Example raises ``ExampleDecodeError`` naming its file and
    index. For ``SequenceExample``s the schema is the context's, and its ``sequence``
    attribute the feature lists' (``FixedLenSequence`` where every step has one size, else
    ``VarLen``).

    >>> infer_schema("train-*.tfrecord")  # doctest: +SKIP
    Schema({'label': FixedLen(shape=(), dtype='int64', default=None), ...})
    """
    check_count("sample", sample)
    options = read_kwargs.pop("options", None)
    unknown = set(read_kwargs) - {f.name for f in dataclasses.fields(ReadOptions)}
    if unknown:
        raise TypeError(f"infer_schema() got unexpected keyword arguments {sorted(unknown)}")
    o = ReadOptions.of(options, **read_kwargs)
    reader = _open(paths, o)
    guess = SchemaGuess()
    steps = SequenceGuess()

    def located(err: E, i: int) -> E:
        """``err``, about record ``i`` of the batch, naming where that record is."""
        err.path, err.record_index, err.offset = reader.origin_in_batch(i) or (None, None, None)
        return err

    seen = 0
    for batch in _batches(lambda: reader.read_batch(min(sample, 512)), o, reader):
        for i, record in enumerate(batch):
            if guess.examples >= sample or seen >= SAMPLE_BYTES:
                break
            seen += len(record)
            try:
                context, lists = decode_sequence_example(record)
            except ExampleDecodeError as err:
                message = f"not a tf.train.Example or SequenceExample ({err})"
                raise located(ExampleDecodeError(message), i) from None
            why = None if context or lists else foreign(record)
            if why is not None:
                raise located(ExampleDecodeError(f"not a tf.train.Example: {why}"), i)
            try:
                guess.add(context)
                steps.add(lists)
            except SchemaError as err:
                # The record whose feature disagrees with those before it.
                located(err, i)
                raise
        if guess.examples >= sample or seen >= SAMPLE_BYTES:
            break
    schema = guess.schema(nullable)
    if steps.seen:
        schema.sequence = steps.schema()
    return schema
