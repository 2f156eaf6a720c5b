"""Datasets from strangers are data, never instructions: planted sidecars, path escapes,
pickles, absurd shapes, image bombs and lying indexes, each refused with a typed error
before it can make tfrecordkit read outside the dataset, run code, or exhaust memory."""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr
from tfrecordkit import _core
from tfrecordkit.io.sidecars import read_sidecar

ESCAPES = [
    ("../secret/private.tfrecord", "path separator"),
    ("/etc/passwd", "path separator"),
    ("..", "names a directory"),
    ("s3://other-bucket/x.tfrecord", "URL"),
    ("file:///etc/passwd", "URL"),
    ("sub\\..\\..\\x.tfrecord", "path separator"),
    ("C:x.tfrecord", "drive"),
    ("", "empty"),
    ("x\x00.tfrecord", "control character"),
]


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A dataset directory with one real shard, and a private file beside it."""
    secret = tmp_path / "secret"
    secret.mkdir()
    with tfr.RecordWriter(secret / "private.tfrecord") as w:
        w.write(tfr.encode_example({"secret": b"do not read"}))
    data = tmp_path / "data"
    data.mkdir()
    tfr.write_dataset({"x": np.arange(4)}, data / "train", num_shards=1, progress=False)
    return data


def _manifest(data: Path, file: object) -> None:
    path = data / "train.manifest.json"
    manifest = json.loads(path.read_text())
    manifest["shards"][0]["file"] = file
    path.write_text(json.dumps(manifest))


@pytest.mark.parametrize(("name", "rule"), ESCAPES)
def test_a_manifest_naming_files_outside_its_dataset_is_refused(planted, name, rule):
    _manifest(planted, name)
    with pytest.raises(tfr.UnsafePathError, match=rule) as info:
        tfr.Manifest.load(planted / "train")
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, tfr.SidecarError)
    assert err.path == str(planted / "train.manifest.json")
    assert "shard 0" in str(err) and "root:" not in str(err)
    # The readers that take a dataset through its manifest refuse it the same way.
    (planted / "schema.json").write_text(tfr.Schema({"x": tfr.FixedLen([], "int64")}).to_json())
    with pytest.raises(tfr.UnsafePathError):
        tfr.load(planted, "train")


def test_a_manifest_entry_that_is_not_a_name_is_refused(planted):
    _manifest(planted, ["../x"])
    with pytest.raises(tfr.SidecarError, match="shard 0"):
        tfr.Manifest.load(planted / "train")


def test_a_refused_name_is_quoted_short_and_escaped(planted):
    _manifest(planted, "../" + "\x1b[31m" + "a" * 500)
    with pytest.raises(tfr.UnsafePathError) as info:
        tfr.Manifest.load(planted / "train")
    message = str(info.value)
    assert "\x1b" not in message and "a" * 40 not in message
    assert r"\x1b[31m" in message


@pytest.mark.parametrize(
    "manifest",
    [
        [],
        {"format": "tfrecordkit.manifest/1"},
        {"format": "tfrecordkit.manifest/1", "shards": {}},
        {"format": "tfrecordkit.manifest/1", "shards": [1]},
        {"format": "tfrecordkit.manifest/1", "shards": [], "compression": "zstd"},
        {"format": "tfrecordkit.manifest/1", "shards": [], "prefix": 3},
        {"format": "tfrecordkit.manifest/1", "shards": [], "schema": []},
        {
            "format": "tfrecordkit.manifest/1",
            "shards": [{"file": "a", "records": -1, "bytes": 0, "crc32c": ""}],
        },
        {
            "format": "tfrecordkit.manifest/1",
            "shards": [{"file": "a", "records": True, "bytes": 0, "crc32c": ""}],
        },
    ],
)
def test_malformed_manifests_are_sidecar_errors(tmp_path, manifest):
    (tmp_path / "m.manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(tfr.SidecarError) as info:
        tfr.Manifest.load(tmp_path / "m")
    assert info.value.path == str(tmp_path / "m.manifest.json")


def test_a_manifest_that_is_not_json_is_a_sidecar_error(tmp_path):
    (tmp_path / "m.manifest.json").write_bytes(b"\xff\xfe not json")
    with pytest.raises(tfr.SidecarError, match="not JSON"):
        tfr.Manifest.load(tmp_path / "m")
    (tmp_path / "m.manifest.json").write_text("[" * 100_000)
    with pytest.raises(tfr.SidecarError, match="not JSON"):
        tfr.Manifest.load(tmp_path / "m")


def _tfds(directory: Path, template: str, split: str = "train") -> None:
    """A TFDS directory of one int64 feature; its one shard is the dataset's own."""
    directory.mkdir(exist_ok=True)
    with tfr.RecordWriter(directory / "d-train.tfrecord-00000-of-00001") as w:
        w.write(tfr.encode_example({"label": 1}))
    info = {
        "name": "d",
        "version": "1.0.0",
        "splits": [{"name": split, "shardLengths": ["1"], "filepathTemplate": template}],
    }
    (directory / "dataset_info.json").write_text(json.dumps(info))
    features = {
        "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
        "featuresDict": {
            "features": {
                "label": {
                    "pythonClassName": "tensorflow_datasets.core.features.tensor_feature.Tensor",
                    "tensor": {"shape": {}, "dtype": "int64", "encoding": "none"},
                }
            }
        },
    }
    (directory / "features.json").write_text(json.dumps(features))


