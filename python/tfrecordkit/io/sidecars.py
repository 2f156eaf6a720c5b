"""Reading the small files beside the data (manifests, TFDS's JSON, labels, index
sidecars), which come with the dataset and are data: never a device or a pipe, never
larger than a sidecar may be, never read through a link out of the dataset."""

from __future__ import annotations

import os
import stat

from ..errors import SidecarError, UnsafePathError
from .paths import StorageOptions, filesystem, is_url, remote_errors

__all__ = ["SIDECAR_BYTES", "read_sidecar"]

#: The most bytes a metadata sidecar (a manifest, TFDS's JSON, a labels file) may hold.
SIDECAR_BYTES = 64 << 20


def read_sidecar(
    uri: str,
    storage_options: StorageOptions = None,
    *,
    limit: int | None = SIDECAR_BYTES,
    within: str | None = None,
) -> bytes:
    """The content of a sidecar: a regular file (never a device or a pipe) of at most
    ``limit`` bytes, else a :class:`SidecarError` naming it. ``within``: a local directory
    the file must lie in once links are followed (a link out of it is an
    :class:`UnsafePathError`)."""
    if is_url(uri):
        fs, path = filesystem(uri, storage_options=storage_options)
        with remote_errors(uri):
            data = bytes(fs.cat_file(path, start=0, end=None if limit is None else limit + 1))
        return _within_limit(data, uri, limit)
    path = uri.removeprefix("file://")
    if within is not None:
        real, home = os.path.realpath(path), os.path.realpath(within)
        if os.path.commonpath([real, home]) != home:
            raise UnsafePathError(
                f"a link out of the dataset's directory, to {real!r}; nothing was read",
                path=uri,
            )
    with open(path, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise SidecarError("not a regular file; nothing was read", path=uri)
        data = f.read() if limit is None else f.read(limit + 1)
    return _within_limit(data, uri, limit)


def _within_limit(data: bytes, uri: str, limit: int | None) -> bytes:
    if limit is not None and len(data) > limit:
        raise SidecarError(f"larger than the {limit:,} bytes a sidecar may hold", path=uri)
    return data
