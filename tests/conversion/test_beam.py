"""Conversion on Apache Beam's DirectRunner, and the reusable Beam transforms."""

from __future__ import annotations

import csv

import apache_beam as beam
import numpy as np
import pytest
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


@pytest.mark.timeout(300)
def test_direct_runner_in_multi_processing_mode(table, tmp_path):
    # Two worker processes, each importing tfrecordkit and writing its own parts, which the
    # commit gathers: the same dataset as the local runner's.
    local = tfr.convert(table.csv, tmp_path / "local", progress=False)
    beamed = tfr.convert(
        table.csv,
        tmp_path / "beam",
        runner="DirectRunner",
        pipeline_options={"direct_num_workers": 2, "direct_running_mode": "multi_processing"},
        progress=False,
    )
    assert beamed.rows == local.rows
    for split in ("train", "validation", "test"):
        assert records(tmp_path / "beam" / f"{split}-*") == records(
            tmp_path / "local" / f"{split}-*"
        )
    leftovers = [p.name for p in (tmp_path / "beam").iterdir() if ".part-" in p.name]
    assert leftovers == []


def test_write_and_read_examples_transforms(tmp_path):
    rows = [{"i": i, "name": f"row{i}", "v": np.float32([i, i / 2])} for i in range(50)]
    with beam.Pipeline() as p:
        _ = p | beam.Create(rows) | WriteExamples(str(tmp_path / "out"), num_shards=3)
    files = sorted(tmp_path.glob("out-*-of-00003.tfrecord"))
    assert len(files) == 3
    assert sorted(tfr.decode_example(r)["i"][0] for r in tfr.read_records(files)) == list(range(50))
    manifest = tfr.Manifest.load(tmp_path / "out")
    assert manifest.records == 50 and [str(tmp_path / s.file) for s in manifest.shards] == [
        str(f) for f in files
    ]
    assert manifest.schema["v"] == tfr.FixedLen([2], "float32")
    assert sum(len(tfr.RecordIndex(f)) for f in files) == 50
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f.name for f in files] + [f.name + ".idx" for f in files] + ["out.manifest.json"]
    )

    schema = {"i": tfr.FixedLen([], "int64"), "v": tfr.FixedLen([2], "float32")}
    with beam.Pipeline() as p:
        got = (
            p
            | ReadExamples(str(tmp_path / "out-*"), schema)
            | beam.Map(lambda e: (int(e["i"]), float(e["v"][1])))
        )
        assert_that(got, equal_to([(i, i / 2) for i in range(50)]))