def test_the_tfds_template_of_the_dataset_itself_reads(tmp_path):
    _tfds(tmp_path / "d", "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}")
    files = tfr.tfds.info(tmp_path / "d").files("train")
    assert files == [str(tmp_path / "d" / "d-train.tfrecord-00000-of-00001")]
    assert [int(e["label"]) for e in tfr.load(tmp_path / "d", "train")] == [1]


@pytest.mark.parametrize(
    ("template", "split", "error", "match"),
    [
        ("../secret/private.tfrecord", "train", tfr.UnsafePathError, "path separator"),
        ("/etc/passwd", "train", tfr.UnsafePathError, "path separator"),
        ("s3://other/{SHARD_X_OF_Y}", "train", tfr.UnsafePathError, "URL"),
        ("{SPLIT}-{SHARD_X_OF_Y}", "../../secret/x", tfr.UnsafePathError, "path separator"),
        ("{SPLIT.__class__.__mro__}", "train", tfr.SidecarError, "stray brace"),
        ("{DATASET.__init__.__globals__}", "train", tfr.SidecarError, "stray brace"),
        ("{0}{x}", "train", tfr.SidecarError, "unknown field|stray brace"),
        ("{HOME}", "train", tfr.SidecarError, "unknown field"),
    ],
)
def test_tfds_templates_are_filled_not_evaluated_and_stay_inside(
    tmp_path, template, split, error, match
):
    _tfds(tmp_path / "d", template, split)
    with pytest.raises(error, match=match) as info:
        tfr.tfds.info(tmp_path / "d")
    assert info.value.path == str(tmp_path / "d" / "dataset_info.json")
    with pytest.raises(error):
        tfr.load(tmp_path / "d", split)


def test_tfds_class_label_keys_stay_inside(tmp_path):
    _tfds(tmp_path / "d", "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}")
    features = json.loads((tmp_path / "d" / "features.json").read_text())
    features["featuresDict"]["features"] = {
        "..\\..\\secret\\x": {
            "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
            "classLabel": {"numClasses": "2"},
        }
    }
    (tmp_path / "d" / "features.json").write_text(json.dumps(features))
    with pytest.raises(tfr.UnsafePathError, match="ClassLabel feature") as info:
        tfr.tfds.info(tmp_path / "d")
    assert info.value.path == str(tmp_path / "d" / "features.json")


@pytest.mark.parametrize(
    "meta",
    [
        [],
        {"splits": [{"name": 3}]},
        {"splits": [{"name": "train", "shardLengths": ["x"]}]},
        {"splits": [{"name": "train", "shardLengths": [-1]}]},
        {"splits": [{"name": "train", "filepathTemplate": ["a"]}]},
        {"splits": "train"},
        {"name": 5, "splits": []},
    ],
)
def test_malformed_tfds_metadata_is_a_sidecar_error(tmp_path, meta):
    _tfds(tmp_path / "d", "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}")
    (tmp_path / "d" / "dataset_info.json").write_text(json.dumps(meta))
    with pytest.raises(tfr.SidecarError):
        tfr.tfds.info(tmp_path / "d")


