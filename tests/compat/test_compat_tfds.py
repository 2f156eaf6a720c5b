"""TensorFlow Datasets interop, against the real TFDS: what ``tfr.tfds.write_metadata``
describes, ``tfds.builder_from_directory`` loads value for value; what TFDS prepares,
``tfr.load`` reads as TFDS itself reads it."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tensorflow_datasets as tfds
import tfrecordkit as tfr
from PIL import Image as PILImage

NAMES = ["cat", "dog", "bird"]
TAGS = ["indoor", "outdoor", "night", "day"]


def _png(pixels: np.ndarray) -> bytes:
    buf = io.BytesIO()
    PILImage.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def _rows(n: int, start: int, seed: int) -> tuple[list[dict[str, Any]], dict[int, np.ndarray]]:
    """Rows of every kind of feature, and each row's image pixels by id."""
    rng = np.random.default_rng(seed)
    rows, pixels = [], {}
    for i in range(start, start + n):
        image = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
        pixels[i] = image
        rows.append(
            {
                "meta/id": i,
                "label": i % 3,
                "embedding": rng.standard_normal((2, 3)).astype(np.float32),
                "caption": f"row {i} é",
                "blob": bytes([i % 256, 0, 255]),
                "image": _png(image),
                "tokens": rng.integers(0, 1000, i % 5).astype(np.int64),
                "tags": np.flatnonzero(rng.random(4) < 0.5).astype(np.int64),
                "points": rng.standard_normal((i % 3, 2)).astype(np.float32),
            }
        )
    return rows, pixels


SCHEMA = {
    "meta/id": tfr.FixedLen([], "int64"),
    "label": tfr.FixedLen([], "int64"),
    "embedding": tfr.FixedLen([2, 3], "float32"),
    "caption": tfr.FixedLen([], "bytes"),
    "blob": tfr.FixedLen([], "bytes"),
    "image": tfr.FixedLen([], "bytes"),
    "tokens": tfr.VarLen("int64"),
    "tags": tfr.VarLen("int64"),
    "points": tfr.FixedLenSequence([2], "float32"),
}


def test_tfds_loads_what_we_write(tmp_path: Path) -> None:
    out = tmp_path / "pets"
    splits = {"train": _rows(40, 0, 1), "test": _rows(13, 100, 2)}
    manifests = {
        split: tfr.write_dataset(rows, out / split, num_shards=k, schema=SCHEMA, progress=False)
        for (split, (rows, _)), k in zip(splits.items(), (3, 2), strict=True)
    }
    written = tfr.tfds.write_metadata(
        out,
        features={
            "label": tfr.tfds.ClassLabel(names=NAMES),
            "tags": tfr.tfds.ClassLabel(names=TAGS),
            "caption": tfr.tfds.Text(),
            "image": tfr.tfds.Image(shape=(6, 5, 3), encoding_format="png"),
        },
        version="1.2.0",
        description="Pets, small.",
        supervised_keys=("image", "label"),
    )
    assert sorted(Path(p).name for p in written) == [
        "dataset_info.json",
        "features.json",
        "label.labels.txt",
        "tags.labels.txt",
    ]

    builder = tfds.builder_from_directory(str(out))
    info = builder.info
    assert info.name == "pets" and str(info.version) == "1.2.0"
    assert info.description == "Pets, small."
    assert info.features["label"].names == NAMES
    assert info.features["tags"].feature.names == TAGS
    assert info.features["image"].shape == (6, 5, 3)
    for split, manifest in manifests.items():
        assert info.splits[split].num_examples == manifest.records
        assert info.splits[split].shard_lengths == [s.records for s in manifest.shards]

    for split, (rows, pixels) in splits.items():
        got = list(tfds.as_numpy(builder.as_dataset(split=split)))
        assert len(got) == len(rows)
        by_id = {int(ex["meta"]["id"]): ex for ex in got}
        for row in rows:
            ex = by_id[row["meta/id"]]
            assert ex["label"] == row["label"]
            assert info.features["label"].int2str(ex["label"]) == NAMES[row["label"]]
            np.testing.assert_array_equal(ex["embedding"], row["embedding"])
            assert ex["embedding"].dtype == np.float32 and ex["embedding"].shape == (2, 3)
            assert ex["caption"] == row["caption"].encode()
            assert ex["blob"] == row["blob"]
            np.testing.assert_array_equal(ex["image"], pixels[row["meta/id"]])
            np.testing.assert_array_equal(ex["tokens"], row["tokens"])
            np.testing.assert_array_equal(ex["tags"], row["tags"])
            np.testing.assert_array_equal(ex["points"], row["points"])
            assert ex["points"].shape == (len(row["points"]), 2)

    image, label = next(iter(tfds.as_numpy(builder.as_dataset(split="test", as_supervised=True))))
    assert image.shape == (6, 5, 3) and label in range(3)

    # Read back with no schema.json: the TFDS metadata is the schema.
    ours = {int(ex["meta/id"]): ex for ex in tfr.load(out, "test")}
    for row in splits["test"][0]:
        np.testing.assert_array_equal(ours[row["meta/id"]]["points"], row["points"])
        assert ours[row["meta/id"]]["image"] == row["image"]


