"""tfr.convert: splits, images, labels, discarded rows, and its front doors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tfrecordkit as tfr
from click.testing import CliRunner
from PIL import Image
from tfrecordkit.cli import main
from tfrecordkit.conversion import contact_sheet


def split_examples(out, split):
    return [tfr.decode_example(r) for r in tfr.read_records(str(out / f"{split}-*"))]


def test_csv_conversion(table, tmp_path, helpers):
    labels = helpers.labels
    out = tmp_path / "out"
    summary = tfr.convert(table.csv, out, progress=False)
    assert summary.rows == {"TRAIN": 18, "VALIDATION": 6, "TEST": 6}
    assert summary.discarded == 5
    assert summary.labels == sorted(labels)
    assert (out / "labels.txt").read_text().splitlines() == sorted(labels)
    train = split_examples(out, "train")
    for ex, row in zip(train, table.rows[:18], strict=True):
        with Image.open(row["image_uri"]) as img:
            assert (ex["image_width"][0], ex["image_height"][0]) == img.size
        assert ex["image"][0] == Path(row["image_uri"]).read_bytes()  # original bytes kept
        assert ex["label_text"] == [row["label"].encode()]
        assert ex["label"][0] == sorted(labels).index(row["label"])
        assert ex["image_format"][0] in (b"jpeg", b"png") and ex["image_channels"][0] == 3
    with open(out / "discarded.csv", newline="") as f:
        discarded = list(csv.DictReader(f))
    reasons = [d["reason"] for d in discarded]
    assert [int(d["row"]) for d in discarded] == list(range(30, 35))
    assert "No such file" in reasons[0] and "undecodable" in reasons[1]
    assert "unknown split" in reasons[2] and "does not occur in TRAIN" in reasons[3]
    assert reasons[4] == "missing label"
    schema = tfr.Schema.from_json((out / "schema.json").read_text())
    assert schema["image_height"] == tfr.FixedLen([], "int64")
    assert json.loads((out / "summary.json").read_text())["discarded"] == 5
    assert tfr.count(str(out / "test-*")) == 6


def test_integer_labels_and_extra_columns(tmp_path, helpers):
    images = helpers.make_images(tmp_path, 6)
    frame = pd.DataFrame(
        {
            "where": ["train", "train", "train", "test", "test", "validation"],
            "path": [str(p) for p in images],
            "y": [3, 1, 2, 7, 3, 1],
            "weight": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0],
            "note": list("abcdef"),
        }
    )
    roles = {
        "where": "split",
        "path": "image_uri",
        "y": "label",
        "weight": "float",
        "note": "string",
    }
    summary = tfr.convert(frame, tmp_path / "o", roles=roles, progress=False)
    assert summary.labels is None and summary.rows["TEST"] == 2
    test = split_examples(tmp_path / "o", "test")
    assert [e["label"][0] for e in test] == [7, 3]
    assert [e["weight"][0] for e in test] == [2.0, 2.5]
    assert [e["note"] for e in test] == [[b"d"], [b"e"]]
    assert "label_text" not in test[0]

    # schema=, TFRecorder's name for the roles, still works, with a DeprecationWarning.
    with pytest.warns(DeprecationWarning, match="roles="):
        again = tfr.convert(frame, tmp_path / "o2", schema=roles, progress=False)
    assert again.rows == summary.rows
    with pytest.raises(TypeError, match="roles="):
        tfr.convert(frame, tmp_path / "o3", roles=roles, schema=roles, progress=False)


def test_accessor_directory_tree_and_resize(tmp_path, helpers):
    root = tmp_path / "tree"
    for split, label in [("train", "a"), ("train", "b"), ("test", "a")]:
        d = root / split / label
        d.mkdir(parents=True)
        helpers.make_images(d, 2, seed=len(split) + ord(label))
    summary = tfr.convert(
        root, tmp_path / "t", image_size=(8, 12), image_format="png", progress=False
    )
    assert summary.rows == {"TRAIN": 4, "TEST": 2} and summary.labels == ["a", "b"]
    ex = split_examples(tmp_path / "t", "test")[0]
    assert (ex["image_height"][0], ex["image_width"][0], ex["image_format"][0]) == (8, 12, b"png")

    tfr.register_pandas_accessor()
    frame = pd.DataFrame(
        {"split": ["train"], "image_uri": [str(root / "train/a/img000.jpeg")], "label": ["a"]}
    )
    result = frame.tfrecord.to_tfrecord(tmp_path / "acc", progress=False)
    assert result.rows == {"TRAIN": 1}


def test_bad_arguments(table, tmp_path):
    with pytest.raises(ValueError, match="no column"):
        tfr.convert(table.csv, tmp_path / "x", roles={"nope": "split", "image_uri": "image_uri"})
    with pytest.raises(ValueError, match="role"):
        tfr.convert(table.csv, tmp_path / "x", roles={"split": "splitter"})
    with pytest.raises(ValueError, match=r"^roles need exactly one 'image_uri' column \(roles="):
        tfr.convert(table.csv, tmp_path / "x", roles={"split": "split", "label": "label"})
    with pytest.raises(ValueError, match="runner"):
        tfr.convert(table.csv, tmp_path / "x", runner="NoSuchRunner")
    assert not (tmp_path / "x").exists()  # refused before anything was written
    misspelt = {"temp_locaton": str(tmp_path / "beam")}
    with pytest.raises(ValueError, match="Beam has no option temp_locaton"):
        tfr.convert(table.csv, tmp_path / "x", runner="DirectRunner", pipeline_options=misspelt)
    assert not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match='"gzip" or "zlib"'):
        tfr.convert(table.csv, tmp_path / "z", compression="bz2")
    assert not (tmp_path / "z").exists()
    # Dataflow needs its options: they pass through to Beam's validation.
    with pytest.raises(ValueError, match="project"):
        tfr.convert(table.csv, tmp_path / "x", runner="DataflowRunner", pipeline_options={})
    tfr.convert(table.csv, tmp_path / "y", progress=False)
    with pytest.raises(FileExistsError):
        tfr.convert(table.csv, tmp_path / "y", progress=False)


def test_cli_convert(table, tmp_path):
    result = CliRunner().invoke(
        main, ["convert", str(table.csv), str(tmp_path / "c"), "-n", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["rows"]["TRAIN"] == 18 and summary["discarded"] == 5
    assert len(list((tmp_path / "c").glob("train-*-of-00002.tfrecord"))) == 2
    assert np.sum([tfr.count(str(tmp_path / "c" / f"{s}-*")) for s in ("train", "test")]) == 24


def test_cli_convert_prints_its_summary_once(table, tmp_path):
    result = CliRunner().invoke(main, ["convert", str(table.csv), str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("converted 30 rows"), lines


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_cli_convert_compresses_as_reshard_does(table, tmp_path, compression):
    out = tmp_path / compression
    args = ["convert", str(table.csv), str(out), "--compression", compression]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    shards = sorted(out.glob("train-*"))
    magic = {"gzip": b"\x1f\x8b", "zlib": b"\x78"}[compression]
    assert shards and all(p.read_bytes().startswith(magic) for p in shards)
    train = [tfr.decode_example(r) for r in tfr.read_records([str(p) for p in shards])]
    assert len(train) == 18 and all(ex["image"][0] for ex in train)


def test_inspect_writes_a_contact_sheet(table, tmp_path):
    tfr.convert(table.csv, tmp_path / "o", progress=False)
    sheet = tmp_path / "sheet.png"
    result = CliRunner().invoke(
        main, ["inspect", str(tmp_path / "o"), "--split", "train", "-n", "9", "--out", str(sheet)]
    )
    assert result.exit_code == 0, result.output
    with Image.open(sheet) as img:
        assert img.format == "PNG" and img.size == (3 * 136, 3 * 150)
        pixels = np.asarray(img.convert("RGB"))
    assert pixels.std() > 10  # images were drawn, not a blank page
    bad = CliRunner().invoke(main, ["inspect", str(tmp_path / "o"), "--split", "nope"])
    assert bad.exit_code == 1
    assert "has no split 'nope': its splits are test, train, validation" in bad.output
    missing = CliRunner().invoke(main, ["inspect", str(tmp_path / "nothing")])
    assert missing.output == f"error: no such directory: {tmp_path / 'nothing'}\n"
    # An existing file is replaced only with --overwrite; the default sheet is redrawn.
    sheet.write_bytes(b"someone's picture")
    args = ["inspect", str(tmp_path / "o"), "-n", "4", "--out", str(sheet)]
    taken = CliRunner().invoke(main, args)
    assert taken.exit_code == 1
    assert taken.output == f"error: a file is there already; pass --overwrite: {sheet}\n"
    assert sheet.read_bytes() == b"someone's picture"
    assert CliRunner().invoke(main, [*args, "--overwrite"]).exit_code == 0
    assert sheet.read_bytes().startswith(b"\x89PNG")
    for _ in range(2):
        assert CliRunner().invoke(main, ["inspect", str(tmp_path / "o"), "-n", "4"]).exit_code == 0
    assert (tmp_path / "o" / "sheet-train.png").read_bytes().startswith(b"\x89PNG")
    wrong = CliRunner().invoke(main, [*args[:-1], str(tmp_path / "sheet.jpg")])
    assert wrong.exit_code == 2 and "name it *.png" in wrong.output


def _png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` pixels, with one tiny data chunk."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 16))
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IEND", b"")


def test_inspect_draws_an_image_that_claims_too_many_pixels_as_a_grey_tile(table, tmp_path):
    # Pillow refuses the first outright and would decode the second into 300 MB.
    good = Path(table.rows[0]["image_uri"]).read_bytes()
    images = [_png_claiming(60_000, 60_000), _png_claiming(10_000, 10_000), good]
    tfr.write_dataset(
        {"image": images, "label": [0, 1, 2]}, tmp_path / "o" / "train", progress=False
    )
    sheet = tmp_path / "sheet.png"
    with pytest.warns(UserWarning, match="2 of 3 images did not decode"):
        contact_sheet(tmp_path / "o", "train", out=sheet)
    result = CliRunner().invoke(main, ["inspect", str(tmp_path / "o"), "-n", "2"])
    assert result.exit_code == 1
    assert result.output.startswith("error: none of the first 2 images in ")


def test_load_reads_a_split_back_through_a_pipeline(table, tmp_path):
    out = tmp_path / "out"
    tfr.convert(table.csv, out, num_shards=3, progress=False)
    train = tfr.load(out, "train")
    assert train.element_schema == tfr.Schema.from_json((out / "schema.json").read_text())
    batches = list(train.shuffle(100, seed=0).batch(5))
    assert sum(len(b["label"]) for b in batches) == 18
    originals = {Path(r["image_uri"]).read_bytes() for r in table.rows[:18]}
    assert {img for b in batches for img in b["image"]} == originals
    test = list(tfr.load(out, "TEST"))
    assert len(test) == 6 and int(test[0]["image_channels"]) == 3
    with pytest.raises(ValueError, match="split"):
        tfr.load(out, "holdout")
    with pytest.raises(FileNotFoundError, match=r"schema\.json"):
        tfr.load(tmp_path, "train")


def test_rows_that_fail_keep_the_contiguous_shard_layout(tmp_path, helpers):
    images = helpers.make_images(tmp_path, 6)
    rows = [{"split": "train", "image_uri": str(p), "label": "a"} for p in images]
    rows[1]["image_uri"] = str(tmp_path / "missing.png")
    rows.insert(3, {"split": "test", "image_uri": str(images[0]), "label": "a"})
    helpers.write_csv(tmp_path / "t.csv", rows)
    summary = tfr.convert(tmp_path / "t.csv", tmp_path / "o", num_shards=2, progress=False)
    assert summary.rows == {"TRAIN": 5, "TEST": 1} and summary.discarded == 1
    # Train rows 0-2 go to the first shard and 3-5 to the second, as if all had loaded.
    shards = sorted((tmp_path / "o").glob("train-*-of-00002.tfrecord"))
    got = [[tfr.decode_example(r)["image"][0] for r in tfr.read_records(str(s))] for s in shards]
    assert got == [
        [images[0].read_bytes(), images[2].read_bytes()],
        [p.read_bytes() for p in images[3:]],
    ]


def test_a_split_whose_rows_all_fail_is_not_written(tmp_path, helpers):
    images = helpers.make_images(tmp_path, 2)
    rows = [
        {"split": "train", "image_uri": str(images[0]), "label": "a"},
        {"split": "test", "image_uri": str(tmp_path / "missing.png"), "label": "a"},
    ]
    helpers.write_csv(tmp_path / "t.csv", rows)
    summary = tfr.convert(tmp_path / "t.csv", tmp_path / "o", progress=False)
    assert summary.rows == {"TRAIN": 1} and summary.discarded == 1
    assert not list((tmp_path / "o").glob("test*"))


def test_cli_convert_fails_when_every_row_is_discarded(tmp_path):
    table = tmp_path / "bad.csv"
    table.write_text("split,image_uri,label\nTRAIN,/no/such/image.png,cat\n")
    result = CliRunner().invoke(main, ["convert", str(table), str(tmp_path / "o")])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        f"error: no row could be converted; the reasons are in {tmp_path / 'o' / 'discarded.csv'}"
    )