def test_deeply_nested_tfds_features_are_a_sidecar_error(tmp_path):
    _tfds(tmp_path / "d", "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}")
    deep = '{"sequence": {"feature": ' * 5000 + "{}" + "}}" * 5000
    (tmp_path / "d" / "features.json").write_text(deep)
    with pytest.raises(tfr.SidecarError):
        tfr.tfds.info(tmp_path / "d")


@pytest.mark.parametrize("dimension", ["1e400", "2.7", "true", '"12abc"', '"99999999999999999999"'])
def test_a_tfds_size_that_is_not_a_whole_number_is_a_sidecar_error(tmp_path, dimension):
    _tfds(tmp_path / "d", "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}")
    path = tmp_path / "d" / "features.json"
    text = path.read_text().replace('"shape": {}', f'"shape": {{"dimensions": [{dimension}]}}')
    path.write_text(text)
    with pytest.raises(tfr.SidecarError, match="feature 'label': a dimension is not a whole"):
        tfr.tfds.info(tmp_path / "d")


def test_a_tfds_sidecar_linked_out_of_its_dataset_is_never_read(tmp_path):
    _tfds(tmp_path / "d", "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}")
    features = json.loads((tmp_path / "d" / "features.json").read_text())
    features["featuresDict"]["features"]["label"] = {
        "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
        "classLabel": {"numClasses": "2"},
    }
    (tmp_path / "d" / "features.json").write_text(json.dumps(features))
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0\n")
    (tmp_path / "d" / "label.labels.txt").symlink_to(secret)
    with pytest.raises(tfr.UnsafePathError, match="a link out of the dataset's directory"):
        tfr.tfds.info(tmp_path / "d")
    # A link inside the dataset is the dataset's own file.
    (tmp_path / "d" / "label.labels.txt").unlink()
    (tmp_path / "d" / "names.txt").write_text("cat\ndog\n")
    (tmp_path / "d" / "label.labels.txt").symlink_to(tmp_path / "d" / "names.txt")
    assert tfr.tfds.info(tmp_path / "d").labels == {"label": ["cat", "dog"]}


@pytest.mark.parametrize("name", ["dataset_info.json", "features.json"])
def test_a_tfds_sidecar_that_is_a_device_or_too_large_is_refused(tmp_path, name):
    _tfds(tmp_path / "d", "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}")
    (tmp_path / "d" / name).unlink()
    (tmp_path / "d" / name).symlink_to("/dev/zero")
    with pytest.raises(tfr.SidecarError, match="not a regular file"):
        tfr.tfds.info(tmp_path / "d")
    (tmp_path / "d" / name).unlink()
    (tmp_path / "d" / name).write_text(" " * 2000 + "{}")
    with pytest.raises(tfr.SidecarError, match="larger than the 1,000 bytes") as info:
        read_sidecar(str(tmp_path / "d" / name), limit=1000)
    assert info.value.path == str(tmp_path / "d" / name)


def test_a_manifest_or_index_that_is_a_device_is_not_read(tmp_path):
    m = tfr.write_dataset({"i": np.arange(5)}, str(tmp_path / "train"), progress=False)
    shard = m.files[0]
    os.remove(shard + ".idx")
    os.symlink("/dev/zero", shard + ".idx")
    assert tfr.count(shard) == 5
    os.remove(m.path)
    os.symlink("/dev/zero", m.path)
    with pytest.raises(tfr.SidecarError, match="not a regular file"):
        tfr.Manifest.load(m.path)


def test_record_counts_a_tfds_shard_cannot_hold_are_not_believed(tmp_path):
    _tfds(tmp_path / "d", "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}")
    path = tmp_path / "d" / "dataset_info.json"
    honest = json.loads(path.read_text())
    for claimed in ("9223372036854775807", "5"):
        honest["splits"][0]["shardLengths"] = [claimed]
        path.write_text(json.dumps(honest))
        ds = tfr.load(tmp_path / "d", "train")
        assert ds.cardinality() == tfr.UNKNOWN_CARDINALITY
        assert sum(1 for _ in ds) == 1


