"""The exceptions tfrecordkit raises, in one hierarchy.

Every error found in data carries where it was found: ``path`` (the file), ``offset`` (byte
offset of the damaged record; for compressed files, in the decompressed stream unless the
compressed stream itself is damaged), ``record_index`` (index of the record in its file, or
in the batch being parsed), for schema and decode errors the feature ``key``, and, when a
reader resynchronized past damage, ``lost``: the byte range ``(start, end)`` it skipped; they
keep it through pickling, through frameworks that make an error again from its ``args``
(Apache Beam) and from a PyTorch DataLoader worker. Errors from the operating system stay
``FileNotFoundError``, ``PermissionError`` and ``OSError``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "CorruptRecordError",
    "DataLossError",
    "DataLossWarning",
    "ExampleDecodeError",
    "ImageDecodeError",
    "InternalError",
    "NotTFRecordError",
    "SchemaError",
    "SidecarError",
    "SidecarSkippedWarning",
    "SchemaWarning",
    "TFRecordError",
    "TruncatedRecordError",
    "UnsafePathError",
]


class TFRecordError(Exception):
    """Base class of every tfrecordkit error."""

    def __init__(
        self,
        message: str,
        path: str | None = None,
        offset: int | None = None,
        record_index: int | None = None,
        key: str | None = None,
        lost: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.offset = offset
        self.record_index = record_index
        self.key = key
        self.lost = lost
        given = (path, offset, record_index, key, lost)
        if all(v is None for v in given) and isinstance(message, str) and _NOTE in message:
            self._restore(message)

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path))
        if self.record_index is not None:
            where.append(f"record {self.record_index}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        if not where or self.message.rstrip().endswith(f"({', '.join(where)})"):
            return self.message
        return f"{self.message} ({', '.join(where)})"

    def note_location(self) -> None:
        """Adds the location to the error's notes, as one line of JSON, for a framework
        that makes the error again from its printed traceback alone (PyTorch, from a
        DataLoader worker's): made from that text, the error has its location back."""
        where = {name: getattr(self, name) for name in _LOCATION}
        self.add_note(_NOTE + json.dumps(where))

    def _restore(self, text: str) -> None:
        """The location from the last note :meth:`note_location` added to ``text`` (a line
        of its own), and ``text`` without it as the message; nothing where there is no
        such line of JSON."""
        head, _, note = text.rpartition(_NOTE)
        line, _, tail = note.partition("\n")
        if not head.endswith("\n"):
            return
        try:
            where = json.loads(line)
        except ValueError:
            return
        if not isinstance(where, dict):
            return
        for name in _LOCATION:
            value = where.get(name)
            if name == "lost":
                ok = isinstance(value, list) and len(value) == 2
                value = tuple(value) if ok and all(type(v) is int for v in value) else None
            elif type(value) is not _TYPES[name]:
                value = None
            setattr(self, name, value)
        self.message = head + tail

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep the location through pickling (errors cross DataLoader worker processes).
        return (_rebuild, (type(self), self.message, self.__dict__.copy()))

    @property
    def args(self) -> tuple[Any, ...]:
        """The message and the location, as the constructor takes them: a framework that
        makes the error again from its ``args`` (Apache Beam, adding the step it ran)
        keeps where it happened."""
        where = [self.path, self.offset, self.record_index, self.key, self.lost]
        while where and where[-1] is None:
            where.pop()
        return (self.message, *where)

    @args.setter
    def args(self, value: tuple[Any, ...]) -> None:
        value = tuple(value)
        self.message = str(value[0]) if value else ""
        for name, given in zip(_LOCATION, value[1:], strict=False):
            setattr(self, name, given)


_LOCATION = ("path", "offset", "record_index", "key", "lost")
_TYPES = {"path": str, "offset": int, "record_index": int, "key": str}
#: How the note of :meth:`TFRecordError.note_location` begins.
_NOTE = "tfrecordkit error location: "


def _rebuild(cls: type[TFRecordError], message: str, state: dict[str, Any]) -> TFRecordError:
    err = cls(message)
    err.__dict__.update(state)
    return err


class DataLossError(TFRecordError):
    """Bytes were lost or damaged: bad lengths, broken compressed streams."""


class CorruptRecordError(DataLossError):
    """A record's length or data checksum does not match."""


class NotTFRecordError(CorruptRecordError):
    """The file is not a TFRecord file at all: its first record header fails its checksum
    and its first bytes are another format's (``it starts with a PNG signature``, ``...
    with text: "split,image_uri,label"``)."""


class TruncatedRecordError(DataLossError):
    """The stream ends inside a record (its header, data or footer)."""


class ExampleDecodeError(TFRecordError, ValueError):
    """A record is not a valid serialized ``tf.train.Example`` / ``SequenceExample``."""


class SchemaError(TFRecordError, ValueError):
    """A valid Example does not fit the schema: missing feature, wrong type or count."""


class ImageDecodeError(TFRecordError, ValueError):
    """Bytes that are not a decodable JPEG, PNG or WebP image (or decode too large)."""


class SidecarError(TFRecordError, ValueError):
    """A file beside the data (a dataset manifest, ``schema.json``, TFDS's
    ``dataset_info.json`` / ``features.json``) is not what it should be: not JSON, a field
    missing or of the wrong type. ``path`` names the sidecar."""


class UnsafePathError(SidecarError):
    """A sidecar names a file outside its own dataset: a name with a path separator or
    ``..``, an absolute path, a URL or another bucket. A dataset's sidecars may only name
    plain files in its own directory (or URL prefix); nothing is opened."""


class InternalError(TFRecordError, RuntimeError):
    """A bug in tfrecordkit's native core (a Rust panic), caught at the call that hit it
    and named in the message; please report it with the input that caused it."""


class DataLossWarning(UserWarning):
    """Damage skipped by ``on_error="warn"``."""


class SidecarSkippedWarning(UserWarning):
    """Files beside the data (``.idx`` / ``.gzi`` indexes, manifests, ``schema.json``,
    ``discarded.csv``...) were handed to a reader, as a shell glob does, and left out;
    directories a glob matches are left out with it."""


class SchemaWarning(UserWarning):
    """An inferred schema leaves features out: they were empty in every Example sampled,
    so nothing says their type."""


def type_phrase(x: Any) -> str:
    """``x``'s type as a message says it: ``None``, ``a str``, ``an int``."""
    name = type(x).__name__
    return "None" if x is None else f"an {name}" if name[0] in "aeiou" else f"a {name}"