TFDS_FEATURES = tfds.features.FeaturesDict(
    {
        "id": np.int64,
        "label": tfds.features.ClassLabel(names=NAMES),
        "vec": tfds.features.Tensor(shape=(3,), dtype=np.float32),
        "mat": tfds.features.Tensor(shape=(2, 2), dtype=np.int64),
        "text": tfds.features.Text(),
        "image": tfds.features.Image(shape=(None, None, 3), encoding_format="png"),
        "tokens": tfds.features.Sequence(np.int64),
        "points": tfds.features.Tensor(shape=(None, 2), dtype=np.float32),
        "flag": np.bool_,
        "small": np.uint8,
        "score": np.float64,
        "nested": {"x": np.int32, "name": tfds.features.Text()},
        "steps": tfds.features.Sequence({"a": np.int64, "b": np.float32}),
        "ragged": tfds.features.Sequence(tfds.features.Sequence(np.int64)),
        "boxes": tfds.features.Sequence(tfds.features.BBoxFeature()),
        "maybe": tfds.features.Tensor(shape=(), dtype=np.int64, optional=True),
    }
)


def _tfds_examples(n: int, start: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(start, start + n):
        h, w = 3 + i % 4, 4 + i % 3
        box = np.sort(rng.random((i % 3, 2, 2)), axis=1).reshape(-1, 4).astype(np.float32)
        out.append(
            {
                "id": i,
                "label": NAMES[i % 3],
                "vec": rng.standard_normal(3).astype(np.float32),
                "mat": rng.integers(-5, 5, (2, 2)),
                "text": f"text {i} ü",
                "image": rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
                "tokens": list(range(i % 4)),
                "points": rng.standard_normal((i % 3, 2)).astype(np.float32),
                "flag": i % 2 == 0,
                "small": i % 256,
                "score": i / 7,
                "nested": {"x": -i, "name": f"n{i}"},
                "steps": {"a": list(range(i % 3)), "b": [0.5] * (i % 3)},
                "ragged": [list(range(k)) for k in range(i % 4)],
                "boxes": [tfds.features.BBox(*b) for b in box],
                "maybe": None if i % 3 == 0 else i,
            }
        )
    return out


def _prepare(data_dir: Path, dataset: str, features: Any, splits: dict[str, list[Any]]) -> Any:
    """Prepares a dataset with TFDS itself, as a dataset's own builder does."""

    class Generated(tfds.core.GeneratorBasedBuilder, skip_registration=True):
        name = dataset
        VERSION = tfds.core.Version("1.0.0")

        def _info(self) -> Any:
            return tfds.core.DatasetInfo(builder=self, features=features)

        def _split_generators(self, dl_manager: Any) -> Any:
            return {split: self._generate_examples(rows) for split, rows in splits.items()}

        def _generate_examples(self, rows: list[Any]) -> Any:
            yield from enumerate(rows)

    builder = Generated(data_dir=str(data_dir))
    builder.download_and_prepare()
    return builder


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A dataset prepared by TFDS itself, two splits."""
    splits = {"train": _tfds_examples(25, 0, 3), "test": _tfds_examples(7, 50, 4)}
    return _prepare(tmp_path_factory.mktemp("tfds"), "tiny", TFDS_FEATURES, splits)


@pytest.mark.parametrize("split", ["train", "test"])
def test_load_reads_a_tfds_dataset_as_tfds_does(prepared: Any, split: str) -> None:
    directory = prepared.data_dir
    theirs = {
        int(ex["id"]): ex
        for ex in tfds.as_numpy(
            prepared.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()})
        )
    }
    decoded = {int(ex["id"]): ex["image"] for ex in tfds.as_numpy(prepared.as_dataset(split=split))}
    ours = {int(ex["id"]): ex for ex in tfr.load(directory, split)}
    assert sorted(ours) == sorted(theirs)
    assert len(ours) == prepared.info.splits[split].num_examples
    for i, ex in ours.items():
        t = theirs[i]
        assert ex["label"] == t["label"]
        np.testing.assert_array_equal(ex["vec"], t["vec"])
        np.testing.assert_array_equal(ex["mat"], t["mat"])
        assert ex["mat"].shape == (2, 2)
        assert ex["text"] == t["text"]
        assert ex["image"] == t["image"]  # the encoded bytes, undecoded
        np.testing.assert_array_equal(ex["tokens"], t["tokens"])
        np.testing.assert_array_equal(ex["points"], t["points"])
        assert ex["points"].shape == t["points"].shape
        assert bool(ex["flag"]) == bool(t["flag"])
        assert ex["small"] == t["small"]
        assert ex["score"] == np.float32(t["score"])
        assert ex["nested/x"] == t["nested"]["x"]
        assert ex["nested/name"] == t["nested"]["name"]
        np.testing.assert_array_equal(ex["steps/a"], t["steps"]["a"])
        np.testing.assert_array_equal(ex["steps/b"], t["steps"]["b"])
        assert ex["ragged"].to_list() == t["ragged"].to_list()
        np.testing.assert_array_equal(ex["boxes"], t["boxes"])
        assert ex["boxes"].shape == t["boxes"].shape
        assert ex["maybe"] == t["maybe"]

    # Decoded on our threads, the images are TFDS's pixels.
    pixels = {
        int(ex["id"]): ex["image"]
        for ex in tfr.load(directory, split).decode_image("image", dtype="uint8")
    }
    for i, image in pixels.items():
        np.testing.assert_array_equal(image, decoded[i])


def test_info_of_a_tfds_dataset(prepared: Any) -> None:
    info = tfr.tfds.info(prepared.data_dir)
    assert info.name == "tiny" and info.version == "1.0.0"
    assert info.splits == {s: prepared.info.splits[s].num_examples for s in ("train", "test")}
    assert info.labels == {"label": NAMES}
    assert [Path(f).name for f in info.files("train")] == [
        Path(f).name for f in prepared.info.splits["train"].filepaths
    ]
    assert info.features["image"] == "Image" and info.features["label"] == "ClassLabel"
    schema = tfr.tfds.schema(prepared.data_dir)
    assert schema["ragged"] == tfr.RaggedFeature(
        "int64",
        "ragged/ragged_flat_values",
        [tfr.RaggedFeature.RowLengths("ragged/ragged_row_lengths_0")],
    )
    assert schema["boxes"] == tfr.FixedLenSequence([4], "float32", allow_missing=True)
    assert schema["tokens"] == tfr.VarLen("int64")
    with pytest.raises(ValueError, match=r"no split 'validation'.*'train', 'test'"):
        tfr.load(prepared.data_dir, "validation")


def test_features_without_an_example_form_are_named(tmp_path: Path) -> None:
    features = tfds.features.FeaturesDict(
        {
            "id": np.int64,
            "blob": tfds.features.Tensor(shape=(4,), dtype=np.float32, encoding="zlib"),
        }
    )
    rows = [{"id": 1, "blob": np.ones(4, np.float32)}]
    builder = _prepare(tmp_path, "packed", features, {"train": rows})
    with pytest.raises(ValueError, match=r"'blob'.*zlib"):
        tfr.tfds.schema(builder.data_dir)
    with pytest.raises(ValueError, match=r"'blob'.*zlib"):
        tfr.load(builder.data_dir, "train")


def test_convert_with_tfds_metadata(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    rows, pixels = [], {}
    for i in range(12):
        image = rng.integers(0, 256, (8, 6, 3), dtype=np.uint8)
        path = tmp_path / f"{i}.png"
        PILImage.fromarray(image).save(path)
        pixels[str(path)] = image
        split = ("TRAIN", "TRAIN", "VALIDATION", "TEST")[i % 4]
        rows.append({"split": split, "image_uri": str(path), "label": ("owl", "bat")[i % 2]})
    out = tmp_path / "converted"
    summary = tfr.convert(pd.DataFrame(rows), out, tfds=True, progress=False, num_shards=2)

    builder = tfds.builder_from_directory(str(out))
    assert builder.info.features["label"].names == summary.labels == ["bat", "owl"]
    for split in ("train", "validation", "test"):
        assert builder.info.splits[split].num_examples == summary.rows[split.upper()]
        got = list(tfds.as_numpy(builder.as_dataset(split=split)))
        assert len(got) == summary.rows[split.upper()]
        for ex in got:
            row = next(r for r in rows if (pixels[r["image_uri"]] == ex["image"]).all())
            assert builder.info.features["label"].int2str(ex["label"]) == row["label"]
            assert ex["label_text"].decode() == row["label"]
            assert ex["image_format"] == b"png"
    # tfr.load still reads the conversion by its own schema.
    assert len(list(tfr.load(out, "train"))) == summary.rows["TRAIN"]


def test_the_convert_command_writes_tfds_metadata(tmp_path: Path) -> None:
    import subprocess
    import sys

    rows = []
    for i in range(4):
        path = tmp_path / f"{i}.png"
        PILImage.fromarray(np.full((4, 4, 3), 50 * i, np.uint8)).save(path)
        rows.append({"split": "TRAIN", "image_uri": str(path), "label": ("a", "b")[i % 2]})
    table = tmp_path / "table.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "tfrecordkit.cli", "convert", str(table), str(out), "--tfds"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    builder = tfds.builder_from_directory(str(out))
    assert builder.info.splits["train"].num_examples == 4
    assert builder.info.features["label"].names == ["a", "b"]


def test_a_grayscale_tfds_dataset_loads_with_its_length_and_channels(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    rows = [
        {"image": rng.integers(0, 256, (28, 28, 1), dtype=np.uint8), "label": i % 10}
        for i in range(12)
    ]
    features = tfds.features.FeaturesDict(
        {
            "image": tfds.features.Image(shape=(28, 28, 1)),
            "label": tfds.features.ClassLabel(num_classes=10),
        }
    )
    builder = _prepare(tmp_path, "mnistlike", features, {"train": rows, "test": rows[:5]})
    directory = builder.data_dir
    ds = tfr.load(directory, "test")
    assert len(ds) == builder.info.splits["test"].num_examples == 5
    theirs = [ex["image"] for ex in tfds.as_numpy(builder.as_dataset(split="test"))]
    ours = [ex["image"] for ex in ds.decode_image("image", dtype="uint8")]
    assert ours[0].shape == theirs[0].shape == (28, 28, 1)
    assert sorted(o.tobytes() for o in ours) == sorted(t.tobytes() for t in theirs)
    # Asked for, three channels still come.
    assert next(iter(ds.decode_image("image", 3)))["image"].shape == (28, 28, 3)
    # The command line draws a TFDS split's images as it draws a convert output's.
    script = Path(sys.executable).with_name("tfrecordkit")
    sheet = tmp_path / "sheet.png"
    done = subprocess.run(
        [str(script), "inspect", str(directory), "--split", "test", "--out", str(sheet)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with PILImage.open(sheet) as img:
        assert img.width > 0 and img.height > 0
