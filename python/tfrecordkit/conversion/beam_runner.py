"""``tfr.convert`` on an Apache Beam runner: the same Examples as the local runner, made in
``DoFn``s; the label vocabulary is a combine over TRAIN; each split's shards are written
by :class:`tfrecordkit.integrations.beam.WriteExamples` and committed as one dataset
(:class:`~tfrecordkit.datasets.commit.DatasetCommit`), or not at all."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from ..datasets.manifest import Manifest, existing_files
from ..integrations.beam import WriteExamples
from ..io.paths import is_url, join
from ..schema.example import encode_example
from .rows import (
    SPLITS,
    ConversionSummary,
    Job,
    check_row,
    discard_entry,
    features_of,
    label_kind,
    load_image,
    write_side_files,
)

DISCARDED = "discarded"


class _Check(beam.DoFn):
    def __init__(self, by_role: dict[str, str], columns: list[str]) -> None:
        self.by_role = by_role
        self.columns = columns

    def process(self, item: tuple[int, dict[str, Any]]) -> Any:
        i, row = item
        split, problem = check_row(row, self.by_role)
        if problem:
            yield beam.pvalue.TaggedOutput(DISCARDED, discard_entry(i, row, problem, self.columns))
        else:
            yield i, row, split


class _Convert(beam.DoFn):
    def __init__(self, roles, by_role, columns, image_size, image_format, options) -> None:
        self.roles, self.by_role, self.columns = roles, by_role, columns
        self.image_size, self.image_format = image_size, image_format
        self.options = options

    def process(self, item: tuple[int, dict[str, Any], str], vocab: list[str] | None = None) -> Any:
        i, row, split = item
        label_ids = None if vocab is None else {v: k for k, v in enumerate(vocab)}
        if label_ids is not None and str(row[self.by_role["label"]]) not in label_ids:
            reason = f"label {row[self.by_role['label']]!r} does not occur in TRAIN"
            yield beam.pvalue.TaggedOutput(DISCARDED, discard_entry(i, row, reason, self.columns))
            return
        uri = str(row[self.by_role["image_uri"]])
        try:
            image = load_image(uri, self.image_size, self.image_format, self.options)
        except (OSError, ValueError) as err:
            entry = discard_entry(i, row, f"image {uri!r}: {err}", self.columns)
            yield beam.pvalue.TaggedOutput(DISCARDED, entry)
            return
        try:
            example = encode_example(features_of(row, self.roles, image, label_ids))
        except ValueError as err:
            yield beam.pvalue.TaggedOutput(DISCARDED, discard_entry(i, row, str(err), self.columns))
            return
        yield split, example


def _csv_line(entry: dict[str, Any], columns: list[str]) -> str:
    out = io.StringIO()
    csv.DictWriter(out, fieldnames=["row", "reason", *columns]).writerow(entry)
    return out.getvalue().rstrip("\r\n")


def _one_text_file(prefix: str, suffix: str, header: str | None = None) -> Any:
    """Beam's WriteToText of one file, ``prefix + suffix``, with no shard numbers."""
    return beam.io.WriteToText(
        prefix, file_name_suffix=suffix, shard_name_template="", num_shards=1, header=header
    )


def _table_rows(_: object, rows: Callable[[], Iterator[dict[str, Any]]]) -> Iterator[Any]:
    """The table's rows, numbered, streamed from the table itself on a worker."""
    yield from enumerate(rows())


def _pipeline_options(runner: str, pipeline_options: dict[str, Any]) -> PipelineOptions:
    """The options as Beam parses them, as command-line flags so that it checks each
    option's type; a ``ValueError`` saying which is wrong, where Beam's parser would print
    its usage and exit."""
    flags = [f"--runner={runner}"]
    for key, value in pipeline_options.items():
        if value is True:
            flags.append(f"--{key}")
        elif value is not False and value is not None:
            flags.append(f"--{key}={value}")
    options = PipelineOptions(flags)
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            options.get_all_options()
    except SystemExit:
        lines = [line for line in said.getvalue().splitlines() if line.strip()]
        why = lines[-1].split("error: ", 1)[-1] if lines else "not valid"
        raise ValueError(f"pipeline options: {why}") from None
    # Beam itself drops an option it does not know, a misspelt one included.
    known = options.get_all_options(retain_unknown_options=False)
    unknown = sorted(set(options.get_all_options(retain_unknown_options=True)) - set(known))
    if unknown:
        raise ValueError(f"pipeline options: Beam has no option {', '.join(unknown)}")
    # An unknown runner is refused now, before anything is written for the job.
    from apache_beam.runners.runner import create_runner

    create_runner(runner)
    return options


