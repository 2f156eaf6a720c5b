"""``tfr.tfds`` without TensorFlow Datasets: the metadata it writes, its checks and errors,
and reading a TFDS directory back. That TFDS itself loads what is written, and that what
TFDS prepares reads back as TFDS reads it, is tested against the real TFDS in
``tests/compat/test_compat_tfds.py``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import fsspec
import numpy as np
import pytest
import tfrecordkit as tfr

NAMES = ["cat", "dog", "bird"]


def _columns(n: int, start: int = 0) -> dict[str, object]:
    ids = np.arange(start, start + n)
    return {
        "id": ids,
        "label": ids % 3,
        "x": np.stack([ids, -ids], axis=1).astype(np.float32),
        "name": [f"r{i}" for i in ids],
    }


def _write(root: Path, splits=(("train", 20, 2), ("test", 6, 1)), **kwargs) -> dict:
    return {
        split: tfr.write_dataset(
            _columns(n, 100 * k), root / split, num_shards=k, progress=False, **kwargs
        )
        for split, n, k in splits
    }


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def test_metadata_describes_each_split_and_reads_back(tmp_path: Path) -> None:
    manifests = _write(tmp_path)
    written = tfr.tfds.write_metadata(
        tmp_path, features={"label": tfr.tfds.ClassLabel(names=NAMES), "name": tfr.tfds.Text()}
    )
    assert [Path(p).name for p in written] == [
        "label.labels.txt",
        "features.json",
        "dataset_info.json",
    ]
    info = _json(tmp_path / "dataset_info.json")
    assert info["fileFormat"] == "tfrecord" and info["version"] == "1.0.0"
    splits = {s["name"]: s for s in info["splits"]}
    assert sorted(splits) == ["test", "train"]
    for name, manifest in manifests.items():
        assert splits[name]["filepathTemplate"] == "{SPLIT}-{SHARD_X_OF_Y}.{FILEFORMAT}"
        assert splits[name]["shardLengths"] == [str(s.records) for s in manifest.shards]
        assert int(splits[name]["numBytes"]) == manifest.bytes
    features = _json(tmp_path / "features.json")["featuresDict"]["features"]
    assert features["label"]["classLabel"] == {"numClasses": "3"}
    assert features["x"]["tensor"] == {
        "dtype": "float32",
        "encoding": "none",
        "shape": {"dimensions": ["2"]},
    }
    assert (tmp_path / "label.labels.txt").read_text() == "cat\ndog\nbird\n"

    read = tfr.tfds.info(tmp_path)
    assert read.splits == {"train": 20, "test": 6}
    assert read.labels == {"label": NAMES}
    assert read.features == {"id": "Tensor", "label": "ClassLabel", "name": "Text", "x": "Tensor"}
    assert read.schema == manifests["train"].schema
    for name, manifest in manifests.items():
        assert read.files(name) == manifest.files
    assert tfr.tfds.schema(tmp_path) == read.schema
    # With no schema.json beside them, tfr.load reads the splits by the TFDS metadata.
    rows = list(tfr.load(tmp_path, "test"))
    assert [int(r["id"]) for r in rows] == list(range(100, 106))
    assert [r["name"] for r in rows] == [f"r{i}".encode() for i in range(100, 106)]


def test_every_spec_kind_maps_and_reads_back(tmp_path: Path) -> None:
    schema = tfr.Schema(
        {
            "fixed": tfr.FixedLen([2, 3], "float32"),
            "tokens": tfr.VarLen("int64"),
            "points": tfr.FixedLenSequence([2], "float32"),
            "meta/id": tfr.FixedLen([], "int64"),
            "meta/source/url": tfr.FixedLen([], "bytes"),
            "tags": tfr.VarLen("int64"),
            "pair": tfr.FixedLen([2], "int64"),
            "photos": tfr.VarLen("bytes"),
        }
    )
    row = {"fixed": [0.0] * 6, "meta/id": 1, "meta/source/url": b"u", "pair": [0, 1]}
    tfr.write_dataset([row], tmp_path / "train", schema=schema, progress=False)
    tfr.tfds.write_metadata(
        tmp_path,
        features={
            "tags": tfr.tfds.ClassLabel(num_classes=5),
            "pair": tfr.tfds.ClassLabel(names=["a", "b"]),
            "photos": tfr.tfds.Image(shape=(32, 32, 1), encoding_format="jpeg"),
        },
    )
    f = _json(tmp_path / "features.json")["featuresDict"]["features"]
    assert f["tokens"]["tensor"]["shape"] == {"dimensions": ["-1"]}
    assert f["points"]["tensor"]["shape"] == {"dimensions": ["-1", "2"]}
    assert f["meta"]["featuresDict"]["features"]["source"]["featuresDict"]["features"]["url"][
        "tensor"
    ] == {"dtype": "string", "encoding": "none", "shape": {}}
    assert f["tags"]["sequence"]["length"] == "-1"
    assert f["tags"]["sequence"]["feature"]["classLabel"] == {"numClasses": "5"}
    assert f["pair"]["sequence"]["length"] == "2"
    assert f["photos"]["sequence"]["feature"]["image"] == {
        "dtype": "uint8",
        "encodingFormat": "jpeg",
        "shape": {"dimensions": ["32", "32", "1"]},
    }
    assert not (tmp_path / "tags.labels.txt").exists()
    assert (tmp_path / "pair.labels.txt").read_text() == "a\nb\n"
    read = tfr.tfds.schema(tmp_path)
    assert dict(read) == {
        **schema,
        "points": tfr.FixedLenSequence([2], "float32", allow_missing=True),
    }


def test_writing_needs_neither_tfds_nor_tensorflow(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        import tfrecordkit as tfr
        root = {str(tmp_path)!r}
        tfr.write_dataset({{"label": np.arange(10) % 2}}, root + "/train", progress=False)
        tfr.tfds.write_metadata(root, features={{"label": tfr.tfds.ClassLabel(["a", "b"])}})
        assert tfr.tfds.info(root).splits == {{"train": 10}}
        assert len(list(tfr.load(root, "train"))) == 10
        assert "tensorflow_datasets" not in sys.modules
        assert "tensorflow" not in sys.modules
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_existing_metadata_is_refused_unless_overwrite(tmp_path: Path) -> None:
    _write(tmp_path)
    tfr.tfds.write_metadata(tmp_path, features={"label": tfr.tfds.ClassLabel(names=NAMES)})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if not p.name.endswith("idx")}
    with pytest.raises(FileExistsError) as err:
        tfr.tfds.write_metadata(tmp_path, version="2.0.0")
    assert err.value.filename == str(tmp_path / "features.json")
    assert before == {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in before}
    tfr.tfds.write_metadata(tmp_path, version="2.0.0", overwrite=True)
    assert _json(tmp_path / "dataset_info.json")["version"] == "2.0.0"
    assert "classLabel" not in (tmp_path / "features.json").read_text()


def test_splits_named_apart_from_their_prefixes(tmp_path: Path) -> None:
    train = tfr.write_dataset(_columns(9), tmp_path / "pets-train", num_shards=3, progress=False)
    test = tfr.write_dataset(_columns(4), tmp_path / "pets-test", progress=False)
    tfr.tfds.write_metadata(tmp_path, {"train": train, "test": str(tmp_path / "pets-test")})
    info = _json(tmp_path / "dataset_info.json")
    templates = {s["name"]: s["filepathTemplate"] for s in info["splits"]}
    assert templates["train"] == "pets-train-{SHARD_X_OF_Y}.{FILEFORMAT}"
    assert info["name"] == tmp_path.name.replace("-", "_") or info["name"] == "dataset"
    read = tfr.tfds.info(tmp_path)
    assert read.files("train") == train.files and read.files("test") == test.files


def test_a_split_without_manifest_has_its_shards_counted(tmp_path: Path) -> None:
    manifests = _write(tmp_path)
    for m in manifests.values():
        Path(m.path).unlink()
    tfr.tfds.write_metadata(tmp_path, {s: tmp_path / s for s in manifests})
    read = tfr.tfds.info(tmp_path)
    assert read.shard_lengths == {s: [sh.records for sh in m.shards] for s, m in manifests.items()}
    assert read.schema == manifests["train"].schema


def test_a_dataset_on_object_storage() -> None:
    fs = fsspec.filesystem("memory")
    root = f"/t-{uuid.uuid4().hex}"
    url = f"memory://{root}/pets"
    try:
        for split, n in (("train", 12), ("test", 5)):
            tfr.write_dataset(_columns(n), f"{url}/{split}", num_shards=2, progress=False)
        tfr.tfds.write_metadata(url, features={"label": tfr.tfds.ClassLabel(names=NAMES)})
        assert fs.exists(f"{root}/pets/dataset_info.json")
        info = tfr.tfds.info(url)
        assert info.splits == {"train": 12, "test": 5} and info.labels == {"label": NAMES}
        assert info.files("test")[0] == f"{url}/test-00000-of-00002.tfrecord"
        assert sorted(int(r["id"]) for r in tfr.load(url, "test")) == list(range(5))
    finally:
        fs.rm(root, recursive=True)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"features": {"nope": tfr.tfds.Text()}}, ValueError, "'nope' is not a feature"),
        ({"features": {"x": tfr.tfds.ClassLabel(NAMES)}}, ValueError, "'x'.*int64.*float32"),
        ({"features": {"label": tfr.tfds.Image()}}, ValueError, "'label'.*bytes.*int64"),
        ({"features": {"name": "text"}}, TypeError, "'name'.*ClassLabel, Text or Image"),
        ({"features": {"x": tfr.tfds.Text()}}, ValueError, "'x'"),
        ({"features": {"label": tfr.tfds.ClassLabel(["a", "a", "b"])}}, ValueError, "repeat"),
        ({"features": {"label": tfr.tfds.ClassLabel(["a", " b", "c"])}}, ValueError, "' b'"),
        ({"features": {"label": tfr.tfds.ClassLabel(["a\nb"])}}, ValueError, "labels file"),
        ({"name": "9lives"}, ValueError, "dataset name '9lives'"),
        ({"version": "1.0"}, ValueError, "version '1.0'"),
        ({"supervised_keys": ("x", "nope")}, ValueError, "supervised_keys"),
        ({"schema": {"s": tfr.SparseFeature("i", "v", "float32", 4)}}, ValueError, "'s'.*Sparse"),
        ({"schema": {"d": tfr.FixedLen([], "int64", default=0)}}, ValueError, "'d'.*default"),
        (
            {"schema": {"a": tfr.FixedLen([], "int64"), "a/b": tfr.FixedLen([], "int64")}},
            ValueError,
            "'a/b'.*'a' is a feature",
        ),
        (
            {
                "schema": {"m": tfr.FixedLen([2, 2], "int64")},
                "features": {"m": tfr.tfds.ClassLabel(NAMES)},
            },
            ValueError,
            "'m'.*shape",
        ),
    ],
)
def test_bad_descriptions_are_refused(tmp_path: Path, kwargs, error, match) -> None:
    _write(tmp_path)
    with pytest.raises(error, match=match):
        tfr.tfds.write_metadata(tmp_path, **kwargs)
    assert not (tmp_path / "dataset_info.json").exists()


def test_splits_tfds_cannot_read_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no split to describe"):
        tfr.tfds.write_metadata(tmp_path)
    gz = tfr.write_dataset(_columns(4), tmp_path / "gz" / "train", compression="gzip")
    with pytest.raises(ValueError, match=r"'train'.*gzip-compressed"):
        tfr.tfds.write_metadata(tmp_path / "gz")
    with pytest.raises(ValueError, match=r"'train'.*not in"):
        tfr.tfds.write_metadata(tmp_path, {"train": gz})
    _write(tmp_path / "ok")
    with pytest.raises(ValueError, match="split name 'my split'"):
        tfr.tfds.write_metadata(tmp_path / "ok", {"my split": tmp_path / "ok" / "train"})
    with pytest.raises(FileNotFoundError, match="no manifest and no shards"):
        tfr.tfds.write_metadata(tmp_path / "ok", {"extra": tmp_path / "ok" / "extra"})
    tfr.write_dataset({"x": np.arange(3)}, tmp_path / "mixed" / "train", progress=False)
    tfr.write_dataset({"x": np.ones(3, np.float32)}, tmp_path / "mixed" / "test", progress=False)
    with pytest.raises(ValueError, match="differ in feature 'x'"):
        tfr.tfds.write_metadata(tmp_path / "mixed")


def test_reading_what_is_not_a_tfds_dataset(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"dataset_info.json") as err:
        tfr.tfds.info(tmp_path)
    assert err.value.filename == str(tmp_path / "dataset_info.json")
    with pytest.raises(FileNotFoundError, match=r"schema\.json.*dataset_info\.json"):
        tfr.load(tmp_path, "train")
    info = {"name": "x", "version": "1.0.0", "fileFormat": "array_record", "splits": []}
    (tmp_path / "dataset_info.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="array_record"):
        tfr.load(tmp_path, "train")


def test_features_without_an_example_form_are_named(tmp_path: Path) -> None:
    info = {"name": "x", "version": "1.0.0", "splits": [{"name": "train", "shardLengths": ["1"]}]}
    (tmp_path / "dataset_info.json").write_text(json.dumps(info))
    features = {
        "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
        "featuresDict": {
            "features": {
                "sound": {
                    "pythonClassName": "tensorflow_datasets.core.features.audio_feature.Audio",
                    "audio": {"dtype": "int64", "shape": {"dimensions": ["-1"]}},
                },
            }
        },
    }
    (tmp_path / "features.json").write_text(json.dumps(features))
    with pytest.raises(ValueError, match="'sound': Audio"):
        tfr.tfds.schema(tmp_path)
    info["splits"][0]["name"] = "train"
    features["featuresDict"]["features"] = {
        "grid": {
            "pythonClassName": "tensorflow_datasets.core.features.tensor_feature.Tensor",
            "tensor": {"dtype": "int64", "shape": {"dimensions": ["2", "-1"]}},
        }
    }
    (tmp_path / "features.json").write_text(json.dumps(features))
    with pytest.raises(ValueError, match=r"'grid'.*\(2, -1\)"):
        tfr.tfds.schema(tmp_path)
