"""Errors of the ``tfrecord`` data source as a user of Spark sees them. Spark hands an
error raised in the data source's Python code back as an ``AnalysisException`` or a
``PythonException`` whose message holds the Python traceback; where the data source's
caller can (``load``, ``save``), the error found at its end is raised in its place, as its
own type with its own one line."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from .. import errors

# The built-in errors the data source raises, by name.
_BUILTIN: dict[str, type[BaseException]] = {
    c.__name__: c
    for c in (
        ValueError,
        TypeError,
        OverflowError,
        FileNotFoundError,
        FileExistsError,
        PermissionError,
        IsADirectoryError,
        NotADirectoryError,
        OSError,
        ImportError,
    )
}
# The last line of a Python traceback: the error's class and its message.
_LAST_LINE = re.compile(r"(?:tfrecordkit\.errors\.)?(?P<name>[A-Za-z]+): (?P<message>.+)")


def python_error(err: BaseException) -> BaseException | None:
    """The Python error whose traceback ends the message of Spark's ``err``, made again
    (its message, its type); ``None`` when it ends with none the data source raises."""
    for line in reversed(str(err).splitlines()):
        found = _LAST_LINE.fullmatch(line.strip())
        if found is None:
            continue
        name, message = found["name"], found["message"]
        cls = _BUILTIN.get(name)
        if cls is None and name in errors.__all__:
            candidate = getattr(errors, name)
            if isinstance(candidate, type) and issubclass(candidate, errors.TFRecordError):
                cls = candidate
        if cls is not None:
            return cls(message)
    return None


@contextlib.contextmanager
def spark_errors() -> Iterator[None]:
    """Raises the data source's own error in place of Spark's exception that wraps it."""
    from pyspark.errors import PySparkException

    try:
        yield
    except PySparkException as err:
        found = python_error(err)
        if found is None:
            raise
        raise found from None


def teach_reader_errors(source: str) -> None:
    """``DataFrameReader.load`` of the data source ``source`` raises the data source's own
    errors (a missing path, a bad option, a file that cannot give a schema), not Spark's
    exception around them."""
    from pyspark.sql.readwriter import DataFrameReader

    if getattr(DataFrameReader, "_tfrecordkit_errors", False):
        return
    original_format, original_load = DataFrameReader.format, DataFrameReader.load

    def format(self: Any, name: str) -> Any:
        self._tfr_format = name
        return original_format(self, name)

    def load(self: Any, path: Any = None, format: str | None = None, *args: Any, **kw: Any) -> Any:
        if (format or getattr(self, "_tfr_format", None)) != source:
            return original_load(self, path, format, *args, **kw)
        with spark_errors():
            return original_load(self, path, format, *args, **kw)

    DataFrameReader.format = format  # type: ignore[method-assign]
    DataFrameReader.load = load  # type: ignore[method-assign]
    DataFrameReader._tfrecordkit_errors = True  # type: ignore[attr-defined]
