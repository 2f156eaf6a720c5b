"""``tfrecordkit inspect``: a contact sheet of a converted split's images."""

from __future__ import annotations

import click

from ..errors import TFRecordError
from ..io.paths import exists
from .common import fail, storage_options


@click.command()
@click.argument("output_dir")
@click.option(
    "--split",
    default="train",
    show_default=True,
    help="The split to draw (train, validation, test, or any split directory).",
)
@click.option(
    "-n", "num", default=16, show_default=True, type=click.IntRange(1), help="How many images."
)
@click.option("--out", help="The PNG to write [default: OUTPUT_DIR/sheet-SPLIT.png].")
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace the --out file if it exists (the default is redrawn).",
)
def inspect(output_dir: str, split: str, num: int, out: str | None, overwrite: bool) -> None:
    """Draw the first images of a converted split, with their labels, into a PNG."""
    from ..conversion import contact_sheet

    if out is not None and not out.lower().endswith(".png"):
        raise click.BadParameter(
            f"the sheet is a PNG: name it *.png, not {out}", param_hint="'--out'"
        )
    if out is not None and not overwrite and exists(out, storage_options()):
        fail(FileExistsError(17, "a file is there already; pass --overwrite", out))
    try:
        path = contact_sheet(
            output_dir,
            split,
            num,
            out,
            overwrite=overwrite or out is None,
            storage_options=storage_options(),
        )
    except (OSError, TFRecordError, ValueError) as err:
        fail(err)
    click.echo(f"wrote {path}")
