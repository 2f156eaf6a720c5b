"""Conversion on Apache Beam's DirectRunner, and the reusable Beam transforms."""

from __future__ import annotations

import csv

import apache_beam as beam
import numpy as np
import tfrecordkit as tfr
from apache_beam.testing.util import assert_that, equal_to
from tfrecordkit.integrations.beam import ReadExamples, WriteExamples


def records(path):
    return sorted(tfr.read_records(str(path)))


def test_direct_runner_makes_the_same_examples_as_the_local_runner(table, tmp_path):
    local = tfr.convert(table.csv, tmp_path / "local", progress=False)
    beamed = tfr.convert(table.csv, tmp_path / "beam", runner="DirectRunner", progress=False)
    assert beamed.rows == local.rows == {"TRAIN": 18, "VALIDATION": 6, "TEST": 6}
    assert beamed.labels == local.labels and beamed.discarded == local.discarded == 5
    for split in ("train", "validation", "test"):
        assert records(tmp_path / "beam" / f"{split}-*") == records(
            tmp_path / "local" / f"{split}-*"
        )
    manifest = tfr.Manifest.load(tmp_path / "beam" / "train")
    assert (
        manifest.records == 18
        and manifest.schema == tfr.Manifest.load(tmp_path / "local" / "train").schema
    )
    assert tfr.count(manifest.files) == 18 and len(tfr.RecordIndex(manifest.files[0])) == 18

    def reasons(path):
        with open(path, newline="") as f:
            return sorted((d["row"], d["reason"]) for d in csv.DictReader(f))

    assert reasons(tmp_path / "beam" / "discarded.csv") == reasons(
        tmp_path / "local" / "discarded.csv"
    )


def test_write_and_read_examples_transforms(tmp_path):
    rows = [{"i": i, "name": f"row{i}", "v": np.float32([i, i / 2])} for i in range(50)]
    with beam.Pipeline() as p:
        _ = p | beam.Create(rows) | WriteExamples(str(tmp_path / "out"), num_shards=3)
    files = sorted(tmp_path.glob("out-*-of-00003.tfrecord"))
    assert len(files) == 3
    assert sorted(tfr.decode_example(r)["i"][0] for r in tfr.read_records(files)) == list(range(50))

    schema = {"i": tfr.FixedLen([], "int64"), "v": tfr.FixedLen([2], "float32")}
    with beam.Pipeline() as p:
        got = (
            p
            | ReadExamples(str(tmp_path / "out-*"), schema)
            | beam.Map(lambda e: (int(e["i"]), float(e["v"][1])))
        )
        assert_that(got, equal_to([(i, i / 2) for i in range(50)]))


def test_cli_convert_on_the_direct_runner(table, tmp_path):
    from click.testing import CliRunner
    from tfrecordkit.cli import main

    result = CliRunner().invoke(
        main,
        [
            "convert",
            str(table.csv),
            str(tmp_path / "b"),
            "--runner",
            "DirectRunner",
            "--option",
            "direct_num_workers=1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert '"TRAIN": 18' in result.output
