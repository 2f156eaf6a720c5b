"""`tfrecordkit schema`: a guessed schema, as text or JSON that round-trips."""

from __future__ import annotations

import json

import numpy as np
import tfrecordkit as tfr
from click.testing import CliRunner
from tfrecordkit.cli import main


def test_schema_command(tmp_path):
    path = tmp_path / "s.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write_examples(
            {"label": np.arange(5), "vec": np.zeros((5, 3), np.float32), "name": list("abcde")}
        )
        w.write(tfr.encode_example({"label": 9, "vec": np.ones(3), "name": "f", "extra": [1, 2]}))
    result = CliRunner().invoke(main, ["schema", str(path)])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line.split()[1:] for line in result.output.splitlines()}
    assert lines["label"] == ["FixedLen", "int64", "[]"]
    assert lines["vec"] == ["FixedLen", "float32", "[3]"]
    assert lines["extra"] == ["VarLen", "int64"]
    result = CliRunner().invoke(main, ["schema", str(path), "--json"])
    schema = tfr.Schema.from_json(result.output)
    assert schema == tfr.infer_schema(path)
    assert CliRunner().invoke(main, ["schema", str(tmp_path / "none.tfrecord")]).exit_code == 1


def test_schema_command_shows_the_feature_lists_of_sequence_examples(tmp_path):
    path = tmp_path / "seq.tfrecord"
    with tfr.RecordWriter(path) as w:
        for i in range(3):
            w.write(tfr.encode_sequence_example({"id": i}, {"xy": [[i, i]] * (i + 1)}))
    result = CliRunner().invoke(main, ["schema", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{'id':<24} {'FixedLen':<16} {'int64':<8} []",
        f"{'xy':<24} {'FixedLenSequence':<16} {'int64':<8} [2] (feature list)",
    ]
    result = CliRunner().invoke(main, ["schema", str(path), "--json"])
    both = json.loads(result.output)
    assert tfr.Schema.from_dict(both["context"]) == {"id": tfr.FixedLen([], "int64")}
    lists = tfr.Schema.from_dict(both["feature_lists"])
    assert lists == {"xy": tfr.FixedLenSequence([2], "int64", allow_missing=True)}


def test_schema_of_a_file_without_records_says_there_is_nothing_to_show(tmp_path):
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    result = CliRunner().invoke(main, ["schema", str(path)])
    assert result.exit_code == 0
    assert (
        result.output == "note: no features to show: no record read holds a feature with values\n"
    )