def test_damage_met_in_beam_keeps_its_location(tmp_path):
    path = tmp_path / "d.tfrecord"
    with tfr.RecordWriter(str(path)) as w:
        w.write_many(tfr.encode_example({"i": i}) for i in range(30))
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(tfr.TFRecordError) as err, beam.Pipeline() as p:
        _ = p | ReadExamples(str(path))
    assert err.value.path == str(path) and err.value.record_index is not None
    assert f"({path}, record {err.value.record_index}, offset" in str(err.value)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"num_shards": "2"}, ValueError, "num_shards"),
        ({"num_shards": 2.5}, ValueError, "num_shards"),
        ({"num_shards": -1}, ValueError, "num_shards"),
    ],
)
def test_write_examples_refuses_bad_arguments_at_once(tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        WriteExamples(str(tmp_path / "out"), **kwargs)


def test_write_examples_names_what_it_cannot_write(tmp_path):
    with pytest.raises(
        TypeError, match=r"serialized records \(bytes\) or dicts of features, not str"
    ):
        with beam.Pipeline() as p:
            _ = p | beam.Create(["a"]) | WriteExamples(str(tmp_path / "out"))
    assert not list(tmp_path.iterdir())


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


def test_direct_runner_writes_zlib_shards(table, tmp_path):
    out = tmp_path / "z"
    options = {"direct_num_workers": 1}
    tfr.convert(table.csv, out, runner="DirectRunner", pipeline_options=options, compression="ZLIB")
    shards = sorted(out.glob("train-*"))
    assert shards and all(p.read_bytes().startswith(b"\x78") for p in shards)
    assert tfr.count([str(p) for p in shards]) == 18


def test_write_examples_commits_all_or_nothing(tmp_path):
    prefix = str(tmp_path / "d")
    with beam.Pipeline() as p:
        _ = p | beam.Create([b"a", b"b"]) | WriteExamples(prefix, num_shards=3)
    manifest = tfr.Manifest.load(prefix)
    assert [s.records for s in manifest.shards] in ([1, 1, 0], [1, 0, 1], [0, 1, 1])
    assert sorted(tfr.read_records(manifest.files)) == [b"a", b"b"]
    # Another dataset there is refused, before the pipeline runs; overwrite replaces it.
    with pytest.raises(FileExistsError):
        WriteExamples(prefix)
    with beam.Pipeline() as p:
        _ = p | beam.Create([b"c"] * 5) | WriteExamples(prefix, overwrite=True)
    assert list(tfr.read_records(tfr.Manifest.load(prefix).files)) == [b"c"] * 5
    assert len(list(tmp_path.glob("d-*.tfrecord"))) == 1

    def boom(x):
        if x == b"x9":
            raise RuntimeError("bad row")
        return x

    failed = str(tmp_path / "f")
    with pytest.raises(Exception, match="bad row"), beam.Pipeline() as p:
        _ = (
            p
            | beam.Create([b"x%d" % i for i in range(20)])
            | beam.Map(boom)
            | WriteExamples(failed)
        )
    # Nothing under a final name, and no manifest.
    assert not list(tmp_path.glob("f-*")) and not list(tmp_path.glob("f.manifest.json"))


def test_write_examples_of_nothing_is_one_empty_shard(tmp_path):
    with beam.Pipeline() as p:
        _ = p | beam.Create([]) | WriteExamples(str(tmp_path / "e"))
    manifest = tfr.Manifest.load(tmp_path / "e")
    assert manifest.records == 0 and len(manifest.shards) == 1
    assert tfr.count(manifest.files) == 0


def test_write_examples_makes_the_directory_of_its_prefix(tmp_path):
    prefix = str(tmp_path / "new" / "deeper" / "train")
    with beam.Pipeline() as p:
        _ = p | beam.Create([{"label": 1}, {"label": 2}]) | WriteExamples(prefix, num_shards=2)
    assert tfr.Manifest.load(prefix).records == 2


def test_a_failed_beam_overwrite_keeps_the_converted_splits(table, tmp_path, monkeypatch):
    out = tmp_path / "out"
    tfr.convert(table.csv, out, runner="DirectRunner", progress=False)
    before = {p.name: p.read_bytes() for p in out.iterdir() if "tfrecord" in p.name}
    from tfrecordkit.conversion import beam_runner

    def fail(*args, **kwargs):
        raise RuntimeError("a worker fails")

    monkeypatch.setattr(beam_runner, "encode_example", fail)
    with pytest.raises(Exception, match="a worker fails"):
        tfr.convert(table.csv, out, runner="DirectRunner", overwrite=True, progress=False)
    after = {p.name: p.read_bytes() for p in out.iterdir() if "tfrecord" in p.name}
    assert after == before and tfr.Manifest.load(out / "train").records == 18


@pytest.mark.parametrize("runner", ["local", "DirectRunner"])
def test_integer_labels_are_kept_exactly_and_those_past_int64_discarded(tmp_path, runner):
    image = tmp_path / "a.png"
    from PIL import Image

    Image.new("RGB", (4, 4)).save(image)
    rows = ["split,image_uri,label"]
    rows += [f"train,{image},9007199254740993", f"train,{image},99999999999999999999999"]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    summary = tfr.convert(tmp_path / "t.csv", tmp_path / "out", runner=runner, progress=False)
    assert summary.rows["TRAIN"] == 1 and summary.discarded == 1
    (label,) = [int(e["label"]) for e in tfr.load(tmp_path / "out", "train")]
    assert label == 9007199254740993
    with open(tmp_path / "out" / "discarded.csv", newline="") as f:
        (entry,) = list(csv.DictReader(f))
    assert entry["reason"] == "label '99999999999999999999999' is beyond int64"


def test_cli_convert_on_beam_shows_only_its_summary(table, tmp_path):
    # A fresh interpreter imports Beam, which logs notes about optional Google Cloud
    # libraries: the command keeps them off the user's terminal.
    import subprocess
    import sys

    out = tmp_path / "quiet"
    args = ["convert", str(table.csv), str(out), "--runner", "DirectRunner"]
    done = subprocess.run(
        [sys.executable, "-m", "tfrecordkit", *args, "--option", "direct_num_workers=1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("converted 30 rows") and done.stdout.count("\n") == 1


def test_convert_on_beam_from_python_logs_nothing_of_its_import(table, tmp_path):
    # The same notes, logged as a fresh interpreter's tfr.convert imports Beam, stay off
    # stderr too; a warning the program itself logs afterwards still shows.
    import subprocess
    import sys

    script = (
        "import logging, sys\n"
        "import tfrecordkit as tfr\n"
        "s = tfr.convert(sys.argv[1], sys.argv[2], runner='DirectRunner', progress=False,\n"
        "                pipeline_options={'direct_num_workers': 1})\n"
        "print(sum(s.rows.values()))\n"
        "logging.warning('the program speaks')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(table.csv), str(tmp_path / "quiet")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "30\n"
    assert done.stderr.splitlines() == ["WARNING:root:the program speaks"]


def test_a_beam_runner_without_beam_says_what_to_install(table, tmp_path, monkeypatch, capsys):
    import sys

    from tfrecordkit.cli import run

    monkeypatch.setitem(sys.modules, "apache_beam", None)
    for name in ("tfrecordkit.conversion.beam_runner", "tfrecordkit.integrations.beam"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ImportError, match=r"needs Apache Beam: pip install 'tfrecordkit\[beam\]'"):
        tfr.convert(table.csv, tmp_path / "a", runner="DirectRunner", progress=False)
    with pytest.raises(SystemExit) as done:
        run(["convert", str(table.csv), str(tmp_path / "b"), "--runner", "DirectRunner"])
    assert done.value.code == 1
    err = capsys.readouterr().err
    need = "runner='DirectRunner' needs Apache Beam: pip install 'tfrecordkit[beam]'"
    assert err == f"error: {need}\n"
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_pipeline_option_beam_cannot_parse_is_a_value_error(table, tmp_path):
    out = tmp_path / "o"
    options = {"direct_num_workers": "abc"}
    with pytest.raises(ValueError, match="--direct_num_workers: invalid int value: 'abc'"):
        tfr.convert(table.csv, out, runner="DirectRunner", pipeline_options=options)
    assert not out.exists()
