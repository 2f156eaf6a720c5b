"""Paths and URLs: globbing, fsspec, sidecar filtering and atomic local writes.

Every reader takes local paths and fsspec URLs (``s3://``, ``gs://``, ``az://``,
``http(s)://``, ``memory://``...) alike; ``storage_options`` (credentials, endpoints) go to
the URL's filesystem. A leaf of the package: it imports nothing of tfrecordkit but its errors.
"""

from __future__ import annotations

import contextlib
import errno
import glob as _glob
import ntpath
import os
import stat
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from ..errors import SidecarSkippedWarning, UnsafePathError

PathLike = str | os.PathLike[str]
Paths = PathLike | Sequence[PathLike]
StorageOptions = Mapping[str, Any] | None

#: Bytes asked of a remote file per request while streaming it (the core reads this much
#: at a time, a couple of blocks ahead of the records it hands out).
REMOTE_BLOCK = 4 << 20

GLOB_CHARS = frozenset("*?[")
#: The object a writer holds while it uploads a dataset to an object store.
CLAIM_SUFFIX = ".writing"
#: Files written beside shards, never read as data.
SIDECAR_SUFFIXES = (".idx", ".gzi", ".manifest.json", ".labels.txt", CLAIM_SUFFIX)
#: Files ``convert`` (and TFDS metadata) write beside the splits, never read as data.
SIDECAR_NAMES = frozenset(
    {
        "schema.json",
        "summary.json",
        "discarded.csv",
        "labels.txt",
        "dataset_info.json",
        "features.json",
    }
)


def is_url(path: str) -> bool:
    """Whether ``path`` names an fsspec URL (``s3://``, ``gs://``, ``memory://``...) rather
    than a local file; ``file://`` paths are local."""
    return "://" in path and not path.startswith("file://")


def is_sidecar(path: str) -> bool:
    """Whether ``path`` is a file written beside the data (an index sidecar, a manifest,
    ``convert``'s side files), never a TFRecord file."""
    return path.endswith(SIDECAR_SUFFIXES) or os.path.basename(path) in SIDECAR_NAMES


def join(directory: str, name: str) -> str:
    """``name`` inside ``directory``, a local directory or a URL prefix."""
    if is_url(directory):
        return f"{directory.rstrip('/')}/{name}"
    return os.path.join(directory, name)


def dirname(path: str) -> str:
    """The directory (or URL prefix) of a local path or a URL."""
    return path.rsplit("/", 1)[0] if is_url(path) else os.path.dirname(path)


def basename(path: str) -> str:
    """The last part of a local path or a URL."""
    return path.rsplit("/", 1)[-1] if is_url(path) else os.path.basename(path)


def first_few(items: Sequence[str], limit: int = 3, sep: str = ", ") -> str:
    """The first ``limit`` of ``items`` joined by ``sep``, and how many more there are:
    what a one-line message shows of a long list."""
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return sep.join(items[:limit]) + more


def quote(text: str, limit: int = 32) -> str:
    """``text`` for an error message when a file supplied it: at most ``limit``
    characters, escaped to printable ASCII (``repr``'s escapes), ``...`` when cut."""
    shown = ascii(text[:limit])
    return shown + "..." if len(text) > limit else shown


def _unsafe(name: str) -> str | None:
    """Why ``name`` is not a plain file name, or None when it is one."""
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return "it names a directory"
    if "://" in name:
        return "it is a URL"
    if "/" in name or "\\" in name:
        return "it contains a path separator"
    if ntpath.splitdrive(name)[0]:
        return "it names a drive"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it contains a control character"
    return None