class _Planted:
    """Unpickling this runs a command that leaves a marker file."""

    marker = ""

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_cache_pickle_is_never_loaded(tmp_path):
    marker = tmp_path / "code-ran"
    planted = _Planted()
    planted.marker = str(marker)
    cache = tmp_path / "cache.bin"
    cache.write_bytes(pickle.dumps(planted))
    shard = tmp_path / "x.tfrecord"
    with tfr.RecordWriter(shard) as w:
        w.write(tfr.encode_example({"a": 1}))
    ds = tfr.Dataset.from_files([str(shard)]).map(lambda r: r).cache(str(cache))
    with pytest.raises(tfr.DataLossError) as info:
        list(ds)
    assert info.value.path == str(cache)
    assert not marker.exists()
    # A TFRecord file of records that are not cached elements is refused too.
    with tfr.RecordWriter(cache) as w:
        w.write(pickle.dumps(planted))
    with pytest.raises(tfr.DataLossError, match="not a cache file") as info:
        list(ds)
    assert info.value.record_index == 0 and not marker.exists()


def test_the_cache_after_a_map_round_trips_every_element_kind(tmp_path):
    shard = tmp_path / "x.tfrecord"
    with tfr.RecordWriter(shard) as w:
        for i in range(5):
            w.write(tfr.encode_example({"a": i, "v": list(range(i)), "s": f"r{i}"}))
    schema = {
        "a": tfr.FixedLen([], "int64"),
        "v": tfr.VarLen("int64"),
        "s": tfr.FixedLen([], "bytes"),
    }

    def extend(e):
        return {
            **e,
            "f": np.float32(e["a"]) / 3,
            "m": np.arange(6, dtype=np.uint16).reshape(2, 3) + e["a"],
            "t": (int(e["a"]) * 2**70, "x", b"y", None, 0.1, True, [1.5]),
            "b": np.array([b"p", b"q"], dtype=object),
        }

    def pipeline():
        return (
            tfr.Dataset.from_files([str(shard)])
            .parse(schema)
            .map(extend)
            .cache(str(tmp_path / "c.bin"))
            .batch(2)
        )

    first = list(pipeline())
    assert (tmp_path / "c.bin").exists()
    again = list(pipeline())  # replayed from the file by a new pipeline
    assert len(first) == len(again) == 3
    for x, y in zip(first, again, strict=True):
        assert x.keys() == y.keys()
        for k in x:
            a, b = x[k], y[k]
            if isinstance(a, tfr.Ragged):
                assert a == b
            elif isinstance(a, tuple):
                assert [np.asarray(u).tolist() for u in a] == [np.asarray(u).tolist() for u in b]
            else:
                assert a.dtype == b.dtype and a.tolist() == b.tolist()


def test_the_cache_refuses_what_it_cannot_write_and_leaves_nothing(tmp_path):
    shard = tmp_path / "x.tfrecord"
    with tfr.RecordWriter(shard) as w:
        w.write(b"r")
    cache = tmp_path / "c.bin"
    ds = tfr.Dataset.from_files([str(shard)]).map(lambda r: {"f": len}).cache(str(cache))
    with pytest.raises(TypeError, match=r"builtin_function_or_method.*without a filename"):
        list(ds)
    assert list(tmp_path.iterdir()) == [shard]
    in_memory = tfr.Dataset.from_files([str(shard)]).map(lambda r: {"f": len}).cache()
    assert list(in_memory) == list(in_memory) == [{"f": len}]


ABSURD = {"kind": "fixed", "dtype": "float32", "shape": [2147483648, 2147483648], "default": 0.0}


def test_an_absurd_manifest_schema_is_refused_when_loaded(planted):
    path = planted / "train.manifest.json"
    manifest = json.loads(path.read_text())
    manifest["schema"] = {"x": ABSURD}
    path.write_text(json.dumps(manifest))
    with pytest.raises(tfr.SchemaError, match=r"'x'.*values per Example") as info:
        tfr.Manifest.load(planted / "train")
    assert info.value.key == "x"


