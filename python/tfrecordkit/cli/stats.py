"""``tfrecordkit stats``: what is in a set of TFRecord files."""

from __future__ import annotations

from typing import Any

import click

from ..errors import TFRecordError
from ..io.paths import exists, is_url
from ..statistics import stats as compute
from .common import COMPRESSION, fail, input_compression, pipes_opened, storage_options


def _finite(value: float, name: str) -> float:
    """A float option's value, refused when NaN or infinite (FloatRange lets NaN by)."""
    import math

    if not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number", param_hint=f"'{name}'")
    return value


def _check_report_path(html: str, inputs: list[str]) -> None:
    """Refuses an HTML report path, of a file that exists, that names one of the inputs
    (or matches a glob of them): the report would replace the data it describes."""
    import fnmatch
    import os

    def local(path: str) -> str:
        return path if is_url(path) else os.path.abspath(os.path.expanduser(path))

    if any(fnmatch.fnmatchcase(local(html), local(p)) for p in inputs):
        raise click.BadParameter(
            f"{html} is one of the files read; the report would replace it",
            param_hint="'--html'",
        )


def _split_option(_: Any, __: Any, values: tuple[str, ...]) -> dict[str, list[str]] | None:
    splits: dict[str, list[str]] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"expected SPLIT=PATH, not {value!r}")
        splits.setdefault(name, []).append(path)
    return splits or None


@click.command()
@click.argument("paths", nargs=-1, callback=pipes_opened)
@click.option(
    "--split",
    "splits",
    multiple=True,
    metavar="SPLIT=PATH",
    callback=_split_option,
    help="Files of a split (a path, glob or URL); repeatable, instead of PATHS. Without it, "
    "splits come from file names: train-00000-of-00004.tfrecord is in 'train'.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@click.option("--html", "html", metavar="FILE", help="Also write an HTML report to FILE.")
@click.option("--overwrite", is_flag=True, help="Replace the --html file if it exists.")
@click.option(
    "--baseline", metavar="SPLIT", help="The split others are compared with [default: train]."
)
@click.option(
    "--shift-threshold",
    default=0.1,
    show_default=True,
    type=click.FloatRange(0, min_open=True),
    callback=lambda _, __, v: _finite(v, "--shift-threshold"),
    help="Distance between splits past which a distribution counts as shifted.",
)
@click.option("--top", default=10, show_default=True, type=click.IntRange(0), help="Top values.")
@COMPRESSION
def stats(
    paths: tuple[str, ...],
    splits: dict[str, list[str]] | None,
    as_json: bool,
    html: str | None,
    overwrite: bool,
    baseline: str | None,
    shift_threshold: float,
    top: int,
    compression: str,
) -> None:
    """Statistics of the Examples in PATHS: per feature and per split, with the differences
    between splits (anomalies). Prints a summary, or JSON with --json."""
    if bool(paths) == bool(splits):
        raise click.UsageError("give PATHS or --split SPLIT=PATH, not both or neither")
    if html and exists(html, storage_options()):
        # A report replaces only a file that is there: one among the inputs never.
        _check_report_path(html, [*paths, *(p for ps in (splits or {}).values() for p in ps)])
        if not overwrite:
            fail(FileExistsError(17, "a file is there already; pass --overwrite", html))
    try:
        report = compute(
            list(paths) if paths else None,
            splits=splits,
            compression=input_compression(compression),
            storage_options=storage_options(),
            baseline=baseline,
            shift_threshold=shift_threshold,
            top=top,
            progress=True,
        )
        if html:
            report.to_html(html, storage_options(), overwrite=overwrite)
    except (OSError, ValueError, TFRecordError) as err:
        fail(err)
    if as_json:
        click.echo(report.to_json())
        return
    click.echo(report.summary())
    if html:
        click.echo(f"HTML report: {html}")
