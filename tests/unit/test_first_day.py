"""What a new user meets in the first day, each through the API and, where it is about the
command line, the installed ``tfrecordkit`` command in a subprocess: files that are not
Examples named as such, SequenceExamples shown whole, valid JSON, typed errors for bad
arguments, and globs that match directories."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr


def tfrecordkit(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("tfrecordkit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tfrecordkit.cli"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=120, check=False
    )


def _event() -> bytes:
    """A TensorBoard event record: wall_time (double), step, file_version."""
    return b"\x09" + struct.pack("<d", 1.5) + b"\x10\x00" + b"\x1a\x0dbrain.Event:2"


def test_tensorboard_event_files_are_named_as_not_examples(tmp_path):
    path = tmp_path / "events.out.tfevents.1.host"
    with tfr.RecordWriter(path) as w:
        w.write(_event())
    with pytest.raises(tfr.ExampleDecodeError, match="TensorBoard event") as info:
        tfr.infer_schema(path)
    assert info.value.path == str(path) and info.value.record_index == 0
    head = tfrecordkit("head", str(path))
    assert head.returncode == 0
    assert "record 0: 26 bytes, not an Example" in head.stdout and "TensorBoard" in head.stdout
    schema = tfrecordkit("schema", str(path))
    assert schema.returncode == 1 and "TensorBoard event" in schema.stderr
    assert schema.stderr.count("\n") == 1


def test_records_that_are_not_examples_are_located(tmp_path):
    path = tmp_path / "raw.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"a": 1}))
        w.write(b"\x0c\x0b\x0a not an example")
    for read in (tfr.infer_schema, tfr.read_table):
        with pytest.raises(tfr.ExampleDecodeError, match=r"not a tf\.train\.Example") as info:
            read(path)
        assert (info.value.path, info.value.record_index) == (str(path), 1)


def test_sequence_examples_are_shown_and_never_cut_to_their_context(tmp_path):
    path = tmp_path / "seq.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_sequence_example({"id": 3}, {"tok": [[1, 2], [3], [4], [5]]}))
    head = tfrecordkit("head", str(path))
    assert "tok (feature list): [int64 [1, 2], int64 [3], int64 [4], ... (4 steps)]" in (
        head.stdout
    )
    as_json = json.loads(tfrecordkit("head", "--json", str(path)).stdout)
    assert as_json == {"context": {"id": [3]}, "feature_lists": {"tok": [[1, 2], [3], [4], [5]]}}
    schema = tfr.infer_schema(path)
    with pytest.raises(ValueError, match=r"SequenceExamples.*sequence_schema"):
        tfr.read_examples(path, schema)
    table = tfr.read_table(path)  # the feature lists come along
    assert table.column("tok").to_pylist() == [[[1, 2], [3], [4], [5]]]


def test_head_json_is_valid_json_with_non_finite_floats(tmp_path):
    path = tmp_path / "nan.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"x": [float("nan"), float("inf"), -float("inf"), 1.5]}))

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    out = tfrecordkit("head", "--json", str(path))
    assert json.loads(out.stdout, parse_constant=refuse) == {
        "x": ["NaN", "Infinity", "-Infinity", 1.5]
    }
    assert '"NaN"' in tfrecordkit("head", "--help").stdout


def test_bad_arguments_are_typed_errors_naming_them(tmp_path):
    path = tmp_path / "one.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"a": 1}))
    for bad in (None, 5, [5], b"x"):
        with pytest.raises(TypeError, match="paths must be a path, a glob pattern"):
            tfr.count(bad)
    for read in (
        lambda: tfr.read_examples(path, {"a": tfr.FixedLen([], "int64")}, 0),
        lambda: tfr.read_batches(path, 0),
        lambda: tfr.read_arrow(path, batch_size=0),
    ):
        with pytest.raises(ValueError, match="batch_size must be an int >= 1, not 0"):
            read()


def test_empty_features_left_out_of_an_inferred_schema_are_named(tmp_path):
    path = tmp_path / "empty.tfrecord"
    with tfr.RecordWriter(path) as w:
        for i in range(3):
            w.write(tfr.encode_example({"a": i, "never": []}))
    with pytest.warns(tfr.SchemaWarning, match="'never', empty wherever the 3 Examples"):
        schema = tfr.infer_schema(path)
    assert list(schema) == ["a"]


def test_a_glob_skips_directories_with_a_note(tmp_path):
    (tmp_path / "sub").mkdir()
    with tfr.RecordWriter(tmp_path / "a.tfrecord") as w:
        w.write(tfr.encode_example({"a": np.int64(1)}))
    pattern = str(tmp_path / "*")
    with pytest.warns(tfr.SidecarSkippedWarning, match="skipped 1 directory"):
        assert tfr.count(pattern) == 1
    done = tfrecordkit("verify", pattern)
    assert done.returncode == 0 and "DAMAGED" not in done.stdout
    assert done.stderr.startswith("note: skipped 1 directory")
    named = tfrecordkit("count", str(tmp_path))
    assert named.returncode == 1
    assert "is a directory; pass its files, or a glob pattern such as DIR/*" in named.stderr


def test_index_on_a_compressed_file_says_what_to_do(tmp_path):
    path = tmp_path / "x.tfrecord.gz"
    with tfr.RecordWriter(path, "gzip") as w:
        w.write(tfr.encode_example({"a": 1}))
    with pytest.raises(ValueError, match="GZIP-compressed: only uncompressed files are indexed"):
        tfr.build_index(path)
    done = tfrecordkit("index", str(path))
    assert done.returncode == 1 and "(tfrecordkit reshard, or tfr.write_dataset(" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    # The copy it suggests is indexed.
    copy = tfrecordkit("reshard", str(path), "-o", str(tmp_path / "copy"))
    assert copy.returncode == 0, copy.stderr
    assert tfr.count(str(tmp_path / "copy-00000-of-00001.tfrecord")) == 1
    assert (tmp_path / "copy-00000-of-00001.tfrecord.idx").exists()
    tfr.write_dataset(tfr.read_records(path), str(tmp_path / "api"))
    assert (tmp_path / "api-00000-of-00001.tfrecord.idx").exists()


def test_convert_names_a_source_that_is_not_a_table_and_look_alike_labels(tmp_path):
    from PIL import Image

    picture = tmp_path / "pic.png"
    Image.new("RGB", (4, 4), (1, 2, 3)).save(picture)
    done = tfrecordkit("convert", str(picture), str(tmp_path / "out"))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "is not a CSV or Parquet table" in done.stderr
    assert "it starts with a PNG signature" in done.stderr
    table = tmp_path / "table.csv"
    rows = [f"TRAIN,{picture},{label}" for label in ("Apple", "Apple ", "pear", "Pear")]
    table.write_text("split,image_uri,label\n" + "\n".join(rows) + "\n")
    with pytest.warns(UserWarning, match="differ only in whitespace or case") as seen:
        summary = tfr.convert(str(table), str(tmp_path / "converted"), progress=False)
    message = str(seen[0].message)
    assert "'Apple' and 'Apple '" in message and "'Pear' and 'pear'" in message
    assert summary.labels == ["Apple", "Apple ", "Pear", "pear"]


def test_convert_and_reshard_show_progress_on_a_terminal(tmp_path):
    import fcntl
    import os
    import pty
    import termios

    from PIL import Image

    picture = tmp_path / "pic.png"
    Image.new("RGB", (4, 4), (1, 2, 3)).save(picture)
    table = tmp_path / "table.csv"
    table.write_text("split,image_uri,label\n" + f"TRAIN,{picture},cat\n" * 3)
    records = tmp_path / "in.tfrecord"
    with tfr.RecordWriter(records) as w:
        w.write_many(tfr.encode_example({"a": i}) for i in range(5))

    def on_a_terminal(*args: str) -> str:
        leader, follower = pty.openpty()
        # A terminal of 24 rows by 100 columns (a new pty has none, and tqdm draws in none).
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        script = Path(sys.executable).with_name("tfrecordkit")
        done = subprocess.run(
            [str(script), *args], stdin=follower, stdout=follower, stderr=follower, timeout=120
        )
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        os.close(leader)
        assert done.returncode == 0, out
        return out.decode(errors="replace")

    assert "converting" in on_a_terminal("convert", str(table), str(tmp_path / "out"))
    shown = on_a_terminal("reshard", str(records), "-o", str(tmp_path / "re" / "x"), "-n", "1")
    assert "records" in shown and " rows" not in shown


def test_load_reads_a_write_dataset_output_through_its_manifest(tmp_path):
    columns = {"a": np.arange(10), "b": np.arange(10.0, dtype=np.float32)}
    tfr.write_dataset(columns, str(tmp_path / "data" / "train"), num_shards=2, progress=False)
    for args in (
        (tmp_path / "data" / "train",),
        (tmp_path / "data",),
        (tmp_path / "data", "train"),
    ):
        ds = tfr.load(*args)
        assert len(ds) == 10
        assert sorted(int(e["a"]) for e in ds) == list(range(10))
    with pytest.raises(FileNotFoundError, match="no dataset here"):
        tfr.load(tmp_path / "nothing")


def test_strings_names_the_text_columns_and_errors_quote_little_data(tmp_path):
    path = tmp_path / "img.tfrecord"
    image = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 6
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"caption": "a cat", "image": image}))
    with pytest.raises(tfr.SchemaError) as info:
        tfr.read_table(path, strings=True)
    assert info.value.key == "image" and len(str(info.value)) < 400
    assert f"({len(image):,} bytes)" in str(info.value)
    table = tfr.read_table(path, strings=["caption"])
    assert str(table.schema.field("caption").type) == "large_string"
    assert str(table.schema.field("image").type) == "large_binary"
    assert table.column("image").to_pylist() == [image]
    with pytest.raises(KeyError, match="strings= names \\['nope'\\]"):
        tfr.read_table(path, strings=["nope"])
    ds = tfr.Dataset.from_files(str(path)).parse().batch(1)
    batches = ds.to_arrow(strings=["caption"]).read_all()
    assert str(batches.schema.field("caption").type) == "large_string"


def test_every_option_has_help_and_repair_names_its_output_option():
    import click
    from tfrecordkit.cli import main

    for name, command in main.commands.items():
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.opts} has no help"
    repair = tfrecordkit("repair", "--help").stdout
    assert "OUTPUT" not in repair and "-o/--output" in repair
    reshard = tfrecordkit("reshard", "--help").stdout
    assert "Compression of the new shards" in reshard


def test_python_dash_m_runs_the_command(tmp_path):
    path = tmp_path / "one.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"a": 1}))
    done = subprocess.run(
        [sys.executable, "-m", "tfrecordkit", "count", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "1")


def test_head_never_reads_past_the_records_it_shows(tmp_path):
    path = tmp_path / "cut.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"a": 1}))
        w.write(tfr.encode_example({"a": 2}))
    path.write_bytes(path.read_bytes()[:-3])  # the second record's footer is cut
    shown = tfrecordkit("head", str(path), "-n", "1")
    assert shown.returncode == 0 and "a: int64 [1]" in shown.stdout, shown.stderr
    damaged = tfrecordkit("head", str(path), "-n", "2")
    assert damaged.returncode == 1 and "truncated record footer" in damaged.stderr


def test_a_dataset_infers_its_schema_from_the_first_records_whichever_shard_holds_them(
    tmp_path,
):
    import numpy as np

    empty, full = str(tmp_path / "a-0.tfrecord"), str(tmp_path / "a-1.tfrecord")
    tfr.RecordWriter(empty).close()
    with tfr.RecordWriter(full) as w:
        w.write_many(tfr.encode_examples({"x": np.arange(4, dtype=np.int64)}))
    (batch,) = tfr.Dataset.from_files([empty, full]).parse().batch(4)
    assert batch["x"].tolist() == [0, 1, 2, 3]


def test_a_dataset_of_examples_with_no_features_loads_as_empty_elements(tmp_path):
    prefix = str(tmp_path / "none")
    manifest = tfr.write_dataset([{}, {}], prefix, progress=False)
    assert manifest.schema == {}
    assert list(tfr.load(prefix)) == [{}, {}]