@pytest.mark.parametrize(
    "spec",
    [
        ABSURD,
        {"kind": "fixed", "dtype": "int64", "shape": [2**31]},
        {"kind": "fixed", "dtype": "int64", "shape": [2**64, 2**64]},
        {"kind": "sequence", "dtype": "int64", "shape": [2**16, 2**16]},
        {"kind": "sparse", "dtype": "int64", "index_key": ["i"], "value_key": "v", "size": [2**40]},
        {"kind": "fixed", "dtype": "bytes", "shape": [], "default": [10**12]},
        {"kind": "fixed", "dtype": "int64", "shape": [], "default": [2**70]},
        {"kind": "fixed", "dtype": "int64", "shape": "[]"},
        {"kind": "ragged", "dtype": "int64", "partitions": [{"kind": "RowSplits", "key": 5}]},
        {"kind": "ragged", "dtype": "int64", "partitions": [{"kind": "Nope"}]},
        {"kind": "ragged", "dtype": "int64", "partitions": [{"kind": "UniformRowLength"}]},
        {"kind": "fixed", "dtype": "complex", "shape": []},
        {"dtype": "int64"},
        [],
    ],
)
def test_schema_json_errors_are_schema_errors_naming_the_feature(spec):
    with pytest.raises(tfr.SchemaError) as info:
        tfr.Schema.from_dict({"x": spec})
    assert "'x'" in str(info.value)


def test_schema_text_that_is_not_json_is_a_schema_error():
    with pytest.raises(tfr.SchemaError, match="not"):
        tfr.Schema.from_json("{" * 100_000)


def test_the_native_schema_refuses_absurd_shapes_too():
    with pytest.raises(tfr.SchemaError, match="values an Example can hold"):
        _core.CompiledSchema([("x", tfr.FixedLen([2**31, 2**31], "float32", default=0.0))])


def test_defaults_and_padding_fill_a_bounded_number_of_values():
    assert _core.MAX_FILL == 2**28 and _core.MAX_VALUES == 2**31 - 1
    schema = tfr.Schema({"x": tfr.FixedLen([2**29], "float32", default=0.0)})
    with pytest.raises(tfr.SchemaError, match="parse smaller batches") as info:
        tfr.parse_examples([tfr.encode_example({"other": 1})], schema)
    assert info.value.key == "x"
    # One long record cannot make a batch pad every other record to its length.
    long = tfr.encode_example({"s": np.zeros(300_000, np.int64)})
    batch = [long] + [tfr.encode_example({"s": []})] * 1000
    seq = {"s": tfr.FixedLenSequence([], "int64", allow_missing=True)}
    with pytest.raises(tfr.SchemaError, match="padding to the longest record"):
        tfr.parse_examples(batch, seq)
    _, lists, _ = tfr.parse_sequence_example(
        [tfr.encode_sequence_example({}, {"f": [[1]] * 3})], None, {"f": seq["s"]}
    )
    assert lists["f"].tolist() == [[1, 1, 1]]
    steps = tfr.encode_sequence_example({}, {"f": [[1]] * 300_000})
    empty = tfr.encode_sequence_example({}, {"f": []})
    with pytest.raises(tfr.SchemaError, match="padding to the longest record"):
        tfr.parse_sequence_example([steps] + [empty] * 1000, None, {"f": seq["s"]})
    # A long bytes default counts by its bytes: 2,000,000 padded values of 1,000 bytes.
    words = tfr.encode_sequence_example({}, {"w": [[b"a"]] * 2000})
    nothing = tfr.encode_sequence_example({}, {"w": []})
    bomb = {"w": tfr.FixedLenSequence([], "bytes", allow_missing=True, default=b"x" * 1000)}
    with pytest.raises(tfr.SchemaError, match="padding to the longest record"):
        tfr.parse_sequence_example([words] + [nothing] * 1000, None, bomb)
    _, lists, _ = tfr.parse_sequence_example([words, nothing], None, bomb)
    assert lists["w"].shape == (2, 2000) and lists["w"][1, 0] == b"x" * 1000


def test_a_panic_reaches_python_as_an_internal_error_naming_the_call():
    with pytest.raises(tfr.InternalError, match=r"_core\._selftest_panic: boom") as info:
        _core._selftest_panic("boom")
    assert isinstance(info.value, Exception) and isinstance(info.value, tfr.TFRecordError)


