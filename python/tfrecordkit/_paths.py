"""Paths and URLs: globbing, fsspec, sidecar filtering and atomic local writes.

A leaf of the package: it imports nothing of tfrecordkit but its errors.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import warnings
from collections.abc import Iterator, Sequence
from typing import IO, Any

from .errors import SidecarSkippedWarning

PathLike = str | os.PathLike[str]
Paths = PathLike | Sequence[PathLike]

GLOB_CHARS = frozenset("*?[")
#: Files written beside shards, never read as data.
SIDECAR_SUFFIXES = (".idx", ".gzi", ".manifest.json")
#: Files ``convert`` writes beside its splits, never read as data.
SIDECAR_NAMES = frozenset({"schema.json", "summary.json", "discarded.csv", "labels.txt"})


def is_url(path: str) -> bool:
    """Whether ``path`` names an fsspec URL (``s3://``, ``gs://``, ``memory://``...) rather
    than a local file; ``file://`` paths are local."""
    return "://" in path and not path.startswith("file://")


def is_sidecar(path: str) -> bool:
    """Whether ``path`` is a file written beside the data (an index sidecar, a manifest,
    ``convert``'s side files), never a TFRecord file."""
    return path.endswith(SIDECAR_SUFFIXES) or os.path.basename(path) in SIDECAR_NAMES


def _items(paths: Paths) -> list[str]:
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    out = []
    for p in items:
        p = os.fspath(p)
        if not isinstance(p, str):
            raise TypeError(f"paths must be str or os.PathLike, not {type(p).__name__}")
        out.append(p)
    return out


def expand_paths(paths: Paths, *, urls: bool = False) -> list[str]:
    """Turns a path, a glob pattern, or a list of either into a list of existing files.

    Globs expand in sorted order. Sidecars (index files, manifests, ``convert``'s side
    files) are left out: silently from a glob, with a :class:`SidecarSkippedWarning` when
    named, as a shell glob names them. A path or pattern that matches nothing raises
    ``FileNotFoundError``. With ``urls=True``, fsspec URLs (and URL globs) are expanded
    through their filesystem too.
    """
    out: list[str] = []
    items = _items(paths)
    skipped = [p for p in items if is_sidecar(p) and not GLOB_CHARS & set(p)]
    if skipped:
        items = [p for p in items if p not in skipped]
        more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        shown = ", ".join(skipped[:3]) + more
        if not items:
            raise FileNotFoundError(2, "no data files, only sidecars", shown)
        warnings.warn(
            f"skipped {len(skipped)} sidecar file(s), not TFRecord data: {shown}",
            SidecarSkippedWarning,
            stacklevel=2,
        )
    for p in items:
        if urls and is_url(p):
            out.extend(_expand_url(p))
        elif GLOB_CHARS & set(p) and not os.path.exists(p):
            matches = sorted(m for m in _glob.glob(p) if not is_sidecar(m))
            if not matches:
                raise FileNotFoundError(2, "no files match the pattern", p)
            out.extend(matches)
        elif os.path.isdir(p):
            raise IsADirectoryError(21, "is a directory; pass a file or a glob pattern", p)
        elif not os.path.exists(p):
            raise FileNotFoundError(2, "no such file", p)
        else:
            out.append(p)
    return out


def filesystem(url: str, what: str = "reading") -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` and the path inside it."""
    try:
        import fsspec
    except ImportError:
        raise ImportError(f"{what} {url} needs fsspec: pip install 'tfrecordkit[remote]'") from None
    return fsspec.core.url_to_fs(url)


def _expand_url(url: str) -> list[str]:
    if not GLOB_CHARS & set(url):
        return [url]
    fs, _ = filesystem(url)
    protocol = url.split("://", 1)[0]
    matches = sorted(m for m in fs.glob(url) if not is_sidecar(m))
    if not matches:
        raise FileNotFoundError(2, "no files match the pattern", url)
    return [m if "://" in m else f"{protocol}://{m.lstrip('/')}" for m in matches]


def open_url(url: str) -> Any:
    """An open binary file object reading ``url`` through fsspec."""
    fs, path = filesystem(url)
    return fs.open(path, "rb")


def read_bytes(uri: str) -> bytes:
    """The whole content of a local path (``file://`` allowed) or an fsspec URL."""
    if is_url(uri):
        with open_url(uri) as f:
            return f.read()
    with open(uri.removeprefix("file://"), "rb") as f:
        return f.read()


def temp_name(path: str) -> str:
    """A hidden name beside ``path`` for a file written before it takes ``path``."""
    directory, base = os.path.split(path)
    return os.path.join(directory, f".{base}.tmp-{os.getpid()}")


def remove(path: str | None) -> None:
    """Removes ``path`` if it exists."""
    if path:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


@contextlib.contextmanager
def atomic_write(
    path: str, mode: str = "w", *, replace: bool = True, **kwargs: Any
) -> Iterator[IO[Any]]:
    """Opens a temporary file beside ``path`` that replaces ``path`` once written and
    synced; on an exception it is removed and ``path`` is left as it was. Without
    ``replace`` an existing ``path`` is never replaced: ``FileExistsError`` instead.

    >>> with atomic_write("out/labels.txt") as f:  # doctest: +SKIP
    ...     f.write("cat\\n")
    """
    temp = temp_name(path)
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
    try:
        with open(temp, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(temp, path)
        else:
            _no_replace(temp, path)
    except BaseException:
        remove(temp)
        raise


def _no_replace(temp: str, path: str) -> None:
    """Moves ``temp`` to ``path`` unless ``path`` exists, atomically: a hard link, which
    fails on an existing name, then the temporary's removal (on a filesystem without hard
    links, a check then a rename)."""
    try:
        os.link(temp, path)
    except FileExistsError:
        raise
    except OSError:
        if os.path.lexists(path):
            raise FileExistsError(17, "a file is there already", path) from None
        os.rename(temp, path)
        return
    os.remove(temp)