def contained(directory: str, name: Any, *, sidecar: str, entry: str) -> str:
    """The path of ``name``, a file that the sidecar ``sidecar`` names as ``entry``, inside
    ``directory`` (the dataset's own directory or URL prefix). Data is never instructions:
    a name with a path separator or ``..``, an absolute path, a drive, a URL, anything but
    a plain file name, raises :class:`UnsafePathError` before anything is opened.

    >>> contained("s3://bucket/data", "../other/x.tfrecord", sidecar="m.json", entry="shard 0")
    Traceback (most recent call last):
    ...
    tfrecordkit.errors.UnsafePathError: shard 0 names '../other/x.tfrecord', ... (m.json)
    """
    why = "it is not a string" if not isinstance(name, str) else _unsafe(name)
    if why is not None:
        shown = quote(name) if isinstance(name, str) else type(name).__name__
        raise UnsafePathError(
            f"{entry} names {shown}, which is not a plain file name in the "
            f"dataset's own directory ({why}); nothing was opened",
            path=sidecar,
        )
    return join(directory, name)


def _items(paths: Paths) -> list[str]:
    what = "paths must be a path, a glob pattern or a list of them"
    if isinstance(paths, (str, os.PathLike)):
        items = [paths]
    elif isinstance(paths, (bytes, bytearray)) or not hasattr(paths, "__iter__"):
        raise TypeError(f"{what}, not {type(paths).__name__}")
    else:
        items = list(paths)
    out = []
    for p in items:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"{what}; one of them is {type(p).__name__}")
        p = os.fspath(p)
        if not isinstance(p, str):
            raise TypeError(f"{what}; one of them is {type(p).__name__}")
        out.append(p)
    return out


def expand_paths(paths: Paths, *, storage_options: StorageOptions = None) -> list[str]:
    """Turns a path, a glob pattern, or a list of either into a list of existing files.

    Globs expand in sorted order. Sidecars (index files, manifests, ``convert``'s side
    files) are left out: silently from a glob, with a :class:`SidecarSkippedWarning` when
    named, as a shell glob names them. A path or pattern that matches nothing raises
    ``FileNotFoundError``. fsspec URLs and URL globs expand through their filesystem,
    opened with ``storage_options``; a URL without a glob is kept as it is (a missing
    object is reported when it is read).

    >>> expand_paths("s3://bucket/train-*.tfrecord")  # doctest: +SKIP
    ['s3://bucket/train-00000-of-00002.tfrecord', 's3://bucket/train-00001-of-00002.tfrecord']
    """
    out: list[str] = []
    items = _items(paths)
    skipped = [p for p in items if is_sidecar(p) and not GLOB_CHARS & set(p)]
    if skipped:
        items = [p for p in items if p not in skipped]
        shown = first_few(skipped)
        if not items:
            raise FileNotFoundError(2, "no data files, only sidecars", shown)
        warnings.warn(
            f"skipped {len(skipped)} sidecar file(s), not TFRecord data: {shown}",
            SidecarSkippedWarning,
            stacklevel=2,
        )
    for p in items:
        if is_url(p):
            out.extend(_expand_url(p, storage_options))
            continue
        p = p.removeprefix("file://")
        if GLOB_CHARS & set(p) and not os.path.exists(p):
            matches = sorted(m for m in _glob.glob(p) if not is_sidecar(m))
            directories = [m for m in matches if os.path.isdir(m)]
            matches = [m for m in matches if m not in directories]
            if directories:
                n = len(directories)
                warnings.warn(
                    f"skipped {n} director{'y' if n == 1 else 'ies'} the pattern {p} matches: "
                    f"{first_few(directories)}",
                    SidecarSkippedWarning,
                    stacklevel=2,
                )
            if not matches:
                raise FileNotFoundError(2, "no files match the pattern", p)
            out.extend(matches)
        elif os.path.isdir(p):
            raise IsADirectoryError(
                21, "is a directory; pass its files, or a glob pattern such as DIR/*", p
            )
        else:
            check_readable(p)
            out.append(p)
    return out


def check_readable(path: str) -> None:
    """Raises what keeps ``path`` from being read as a file: missing, or out of reach
    (a directory on its way that may not be searched...), each named for what it is."""
    try:
        os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(2, "no such file", path) from None
    except OSError as err:
        raise OSError(err.errno, err.strerror, path) from None