def _python_facing_functions(source: str) -> list[tuple[str, str]]:
    """``(name, body start)`` of each #[pyfunction] and #[pymethods] method in Rust
    ``source`` that returns a PyResult (the calls that can fail, and so panic)."""
    blocks = [(m.end(), m.group(1)) for m in re.finditer(r"#\[pymethods\]\s*impl\s+(\w+)", source)]
    found = []
    for m in re.finditer(r"((?:#\[[^\]]*\]\s*)*)(?:pub )?fn (\w+)", source):
        attrs, name = m.group(1), m.group(2)
        in_methods = any(
            start < m.start() and not re.search(r"\n\}", source[start : m.start()])
            for start, _ in blocks
        )
        if "pyfunction" not in attrs and not in_methods:
            continue
        body = source.index("{", source.index(")", m.end()))
        signature = source[m.end() : body]
        if "PyResult<" in signature:
            found.append((name, source[body + 1 : body + 80]))
    return found


def test_every_python_facing_call_that_can_fail_is_guarded():
    sources = Path(__file__).parents[2] / "crates" / "python" / "src"
    checked = 0
    for path in sorted(sources.glob("*.rs")):
        for name, body in _python_facing_functions(path.read_text()):
            assert body.lstrip().startswith("crate::errors::guard("), f"{path.name}: {name}"
            checked += 1
    assert checked > 30


