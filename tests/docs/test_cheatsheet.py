"""The cheat sheet's code blocks run, in order, as one script, with TensorFlow beside us."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SHEET = Path(__file__).resolve().parents[2] / "docs" / "cheatsheet.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_cheatsheet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(SHEET.read_text())
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{SHEET.name}[block {i}]", "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[3] [0.5] [b'cat']"
    assert out[1:3] == ["(64,)", "(36,)"]
    assert out[3] == "100 4"
    assert out[4] == "TensorSpec(shape=(None,), dtype=tf.int64, name=None)"
    assert out[5] == "(4, 12, 16, 3)"


# Every tf.* call in the TensorFlow workflows the guide follows (the TFRecord and
# tf.Example tutorials, sharded writing, the interleave pipeline, TFRecorder).
TUTORIAL_CALLS = [
    "tf.data.AUTOTUNE",
    "tf.data.Dataset.from_generator",
    "tf.data.Dataset.from_tensor_slices",
    "tf.data.Dataset.list_files",
    "tf.data.Dataset.map",
    "tf.data.TFRecordDataset",
    "tf.data.experimental.TFRecordWriter",
    "tf.data.experimental.load",
    "tf.data.experimental.save",
    "tf.image.resize",
    "tf.io.FixedLenFeature",
    "tf.io.TFRecordWriter",
    "tf.io.decode_jpeg",
    "tf.io.decode_json_example",
    "tf.io.encode_jpeg",
    "tf.io.matching_files",
    "tf.io.parse_single_example",
    "tf.io.parse_tensor",
    "tf.io.serialize_tensor",
    "tf.keras.utils.get_file",
    "tf.python_io.TFRecordWriter",
    "tf.random.shuffle",
    "tf.train.BytesList",
    "tf.train.Coordinator",
    "tf.train.Example",
    "tf.train.Example.FromString",
    "tf.train.Example.ParseFromString",
    "tf.train.Feature",
    "tf.train.Features",
    "tf.train.FloatList",
    "tf.train.Int64List",
    "tf.train.shuffle_batch",
    "tf.train.start_queue_runners",
    "tf.train.string_input_producer",
    ".interleave",
    ".map",
    ".shuffle",
    ".batch",
    ".prefetch",
    ".cache",
    ".repeat",
    ".take",
]


def test_every_seed_call_is_in_the_table() -> None:
    table = SHEET.read_text().split("## Examples")[0]
    assert [name for name in TUTORIAL_CALLS if name not in table] == []