def convert_with_beam(job: Job, runner: str, pipeline_options: dict[str, Any]) -> ConversionSummary:
    columns, roles, by_role = job.columns, job.roles, job.by_role
    output_dir, compression = job.output_dir, job.compression
    local = not is_url(output_dir)
    options = _pipeline_options(runner, pipeline_options)
    if local:
        os.makedirs(output_dir, exist_ok=True)
        prefixes = [join(output_dir, s.lower()) for s in SPLITS]
        existing = [p for prefix in prefixes for p in existing_files(prefix)]
        if existing and not job.overwrite:
            raise FileExistsError(
                17, "converted splits already exist; pass overwrite=True", existing[0]
            )
        # The splits there stay until each new one is committed in their place.
    label_col = by_role.get("label")
    strings = label_col is not None and label_kind(r.get(label_col) for r in job.rows()) == "string"
    header = ",".join(["row", "reason", *columns])
    with beam.Pipeline(options=options) as p:
        checked = (
            p
            # No list of rows on the launcher: a worker streams the table (a path or URL is
            # read there), and the rows are spread over workers for their images.
            | "Table" >> beam.Create([None])
            | "Rows" >> beam.FlatMap(_table_rows, job.rows)
            | "Spread" >> beam.Reshuffle()
            | "Check" >> beam.ParDo(_Check(by_role, columns)).with_outputs(DISCARDED, main="kept")
        )
        convert_fn = _Convert(
            roles, by_role, columns, job.image_size, job.image_format, job.storage_options
        )
        if strings:
            vocab = (
                checked.kept
                | "Train" >> beam.Filter(lambda t: t[2] == "TRAIN")
                | "Labels" >> beam.Map(lambda t: str(t[1][label_col]))
                | "Distinct" >> beam.Distinct()
                | "Vocabulary" >> beam.combiners.ToList()
                | "Sorted" >> beam.Map(sorted)
            )
            converted = checked.kept | "Convert" >> beam.ParDo(
                convert_fn, vocab=beam.pvalue.AsSingleton(vocab)
            ).with_outputs(DISCARDED, main="examples")
            _ = (
                vocab
                | "VocabLines" >> beam.FlatMap(lambda v: v)
                | "WriteVocab" >> _one_text_file(f"{output_dir}/labels", ".txt")
            )
        else:
            converted = checked.kept | "Convert" >> beam.ParDo(convert_fn).with_outputs(
                DISCARDED, main="examples"
            )
        for split in SPLITS:
            _ = (
                converted.examples
                | f"Only{split}" >> beam.Filter(lambda kv, s=split: kv[0] == s)
                | f"Records{split}" >> beam.Map(lambda kv: kv[1])
                | f"Write{split}"
                >> WriteExamples(
                    f"{output_dir}/{split.lower()}",
                    num_shards=job.num_shards or 0,
                    compression=compression,
                    overwrite=job.overwrite,
                )
            )
        _ = (
            (checked[DISCARDED], converted[DISCARDED])
            | "AllDiscarded" >> beam.Flatten()
            | "CsvLines" >> beam.Map(_csv_line, columns)
            | "WriteDiscarded" >> _one_text_file(f"{output_dir}/discarded", ".csv", header)
        )
    summary = ConversionSummary(output_dir)
    schema = _finish_locally(output_dir, compression, summary) if local else None
    summary.seconds = time.monotonic() - job.started
    if local:
        write_side_files(output_dir, summary, schema)
    return summary


def _finish_locally(output_dir: str, compression: str | None, summary: ConversionSummary) -> Any:
    """What the local runner also does: splits that received no rows are removed (each
    split's dataset was committed, with its manifest, by ``WriteExamples``). Returns the
    schema of what was written."""
    schema = None
    for split in SPLITS:
        manifest = Manifest.load(os.path.join(output_dir, split.lower()))
        if not manifest.records:
            for f in existing_files(os.path.join(output_dir, split.lower())):
                os.remove(f)
            continue
        schema = manifest.schema
        summary.rows[split] = manifest.records
        summary.bytes += manifest.bytes
    labels = os.path.join(output_dir, "labels.txt")
    if os.path.exists(labels):
        with open(labels, encoding="utf-8") as f:
            summary.labels = f.read().splitlines()
    with open(os.path.join(output_dir, "discarded.csv"), encoding="utf-8", newline="") as f:
        summary.discarded = max(0, sum(1 for _ in csv.reader(f)) - 1)
    return schema