def _bomb_png(width: int, height: int) -> bytes:
    """A valid grayscale PNG of ``width`` x ``height`` zero pixels, compressed row by row
    (a few MB for 30000 x 30000: 900 MB of pixels)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    z = zlib.compressobj(9)
    row = bytes(width + 1)
    parts = [z.compress(row) for _ in range(height)] + [z.flush()]
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
    return png + chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b"")


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bomb") / "bomb.png"
    path.write_bytes(_bomb_png(30000, 30000))
    return path


def _peak_rss_mib(code: str) -> tuple[str, float]:
    """Runs ``code`` in a fresh interpreter; its output and peak RSS in MiB (``VmHWM``,
    which starts anew at exec, unlike ``ru_maxrss``, which keeps the forking parent's)."""
    script = code + textwrap.dedent(
        """
        with open("/proc/self/status") as status:
            print(next(line.split()[1] for line in status if line.startswith("VmHWM")))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    return "\n".join(out[:-2]), int(out[-2]) / 1024


def test_an_image_bomb_is_refused_by_decode_image_in_bounded_memory(bomb):
    assert bomb.stat().st_size < 4 << 20
    out, peak = _peak_rss_mib(
        textwrap.dedent(
            f"""
            import tfrecordkit as tfr
            try:
                tfr.image.decode(open({str(bomb)!r}, "rb").read())
            except tfr.ImageDecodeError as err:
                print("refused:", err)
            """
        )
    )
    assert out.startswith("refused:") and "30000" in out
    assert peak < 400, f"peak RSS {peak:.0f} MiB"


def test_an_image_bomb_is_discarded_by_convert_in_bounded_memory(bomb, tmp_path):
    csv = tmp_path / "table.csv"
    csv.write_text(f"split,image_uri,label\nTRAIN,{bomb},cat\n")
    out, peak = _peak_rss_mib(
        textwrap.dedent(
            f"""
            import tfrecordkit as tfr
            summary = tfr.convert({str(csv)!r}, {str(tmp_path / "out")!r}, progress=False)
            print(summary.discarded, summary.rows)
            """
        )
    )
    assert out.split()[0] == "1"
    reason = (tmp_path / "out" / "discarded.csv").read_text()
    assert "bomb.png" in reason
    assert peak < 400, f"peak RSS {peak:.0f} MiB"


def test_a_lying_index_is_data_loss(tmp_path):
    path = tmp_path / "x.tfrecord"
    with tfr.RecordWriter(path, index=True) as w:
        w.write_many([b"a" * 10, b"b" * 10])
    size = path.stat().st_size
    for lie in [f"0 {2**40}\n26 26\n", f"0 26\n{size * 4} 26\n", f"{2**62} {2**62}\n"]:
        Path(str(path) + ".idx").write_text(lie)
        with pytest.raises(tfr.DataLossError):
            index = tfr.RecordIndex(path)
            [index[i] for i in range(len(index))]
        with pytest.raises(tfr.DataLossError):
            ds = tfr.IndexedDataset(str(path))
            [ds[i] for i in range(len(ds))]


def test_an_index_that_is_not_a_table_of_numbers_is_data_loss_naming_it(tmp_path):
    path = tmp_path / "x.tfrecord"
    with tfr.RecordWriter(path, index=True) as w:
        w.write_many([b"a" * 10, b"b" * 10])
    sidecar = str(path) + ".idx"
    for text, why in [
        ("0 26\n26", "partial line"),
        ("0 26\n26 x\n", "other than numbers"),
        ("0 26\n26 1e3\n", "other than numbers"),
        (f"0 26\n26 {2**64}\n", "other than numbers"),
        ("0 26\n-26 26\n", "negative numbers"),
        ("\x00\xff" * 1000, "other than numbers"),
    ]:
        Path(sidecar).write_bytes(text.encode("latin-1"))
        with pytest.raises(tfr.DataLossError, match=why) as info:
            tfr.IndexedDataset(str(path))
        assert info.value.path == sidecar
        # Where the index only helps, a bad one is not used: the count is not known.
        assert tfr.Dataset.from_files(str(path)).cardinality() == tfr.UNKNOWN_CARDINALITY
        # Ranges are planned from the sidecar's last line alone; reading them needs the
        # whole of it, which names the sidecar, or reads every record once.
        ranges = tfr.byte_ranges(str(path), target_bytes=10)
        try:
            got = list(tfr.read_records(ranges))
        except tfr.DataLossError as err:
            assert err.path == sidecar and why in str(err)
        else:
            assert got == [b"a" * 10, b"b" * 10]


def test_a_lying_index_cannot_steer_a_byte_range(tmp_path):
    """Offsets in the middle of records, past the end, or out of order: each range is a
    typed error or reads records that really are there, never a crash, a hang or an
    allocation the file does not hold."""
    path = tmp_path / "x.tfrecord"
    with tfr.RecordWriter(path, index=True) as w:
        w.write_many([bytes([i]) * 40 for i in range(50)])
    size = path.stat().st_size
    everything = list(tfr.read_records(path))
    lies = {
        "mid-record": "0 56\n5 56\n56 56\n",
        "past the end": f"0 56\n{size * 8} 56\n",
        "out of order": f"{size - 56} 56\n0 56\n",
        "huge": f"0 56\n{2**62} {2**62}\n",
        "negative": "0 56\n-56 56\n",
    }
    for what, lie in lies.items():
        Path(str(path) + ".idx").write_text(lie)
        whole = tfr.byte_ranges(str(path), target_bytes=100)
        assert whole == [str(path)], what  # the sidecar does not end where the file does
        for start, end in [(1, size), (3, 60), (0, 2**40)]:
            part = tfr.ByteRange(str(path), start, end)
            try:
                got = list(tfr.read_records(part))
            except (tfr.DataLossError, ValueError) as err:
                assert str(path) in str(err) or isinstance(err, ValueError), what
            else:
                assert all(r in everything for r in got), what


def test_a_foreign_file_is_described_by_a_short_escaped_prefix(tmp_path):
    path = tmp_path / "notes.tfrecord"
    path.write_text("\u202e" + "secret " * 100 + "\n", encoding="utf-8")
    with pytest.raises(tfr.NotTFRecordError) as info:
        list(tfr.read_records(path))
    message = str(info.value)
    assert "\u202e" not in message and "secret " * 6 not in message
    quoted = re.search(r'text: "(.*)"', message)
    assert quoted is not None and len(quoted.group(1)) <= 40  # 32 characters, escaped


def test_value_row_ids_cannot_make_a_record_allocate_without_bound(tmp_path):
    # 30 bytes whose last row id claims 2^40 rows: refused before any row is made.
    ragged = tfr.RaggedFeature
    schema = {"x": ragged("int64", "v", partitions=[ragged.ValueRowIds("p")])}
    path = tmp_path / "rows.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"v": [1, 2, 3], "p": [0, 0, 5]}))
        w.write(tfr.encode_example({"v": [1, 2, 3], "p": [0, 0, 1 << 40]}))
    with pytest.raises(tfr.SchemaError, match="more empty rows than the 16777216 a batch may"):
        list(tfr.read_examples(str(path), schema, 16))
    with pytest.raises(tfr.SchemaError, match=r'"x".*record 1'):
        list(tfr.Dataset.from_files(str(path)).parse(schema).batch(2))
    # Rows skipped to within the bound are TensorFlow's: empty rows up to the last id.
    first = next(tfr.read_records(str(path)))
    assert tfr.parse_example(first, schema)["x"].row_splits.tolist() == [0, 2, 2, 2, 2, 2, 3]
