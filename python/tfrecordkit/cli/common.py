"""What the commands share: the ``--compression`` option, the ``--storage-option`` values
and errors as one line."""

from __future__ import annotations

import re
import sys
from collections.abc import Collection
from typing import Any, NoReturn

import click

COMPRESSION = click.option(
    "--compression",
    type=click.Choice(["auto", "none", "gzip", "zlib"]),
    default="auto",
    show_default=True,
    help="Compression of the input files.",
)


#: Read ends of the named pipes given as inputs, held until the command exits.
_PIPES: list[int] = []


def pipes_opened(_: Any, __: Any, value: Any) -> Any:
    """A path argument's callback: waits here, where Ctrl-C and SIGTERM are heard, for a
    writer to each named pipe among the paths, and holds a read end of it open until the
    command exits. The native reader, on whichever thread opens the pipe, then finds its
    writer there, or the bytes it left if it has already closed the pipe. The held end
    reads nothing: every byte goes to the reader."""
    import os
    import stat

    for path in value if isinstance(value, tuple) else (value,):
        try:
            is_pipe = stat.S_ISFIFO(os.stat(path).st_mode)
        except (OSError, ValueError):
            continue  # not a local path, or nothing there: the command says so
        if is_pipe:
            _PIPES.append(os.open(path, os.O_RDONLY))
    return value


def input_compression(compression: str) -> str | None:
    """The ``compression`` argument for ``--compression``'s choice."""
    return None if compression == "none" else compression


def storage_options() -> dict[str, Any] | None:
    """The ``--storage-option`` values given to the command line."""
    return click.get_current_context().find_root().obj


def message(err: BaseException | str) -> str:
    """One line for an error (or an error's text): an OS error without its errno, API
    flags as CLI flags."""
    if isinstance(err, str):
        text = err
    elif isinstance(err, OSError) and err.strerror:
        text = err.strerror if err.filename is None else f"{err.strerror}: {err.filename}"
    else:
        text = str(err)
    text = text.replace("pass overwrite=True", "pass --overwrite")
    text = re.sub(r'read it with compression="(\w+)"', r"read it with --compression \1", text)
    return " ".join(text.split())


def fail(err: BaseException) -> NoReturn:
    if isinstance(err, BrokenPipeError):
        # The reader of the output went away: the command stops quietly (see ``run``).
        raise err
    click.echo(f"error: {message(err)}", err=True)
    sys.exit(1)


def verify_total(reports: list[Any], unreadable: Collection[str]) -> str:
    """The last line of ``verify``: how many files were ok, damaged, not TFRecord files or
    unreadable, and the records and bytes in all."""
    files = f"{len(reports):,} file{'s' if len(reports) != 1 else ''}"
    kinds = {
        "ok": sum(r.ok for r in reports),
        "damaged": sum(not r.ok and not r.foreign and r.path not in unreadable for r in reports),
        "not TFRecord": sum(r.foreign for r in reports),
        "unreadable": len(unreadable),
    }
    states = ", ".join(f"{n:,} {kind}" for kind, n in kinds.items() if n)
    records = sum(r.records for r in reports)
    lost = sum(r.lost_bytes for r in reports if not r.foreign)
    tail = f", {lost:,} bytes lost" if lost else ""
    return f"total: {files} ({states}); {records:,} good records{tail}"


def written(manifest: Any) -> str:
    """What ``reshard`` says it wrote: records, shards (and how many of them are empty,
    when there are fewer records than shards), bytes and the manifest's path."""
    shards = len(manifest.shards)
    empty = sum(1 for s in manifest.shards if not s.records)
    note = f", {empty:,} of them empty, as there are fewer records than shards" if empty else ""
    return (
        f"wrote {manifest.records:,} records into {shards:,} shard{'' if shards == 1 else 's'} "
        f"({manifest.bytes:,} bytes){note}; manifest {manifest.path}"
    )
