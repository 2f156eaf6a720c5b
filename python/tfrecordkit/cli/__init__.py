"""The ``tfrecordkit`` command line.

Human-readable output by default, ``--json`` for machines. Exit codes: 0 success,
1 damage found or failure, 2 usage error. Every path may be an fsspec URL; credentials and
endpoints come from ``--storage-option KEY=VALUE`` or fsspec's own configuration.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import logging
import math
import os
import signal
import sys
import threading
import warnings
from typing import Any, NoReturn

import click
import numpy as np

from ..datasets.index import count as count_records
from ..datasets.manifest import MAX_SHARDS
from ..datasets.verify import verify as verify_files
from ..errors import ExampleDecodeError, TFRecordError
from ..io.records import read_records
from ..io.reports import FileReport
from ..schema.example import decode_sequence_example, foreign
from .common import COMPRESSION, pipes_opened
from .common import fail as _fail
from .common import input_compression as _c
from .common import message as _message
from .common import storage_options as _so
from .common import verify_total as _verify_total
from .common import written as _written
from .sheet import inspect as _inspect
from .stats import stats as _stats


def _finite(x: Any) -> Any:
    """``x`` with every non-finite float written as the string JSON has no number for:
    ``"NaN"``, ``"Infinity"``, ``"-Infinity"``."""
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def _dumps(x: Any, **kwargs: Any) -> str:
    """Valid JSON (``jq`` and ``JSON.parse`` read it): non-finite floats as strings."""
    return json.dumps(_finite(x), allow_nan=False, **kwargs)


def _json_value(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    out = []
    for b in v:
        try:
            out.append(b.decode("utf-8"))
        except UnicodeDecodeError:
            out.append({"base64": base64.b64encode(b).decode()})
    return out


def _human_value(v: Any, limit: int = 8) -> str:
    if isinstance(v, np.ndarray):
        kind = "int64" if v.dtype == np.int64 else "float"
        items = v[:limit].tolist()
    else:
        kind = "bytes"
        items = [b if len(b) <= 60 else b[:60] + b"..." for b in v[:limit]]
    more = f" ... ({len(v)} values)" if len(v) > limit else ""
    return f"{kind} {items}{more}"


def _pairs(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE")
        out[key] = raw
    return out


def _storage_option(_: Any, __: Any, values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, raw in _pairs(values).items():
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


def _image_size(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    h, sep, w = value.lower().partition("x")
    try:
        size = (int(h), int(w if sep else h))
    except ValueError:
        size = (0, 0)
    if min(size) <= 0:
        raise click.BadParameter(f"{value!r} is not HxW (224x224) or N (for NxN)")
    from ..conversion.rows import check_image_size

    try:
        return check_image_size(size)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


def _size(value: str) -> int:
    from ..datasets.writer import parse_size

    try:
        return parse_size(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


def _json_object(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except ValueError as err:
        raise click.BadParameter(f"not JSON: {err}") from None
    if not isinstance(parsed, dict):
        raise click.BadParameter("must be a JSON object of column roles")
    return parsed


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tfrecordkit")
@click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_storage_option,
    help="An option for the filesystem of URL paths (endpoint_url=..., anon=true, a JSON "
    "value or a string); repeatable.",
)
@click.pass_context
def main(ctx: click.Context, storage_options: dict[str, Any]) -> None:
    """Read, write, inspect and check TFRecord files without TensorFlow.

    Paths may be URLs (s3://, gs://, az://, http(s)://...) as well as local files.
    """
    ctx.obj = storage_options or None
    # Warnings (sidecars left out, damage skipped) are notes on stderr, one line each.
    warnings.showwarning = _note


def _note(message: Warning | str, *_: Any, **__: Any) -> None:
    click.echo(f"note: {message}", err=True)


@main.command()
@click.argument("file", callback=pipes_opened)
@click.option(
    "-n",
    "num",
    default=5,
    show_default=True,
    type=click.IntRange(0, sys.maxsize),
    help="Records to show.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON object per Example; NaN and infinite floats are written as the strings "
    '"NaN", "Infinity" and "-Infinity", bytes that are not UTF-8 as {"base64": ...}.',
)
@COMPRESSION
def head(file: str, num: int, as_json: bool, compression: str) -> None:
    """Show the first Examples of FILE."""
    try:
        records = read_records(file, compression=_c(compression), storage_options=_so())
        # Records past the ones shown are never read: damage there is not this command's.
        for i, record in enumerate(itertools.islice(records, num)):
            try:
                example, lists = decode_sequence_example(record)
                why = None if example or lists else foreign(record)
                if why is not None:
                    raise ExampleDecodeError(why)
            except ExampleDecodeError as err:
                if as_json:
                    click.echo(_dumps({"record": i, "error": str(err), "bytes": len(record)}))
                else:
                    click.echo(f"record {i}: {len(record)} bytes, not an Example ({err.message})")
                continue
            if as_json:
                out = {k: _json_value(v) for k, v in example.items()}
                if lists:
                    out = {
                        "context": out,
                        "feature_lists": {
                            k: [_json_value(step) for step in steps] for k, steps in lists.items()
                        },
                    }
                click.echo(_dumps(out))
            else:
                kind = "SequenceExample, " if lists else ""
                click.echo(f"record {i} ({kind}{len(record)} bytes)")
                for key, value in example.items():
                    click.echo(f"  {key}: {_human_value(value)}")
                for key, steps in lists.items():
                    shown = ", ".join(_human_value(step, 4) for step in steps[:3])
                    more = f", ... ({len(steps)} steps)" if len(steps) > 3 else ""
                    click.echo(f"  {key} (feature list): [{shown}{more}]")
    except (OSError, TFRecordError, ValueError) as err:
        _fail(err)


@main.command()
@click.argument("paths", nargs=-1, required=True, callback=pipes_opened)
@click.option("--json", "as_json", is_flag=True, help="Print counts as JSON.")
@COMPRESSION
def count(paths: tuple[str, ...], as_json: bool, compression: str) -> None:
    """Count the records in PATHS (files or glob patterns), checking their lengths'
    checksums; `verify` checks their data too."""
    from ..io.paths import expand_paths

    try:
        files = expand_paths(list(paths), storage_options=_so())
        counts = {
            f: count_records(f, compression=_c(compression), storage_options=_so()) for f in files
        }
    except (OSError, TFRecordError, ValueError) as err:
        _fail(err)
    total = sum(counts.values())
    if as_json:
        click.echo(_dumps({"files": counts, "total": total}))
        return
    if len(counts) > 1:
        for f, n in counts.items():
            click.echo(f"{n:>12,}  {f}")
    click.echo(f"{total:>12,}  total" if len(counts) > 1 else f"{total}")


@main.command()
@click.argument("paths", nargs=-1, required=True, callback=pipes_opened)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON report per file.")
@COMPRESSION
def verify(paths: tuple[str, ...], as_json: bool, compression: str) -> None:
    """Check every checksum in PATHS; exit 1 if anything is damaged or cannot be read."""
    from ..io.paths import expand_paths

    try:
        files = expand_paths(list(paths), storage_options=_so())
    except (OSError, ValueError) as err:
        _fail(err)
    reports: list[Any] = []
    unreadable: dict[str, OSError] = {}
    for f in files:
        try:
            reports += verify_files([f], compression=_c(compression), storage_options=_so())
        except OSError as err:  # this file cannot be read: the others still are
            reports.append(FileReport(f, failure=_message(err)))
            unreadable[f] = err
    if len(unreadable) == len(files):  # none could be read (credentials, say): one line
        _fail(next(iter(unreadable.values())))
    for r in reports:
        if as_json:
            click.echo(_dumps(r.to_dict()))
            continue
        if r.path in unreadable:
            click.echo(f"{'ERROR':8} {r.path}: {r.failure}")
            continue
        if r.foreign:
            click.echo(f"{'INVALID':8} {r.path}: {r.damage[0].message}")
            continue
        status = "ok" if r.ok else "DAMAGED"
        click.echo(f"{status:8} {r.path}: {r.records:,} good records")
        for d in r.damage:
            click.echo(
                f"         record {d.record_index} at offset {d.offset}: {d.error}: "
                f"{_message(d.message)}"
            )
        if r.lost_bytes:
            click.echo(f"         {r.lost_bytes:,} bytes lost in all")
        if r.failure:
            click.echo(f"         {r.failure}")
    if not as_json:
        click.echo(_verify_total(reports, unreadable))
    if not all(r.ok for r in reports):
        sys.exit(1)


@main.command()
@click.argument("paths", nargs=-1, required=True, callback=pipes_opened)
@click.option(
    "--sample",
    default=1000,
    show_default=True,
    type=click.IntRange(1, 2**63 - 1),
    help="Examples to look at.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the schema as JSON.")
@COMPRESSION
def schema(paths: tuple[str, ...], sample: int, as_json: bool, compression: str) -> None:
    """Guess the schema of the Examples in PATHS from a sample of them."""
    from ..schema.reading import infer_schema

    try:
        guessed = infer_schema(
            list(paths), sample, compression=_c(compression), storage_options=_so()
        )
    except (OSError, TFRecordError, ValueError) as err:
        _fail(err)
    lists = guessed.sequence
    if as_json:
        if lists is None:
            click.echo(guessed.to_json(indent=1))
        else:
            both = {"context": guessed.to_dict(), "feature_lists": lists.to_dict()}
            click.echo(_dumps(both, indent=1))
        return
    rows = [(key, spec, "") for key, spec in guessed.items()]
    rows += [(key, spec, "(feature list)") for key, spec in (lists or {}).items()]
    if not rows:
        click.echo(
            "note: no features to show: no record read holds a feature with values", err=True
        )
    for key, spec, note in rows:
        shape = getattr(spec, "shape", None)
        dims = "" if shape is None else str(list(shape))
        line = f"{key:<24} {type(spec).__name__:<16} {spec.dtype:<8} {dims} {note}"
        click.echo(line.rstrip())


@main.command()
@click.argument("paths", nargs=-1, required=True, callback=pipes_opened)
def index(paths: tuple[str, ...]) -> None:
    """Write a FILE.idx sidecar (offset length per record) for each uncompressed file."""
    from ..datasets.index import build_index
    from ..io.paths import expand_paths

    failed = False
    try:
        files = expand_paths(list(paths), storage_options=_so())
    except (OSError, ValueError) as err:
        _fail(err)
    for f in files:
        try:
            target = build_index(f, storage_options=_so())
        except (OSError, TFRecordError, ValueError) as err:
            message = _message(err)
            click.echo(f"error: {message if f in message else f'{f}: {message}'}", err=True)
            failed = True
            continue
        click.echo(f"indexed {f} -> {target}")
    if failed:
        sys.exit(1)


@main.command()
@click.argument("src", callback=pipes_opened)
@click.option("-o", "--output", required=True, help="Where to write the repaired file.")
@click.option("--overwrite", is_flag=True, help="Replace the -o file if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@COMPRESSION
def repair(src: str, output: str, overwrite: bool, as_json: bool, compression: str) -> None:
    """Salvage every intact record of SRC into a new, valid file (-o/--output).

    Skips damaged records, resynchronizes past damaged headers, drops a torn tail, and
    reports what was lost. Exits 0 when SRC was intact, 1 when something was lost.
    """
    from ..datasets.verify import _same
    from ..datasets.verify import repair as repair_file

    if _same(src, output):
        raise click.BadParameter(
            "must differ from SRC: repair writes a new file and leaves SRC as it is",
            param_hint="'-o' / '--output'",
        )
    try:
        report = repair_file(
            src,
            output,
            compression=_c(compression),
            overwrite=overwrite,
            storage_options=_so(),
        )
    except (OSError, TFRecordError, ValueError) as err:
        _fail(err)
    if as_json:
        click.echo(_dumps(report.to_dict() | {"output": output}))
    else:
        click.echo(f"kept {report.records:,} records in {output}")
        for d in report.damage:
            where = f"bytes {d.lost[0]}-{d.lost[1]}" if d.lost else f"offset {d.offset}"
            click.echo(
                f"lost    record {d.record_index}, {where}: {d.error}: {_message(d.message)}"
            )
        if report.failure:
            click.echo(f"stopped {report.failure}")
    if not report.ok:
        sys.exit(1)


@main.command()
@click.argument("source")
@click.argument("output_dir")
@click.option(
    "--runner",
    default="local",
    show_default=True,
    help="'local', or an Apache Beam runner: DirectRunner, DataflowRunner, FlinkRunner...",
)
@click.option(
    "--option",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    callback=lambda _, __, v: _pairs(v),
    help="A Beam pipeline option (project=..., region=..., temp_location=...); repeatable.",
)
@click.option(
    "--roles",
    "--schema",
    "schema_json",
    callback=lambda _, __, v: _json_object(v),
    help='Column roles as JSON, e.g. \'{"split": "split", "path": "image_uri", "y": "label"}\'.',
)
@click.option("-n", "--num-shards", type=click.IntRange(1, MAX_SHARDS), help="Shards per split.")
@click.option(
    "--compression",
    "out_compression",
    type=click.Choice(["none", "gzip", "zlib"]),
    default="none",
    show_default=True,
    help="Compression of the written shards.",
)
@click.option(
    "--image-size",
    callback=lambda _, __, v: _image_size(v),
    help="Resize images to HxW (224x224), or N for NxN.",
)
@click.option("--image-format", type=click.Choice(["jpeg", "png", "webp"]), help="Re-encode.")
@click.option("--overwrite", is_flag=True, help="Replace existing splits.")
@click.option(
    "--tfds", is_flag=True, help="Also write TFDS metadata (tfds.builder_from_directory loads it)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def convert(
    source: str,
    output_dir: str,
    runner: str,
    options: dict[str, str],
    schema_json: dict[str, Any] | None,
    num_shards: int | None,
    out_compression: str,
    image_size: tuple[int, int] | None,
    image_format: str | None,
    overwrite: bool,
    tfds: bool,
    as_json: bool,
) -> None:
    """Convert SOURCE (a CSV or Parquet file, or a SPLIT/LABEL/*.jpg tree) of split,
    image_uri, label rows into TFRecord splits in OUTPUT_DIR."""
    from dataclasses import asdict

    from ..conversion import convert as run

    if runner.lower() != "local":
        _import_beam_quietly()
    try:
        summary = run(
            source,
            output_dir,
            roles=schema_json,
            runner=runner,
            pipeline_options=options,
            num_shards=num_shards,
            compression=_c(out_compression),
            image_size=image_size,
            image_format=image_format,
            overwrite=overwrite,
            # A bar on stderr when it is a terminal (tqdm stays silent otherwise).
            progress=not as_json,
            tfds=tfds,
            storage_options=_so(),
        )
    except (OSError, TFRecordError, ValueError, NotImplementedError, ImportError) as err:
        _fail(err)
    if as_json or summary.rows or summary.discarded:
        click.echo(_dumps(asdict(summary)) if as_json else str(summary))
    if summary.discarded and not summary.rows:
        from ..io.paths import join

        where = join(summary.output_dir, "discarded.csv")
        _fail(ValueError(f"no row could be converted; the reasons are in {where}"))
    if not summary.rows:
        _fail(ValueError(f"{source} holds no rows to convert"))


def _import_beam_quietly() -> None:
    """Imports Apache Beam without the notes it logs about optional Google Cloud
    libraries, and keeps its logs quiet; where Beam is missing, ``convert`` says so."""
    from ..conversion import beam_import_notes_dropped

    with beam_import_notes_dropped(), contextlib.suppress(ImportError):
        import apache_beam  # noqa: F401
    # What goes wrong in the pipeline reaches the user as one line; Beam's own logs of it
    # (tracebacks from workers) stay off the terminal.
    logging.getLogger("apache_beam").setLevel(logging.CRITICAL)


class _Sized:
    """Records of several files, with their count known up front (for contiguous shards)."""

    def __init__(self, files: list[str], compression: str | None, options: Any) -> None:
        self.files = files
        self.compression = compression
        self.options = options
        self.n = count_records(files, compression=compression, storage_options=options)

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        return read_records(self.files, compression=self.compression, storage_options=self.options)


@main.command()
@click.argument("inputs", nargs=-1, required=True, callback=pipes_opened)
@click.option("-o", "--output", required=True, help="Prefix of the new shards.")
@click.option(
    "-n", "--num-shards", type=click.IntRange(1, MAX_SHARDS), help="Number of output shards."
)
@click.option(
    "--max-shard-bytes",
    default="128MiB",
    show_default=True,
    callback=lambda _, __, v: _size(v),
    help="Size limit per shard when --num-shards is not given.",
)
@click.option(
    "--output-compression",
    type=click.Choice(["none", "gzip", "zlib"]),
    default="none",
    show_default=True,
    help="Compression of the new shards.",
)
@click.option("--overwrite", is_flag=True, help="Replace a dataset already at the prefix.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@COMPRESSION
def reshard(
    inputs: tuple[str, ...],
    output: str,
    num_shards: int | None,
    max_shard_bytes: int,
    output_compression: str,
    overwrite: bool,
    as_json: bool,
    compression: str,
) -> None:
    """Rewrite INPUTS (files or globs) as evenly sized shards OUTPUT-SSSSS-of-NNNNN.

    Merges many files into few, splits few into many, and recompresses; record order is
    kept. Writes a manifest and index sidecars; nothing appears until all shards are done.
    """
    from ..datasets.writer import write_dataset
    from ..io.paths import expand_paths

    try:
        files = expand_paths(list(inputs), storage_options=_so())
        source = (
            _Sized(files, _c(compression), _so())
            if num_shards
            else read_records(files, compression=_c(compression), storage_options=_so())
        )
        manifest = write_dataset(
            source,
            output,
            num_shards=num_shards,
            max_shard_bytes=max_shard_bytes,
            compression=_c(output_compression),
            overwrite=overwrite,
            progress=not as_json,
            storage_options=_so(),
        )
    except (OSError, TFRecordError, ValueError) as err:
        _fail(err)
    if as_json:
        click.echo(_dumps(manifest.to_dict()))
        return
    click.echo(_written(manifest))


@main.command()
@click.option(
    "--dir",
    "directory",
    default="tfrecordkit-demo",
    show_default=True,
    help="Where to write the sample dataset.",
)
@click.option(
    "-n",
    "num",
    default=10_000,
    show_default=True,
    type=click.IntRange(1, 1_000_000),
    help="Examples to write.",
)
def demo(directory: str, num: int) -> None:
    """Write, verify and parse a sample dataset; convert a generated image table, read it
    back through a pipeline and decode its images."""
    from .demo import claim, run

    try:
        claim(directory)
    except OSError as err:
        _fail(err)
    sys.exit(run(directory, num, click.echo))


# Click 8.2 and later raise this for a bare `tfrecordkit`; earlier versions print the help.
_NO_ARGS: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


class _Terminated(BaseException):
    """SIGTERM, raised where the command is, so that what it was writing is cleaned up as
    on Ctrl-C."""


def _terminate(signum: int, frame: Any) -> None:
    raise _Terminated


def run(args: list[str] | None = None) -> NoReturn:
    """The ``tfrecordkit`` command: :func:`main` with usage errors on one line (exit 2)."""
    if threading.current_thread() is not threading.main_thread():
        _run(args)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        _run(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args: list[str] | None) -> NoReturn:
    try:
        code = main.main(args=args, prog_name="tfrecordkit", standalone_mode=False)
    except _NO_ARGS as err:
        click.echo(err.ctx.get_help() if err.ctx else err.format_message())
        sys.exit(2)
    except click.UsageError as err:
        hint = f" (see '{err.ctx.command_path} --help')" if err.ctx else ""
        click.echo(f"error: {' '.join(err.format_message().split())}{hint}", err=True)
        sys.exit(2)
    except click.ClickException as err:
        click.echo(f"error: {err.format_message()}", err=True)
        sys.exit(err.exit_code)
    except click.Abort:
        click.echo("error: interrupted", err=True)
        sys.exit(130)
    except _Terminated:
        click.echo("error: terminated", err=True)
        sys.exit(143)
    except BrokenPipeError:
        # The reader of our output went away (`tfrecordkit head ... | head -1`): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except ImportError as err:
        # A package the work needs is missing: the message says which to install.
        click.echo(f"error: {_message(err)}", err=True)
        sys.exit(1)
    except Exception as err:
        # What no command expected (a dependency's own exception, or a bug): still one line.
        if os.environ.get("TFRECORDKIT_TRACEBACK"):
            raise
        click.echo(
            f"error: {type(err).__name__}: {_message(err)} "
            "(TFRECORDKIT_TRACEBACK=1 shows where it came from)",
            err=True,
        )
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


main.add_command(_stats)
main.add_command(_inspect)