def filesystem(
    url: str, what: str = "reading", storage_options: StorageOptions = None
) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` (opened with ``storage_options``) and the path
    inside it."""
    fsspec = _filesystem_for(url, what)
    with remote_errors(url):
        return fsspec.core.url_to_fs(url, **dict(storage_options or {}))


def _filesystem_for(url: str, what: str = "reading") -> Any:
    """fsspec, once it is known to serve ``url``'s scheme: an ``ImportError`` saying what to
    install where fsspec or the scheme's package is missing, a ``ValueError`` for a scheme
    no filesystem serves."""
    try:
        import fsspec
    except ImportError:
        raise ImportError(f"{what} {url} needs fsspec: pip install 'tfrecordkit[remote]'") from None
    scheme = url.split("://", 1)[0] if "://" in url else "file"
    try:
        fsspec.get_filesystem_class(scheme)
    except ImportError as err:
        # fsspec knows the scheme, and says which package serves it.
        raise ImportError(f"{what} {url}: {' '.join(str(err).split())}") from None
    except ValueError:
        raise ValueError(f"no filesystem serves {scheme}:// URLs such as {url}") from None
    return fsspec


def as_url(url_like: str, fs_path: str) -> str:
    """``fs_path``, a path inside the filesystem of ``url_like``, as a URL again."""
    if "://" in fs_path:
        return fs_path
    protocol = url_like.split("://", 1)[0]
    return f"{protocol}://{fs_path.lstrip('/')}"


def _expand_url(url: str, storage_options: StorageOptions) -> list[str]:
    if not GLOB_CHARS & set(url):
        _filesystem_for(url)
        return [url]
    fs, _ = filesystem(url, storage_options=storage_options)
    with remote_errors(url):
        matches = sorted(m for m in fs.glob(url) if not is_sidecar(m))
    if not matches:
        raise FileNotFoundError(2, "no files match the pattern", url)
    return [as_url(url, m) for m in matches]


# What object stores and their clients call a refusal, a missing object, and a store too
# busy to answer (botocore error codes, Azure and GCS names, HTTP statuses).
_REFUSED = {
    "AccessDenied",
    "AccountProblem",
    "AllAccessDisabled",
    "AuthenticationFailed",
    "AuthorizationFailure",
    "ExpiredToken",
    "Forbidden",
    "InvalidAccessKeyId",
    "InvalidToken",
    "SignatureDoesNotMatch",
    "Unauthorized",
}
_CREDENTIALS = (
    "NoCredentialsError",
    "PartialCredentialsError",
    "CredentialRetrievalError",
    "DefaultCredentialsError",
    "RefreshError",
    "ClientAuthenticationError",
    "TokenRetrievalError",
    "UnauthorizedSSOTokenError",
)
_MISSING = {"NoSuchKey", "NoSuchBucket", "NotFound", "BlobNotFound", "ContainerNotFound"}
_BUSY = {
    "SlowDown",
    "ServiceUnavailable",
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TooManyRequests",
    "ServerBusy",
    "InternalError",
}


def _status(err: BaseException) -> int | None:
    """The HTTP status an exception carries, if any."""
    for name in ("status", "status_code"):
        value = getattr(err, name, None)
        if isinstance(value, int):
            return value
    response = getattr(err, "response", None)
    if isinstance(response, dict):
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return status if isinstance(status, int) else None
    return None


def _code(err: BaseException) -> str | None:
    """The error code a store's client gives (botocore's ``Error.Code``), if any."""
    response = getattr(err, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code is not None else None
    code = getattr(err, "error_code", None)
    return str(code) if isinstance(code, str) else None


def _cause(err: BaseException) -> str:
    """An exception as one short line: its type and message, or for an HTTP client's
    error response (aiohttp's), the status, its reason and the URL that answered."""
    status, reason = _status(err), getattr(err, "message", None)
    if status is not None and isinstance(reason, str) and _code(err) is None:
        answered = getattr(getattr(err, "request_info", None), "real_url", None)
        return f"HTTP {status} {reason}" + (f" from {answered}" if answered else "")
    text = " ".join(str(err).split()) or "no details"
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{type(err).__name__}: {text}"


def _from_a_dependency(err: BaseException) -> bool:
    """Whether ``err`` comes from outside Python and tfrecordkit (a filesystem's client:
    botocore, aiohttp, google-auth, ...) or is an ``OSError``: what a store's failure is."""
    root = type(err).__module__.split(".", 1)[0]
    return isinstance(err, OSError) or root not in ("builtins", "tfrecordkit")


def _remote_error(err: BaseException, url: str) -> OSError | None:
    """What a filesystem's exception means, as the built-in error naming ``url``, with
    the cause in one line: refused or missing credentials (401/403) ``PermissionError``,
    an unreachable endpoint ``ConnectionError``, a timeout after the filesystem's retries
    ``TimeoutError``, a missing object or bucket (404) ``FileNotFoundError``, a store too
    busy to answer (503, SlowDown) ``OSError(EBUSY)``, anything else from the filesystem
    ``OSError(EIO)``; None for an exception that is not the filesystem's (a ``TypeError``
    from a bad option, say). Filesystems differ in how they report these (fsspec's HTTP
    filesystem reports every failure as missing, with the cause attached; s3fs turns some
    into ``OSError``s), so the whole chain of causes is read, and what it says most
    precisely wins over "missing"."""
    if isinstance(err, NotImplementedError):
        # What the filesystem has no way to do (fsspec's HTTP filesystem writes nothing).
        scheme = url.split("://", 1)[0]
        return OSError(
            errno.EOPNOTSUPP, f"the {scheme}:// filesystem cannot do this ({_cause(err)})", url
        )
    if not _from_a_dependency(err):
        return None
    if isinstance(err, OSError) and err.filename == url and err.errno:
        return None  # typed already
    chain: list[BaseException] = []
    seen: BaseException | None = err
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    missing = None
    for e in chain:
        if isinstance(e, TypeError) and "unexpected keyword argument" in str(e):
            # A storage option the filesystem's client does not take: not a missing object.
            return OSError(
                errno.EINVAL, f"a storage option is not one its filesystem takes ({_cause(e)})", url
            )
        name, status, code = type(e).__name__, _status(e), _code(e)
        if name in _CREDENTIALS:
            return PermissionError(errno.EACCES, f"no usable credentials ({_cause(e)})", url)
        if isinstance(e, PermissionError) or status in (401, 403) or code in _REFUSED:
            return PermissionError(errno.EACCES, f"access refused ({_cause(e)})", url)
        if isinstance(e, TimeoutError) or "Timeout" in name:
            return TimeoutError(errno.ETIMEDOUT, f"timed out ({_cause(e)})", url)
        if isinstance(e, ConnectionError) or "Connect" in name or "Disconnected" in name:
            return ConnectionError(errno.ECONNREFUSED, f"cannot connect ({_cause(e)})", url)
        if status in (405, 501):
            return OSError(errno.EOPNOTSUPP, f"the server does not allow this ({_cause(e)})", url)
        busy = getattr(e, "errno", None) == errno.EBUSY
        if busy or status in (429, 500, 502, 503, 504) or code in _BUSY:
            return OSError(errno.EBUSY, f"the store is unavailable ({_cause(e)})", url)
        if missing is None and (
            isinstance(e, FileNotFoundError) or status == 404 or code in _MISSING
        ):
            what = "no such bucket" if code == "NoSuchBucket" else "no such object"
            missing = FileNotFoundError(errno.ENOENT, what, url)
    if missing is not None:
        return missing
    return OSError(errno.EIO, _cause(err), url)


@contextlib.contextmanager
def remote_errors(url: str) -> Iterator[None]:
    """Raises what a filesystem raises for ``url`` as the typed built-in errors of
    :func:`_remote_error`, each naming ``url``."""
    try:
        yield
    except Exception as err:
        typed = _remote_error(err, url)
        if typed is None:
            raise
        raise typed from err


class _RemoteFile:
    """A remote file whose reads fail with the typed errors of :func:`remote_errors`."""

    def __init__(self, file: Any, url: str) -> None:
        self._file, self._url = file, url
        self.size = getattr(file, "size", None)

    def read(self, n: int = -1) -> bytes:
        with remote_errors(self._url):
            return self._file.read(n)

    def seek(self, offset: int) -> int:
        with remote_errors(self._url):
            return int(self._file.seek(offset))

    def close(self) -> None:
        self._file.close()


class _RemoteText:
    """A remote text file whose reads fail with the typed errors of
    :func:`remote_errors`."""

    def __init__(self, file: Any, url: str) -> None:
        self._file, self._url = file, url

    def __iter__(self) -> _RemoteText:
        return self

    def __next__(self) -> str:
        with remote_errors(self._url):
            return next(self._file)

    def read(self, n: int = -1) -> str:
        with remote_errors(self._url):
            return str(self._file.read(n))

    def readline(self) -> str:
        with remote_errors(self._url):
            return str(self._file.readline())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> _RemoteText:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@dataclass(frozen=True, eq=False)
class URLOpener:
    """Opens URLs for the native readers: a file object read in :data:`REMOTE_BLOCK`
    requests with no cache of its own (the core reads ahead). Picklable, so that
    pipelines carry it into worker processes."""

    storage_options: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, url: str) -> Any:
        fs, path = filesystem(url, storage_options=self.storage_options)
        with remote_errors(url):
            file = fs.open(path, "rb", block_size=REMOTE_BLOCK, cache_type="none")
        return _RemoteFile(file, url)


def opener_for(files: Sequence[str], storage_options: StorageOptions) -> URLOpener | None:
    """The opener the native readers need for ``files``: none when all are local."""
    if any(is_url(f) for f in files):
        return URLOpener(dict(storage_options or {}))
    return None


def exists(path: str, storage_options: StorageOptions = None) -> bool:
    """Whether a local path or a URL names an existing file. An object that cannot be
    looked at (no credentials, an unreachable store) raises, as :func:`remote_errors`
    says, rather than passing for missing."""
    if is_url(path):
        fs, inner = filesystem(path, storage_options=storage_options)
        try:
            with remote_errors(path):
                return fs.info(inner).get("type") == "file"
        except FileNotFoundError:
            return False
    return os.path.isfile(path.removeprefix("file://"))


def file_size(path: str, storage_options: StorageOptions = None) -> int:
    """The size in bytes of a local file or the object at a URL."""
    if is_url(path):
        fs, inner = filesystem(path, storage_options=storage_options)
        with remote_errors(path):
            return int(fs.size(inner))
    return os.path.getsize(path.removeprefix("file://"))


def read_bytes(uri: str, storage_options: StorageOptions = None) -> bytes:
    """The whole content of a local path (``file://`` allowed) or an fsspec URL."""
    if is_url(uri):
        fs, path = filesystem(uri, storage_options=storage_options)
        with remote_errors(uri):
            return bytes(fs.cat_file(path))
    with open(uri.removeprefix("file://"), "rb") as f:
        return f.read()


def read_ranges(
    url: str, starts: Sequence[int], ends: Sequence[int], storage_options: StorageOptions = None
) -> list[bytes]:
    """The byte ranges ``[start, end)`` of the object at ``url``, fetched together
    (``cat_ranges``: concurrent ranged requests on object stores)."""
    fs, path = filesystem(url, storage_options=storage_options)
    with remote_errors(url):
        if len(starts) == 1:
            return [bytes(fs.cat_file(path, start=int(starts[0]), end=int(ends[0])))]
        got = fs.cat_ranges([path] * len(starts), list(starts), list(ends))
        for part in got:
            if isinstance(part, BaseException):
                raise part
    return [bytes(b) for b in got]


def write_file(
    path: str, data: str | bytes, storage_options: StorageOptions = None, *, replace: bool = True
) -> None:
    """Writes a small file whole: locally through :func:`atomic_write`; to a URL in one
    put, so that no partial object appears. ``replace`` as for :func:`upload`."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if not is_url(path):
        with atomic_write(path, "wb", replace=replace) as f:
            f.write(raw)
        return
    fs, inner = filesystem(path, "writing to", storage_options)
    with remote_errors(path):
        _put(path, lambda **mode: fs.pipe_file(inner, raw, **mode), replace)


def open_text(path: str, storage_options: StorageOptions = None) -> IO[str]:
    """A text file (UTF-8, universal newlines off, as ``csv`` wants) at a path or URL."""
    if not is_url(path):
        return open(path.removeprefix("file://"), newline="", encoding="utf-8")
    fs, inner = filesystem(path, storage_options=storage_options)
    with remote_errors(path):
        return _RemoteText(fs.open(inner, "rt", newline="", encoding="utf-8"), path)


def upload(
    local: str, url: str, *, replace: bool = True, storage_options: StorageOptions = None
) -> None:
    """Copies a local file to ``url``. Without ``replace``, an existing object is never
    replaced: an exclusive create where the store has one (S3's conditional put, a local
    or in-memory filesystem), a check just before the write elsewhere; ``FileExistsError``
    either way."""
    fs, path = filesystem(url, "writing to", storage_options)
    with remote_errors(url):
        _put(url, lambda **mode: fs.put_file(local, path, **mode), replace)


def _put(url: str, put: Any, replace: bool) -> None:
    """Calls ``put`` plainly, or, without ``replace``, with fsspec's exclusive
    ``mode="create"``."""
    if replace:
        put()
        return
    try:
        put(mode="create")
    except FileExistsError:
        raise FileExistsError(17, "an object is there already", url) from None


def temp_name(path: str) -> str:
    """A hidden name beside ``path`` for a file written before it takes ``path``."""
    directory, base = os.path.split(path)
    return os.path.join(directory, f".{base}.tmp-{os.getpid()}")


def remove(path: str | None, storage_options: StorageOptions = None) -> None:
    """Removes the file at ``path`` (a local path or a URL) if there is one."""
    if not path:
        return
    with contextlib.suppress(FileNotFoundError):
        if is_url(path):
            fs, inner = filesystem(path, "removing", storage_options)
            with remote_errors(path):
                fs.rm_file(inner)
        else:
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
    check_replaceable(path)
    temp = temp_name(path)
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
    try:
        with open(temp, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if replace:
            check_replaceable(path)
            os.replace(temp, path)
        else:
            _no_replace(temp, path)
    except OSError as err:
        # The temporary may never have been made (its directory is a file, say).
        with contextlib.suppress(OSError):
            remove(temp)
        if err.filename in (None, temp) and err.errno is not None:
            # A failed write (a full disk...) names the file it was for.
            raise OSError(err.errno, err.strerror or str(err), path) from err
        raise
    except BaseException:
        remove(temp)
        raise


def check_replaceable(path: str) -> None:
    """Refuses a final name held by something other than a regular file or a symbolic
    link (a device, a pipe, a directory): a finished file renamed over it would destroy it
    rather than write to it."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return
    what = {
        stat.S_IFDIR: "a directory",
        stat.S_IFCHR: "a character device",
        stat.S_IFBLK: "a block device",
        stat.S_IFIFO: "a named pipe",
        stat.S_IFSOCK: "a socket",
    }.get(stat.S_IFMT(mode), "a special file")
    raise FileExistsError(17, f"{what} is there, not a regular file, and is never replaced", path)


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
