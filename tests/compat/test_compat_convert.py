"""Converted splits read by TensorFlow: counts, decodable images, integer labels."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import csv

import numpy as np
import tensorflow as tf
import tfrecordkit as tfr
from PIL import Image


def test_tensorflow_reads_converted_splits(tmp_path):
    rng = np.random.default_rng(3)
    rows = []
    for i in range(24):
        pixels = (rng.random((16 + i, 24, 3)) * 255).astype(np.uint8)
        fmt = ("PNG", "JPEG")[i % 2]
        path = tmp_path / f"i{i}.{fmt.lower()}"
        Image.fromarray(pixels).save(path, format=fmt)
        rows.append(
            {
                "split": ("train", "validation", "test")[i % 3],
                "image_uri": str(path),
                "label": ("zebra", "ant")[i % 2],
            }
        )
    with open(tmp_path / "t.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["split", "image_uri", "label"])
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "out"
    tfr.convert(tmp_path / "t.csv", out, num_shards=2, progress=False)

    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "image_height": tf.io.FixedLenFeature([], tf.int64),
        "image_width": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    for k, split in enumerate(("train", "validation", "test")):
        files = sorted(str(p) for p in out.glob(f"{split}-*-of-00002.tfrecord"))
        assert len(files) == 2
        parsed = list(
            tf.data.TFRecordDataset(files).map(lambda x: tf.io.parse_single_example(x, spec))
        )
        expected = rows[k::3]
        assert len(parsed) == len(expected)
        for ex, row in zip(parsed, expected, strict=True):
            image = tf.io.decode_image(ex["image"], channels=3).numpy()
            with Image.open(row["image_uri"]) as img:
                reference = np.asarray(img.convert("RGB"))
            assert image.shape == reference.shape
            assert (ex["image_height"].numpy(), ex["image_width"].numpy()) == image.shape[:2]
            if row["image_uri"].endswith(".png"):
                assert np.array_equal(image, reference)
            else:
                assert np.abs(image.astype(int) - reference.astype(int)).mean() < 3
            assert ex["label"].numpy() == ["ant", "zebra"].index(row["label"])


def test_real_photographs_from_scikit_learn(tmp_path):
    import sklearn

    photos = os.path.join(os.path.dirname(sklearn.__file__), "datasets", "images")
    rows = [
        {"split": "TRAIN", "image_uri": os.path.join(photos, "china.jpg"), "label": "temple"},
        {"split": "TRAIN", "image_uri": os.path.join(photos, "flower.jpg"), "label": "flower"},
        {"split": "TEST", "image_uri": os.path.join(photos, "flower.jpg"), "label": "flower"},
    ]
    with open(tmp_path / "photos.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["split", "image_uri", "label"])
        w.writeheader()
        w.writerows(rows)
    summary = tfr.convert(tmp_path / "photos.csv", tmp_path / "out", progress=False)
    assert summary.rows == {"TRAIN": 2, "TEST": 1} and summary.labels == ["flower", "temple"]
    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "image_height": tf.io.FixedLenFeature([], tf.int64),
        "image_width": tf.io.FixedLenFeature([], tf.int64),
        "image_format": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    files = sorted(str(p) for p in (tmp_path / "out").glob("train-*.tfrecord"))
    for ex, row in zip(
        tf.data.TFRecordDataset(files).map(lambda x: tf.io.parse_single_example(x, spec)),
        rows[:2],
        strict=True,
    ):
        image = tf.io.decode_jpeg(ex["image"]).numpy()
        assert image.shape == (427, 640, 3)  # both sample photographs are 640x427
        assert (ex["image_height"].numpy(), ex["image_width"].numpy()) == (427, 640)
        assert ex["image_format"].numpy() == b"jpeg"
        assert ex["label"].numpy() == ["flower", "temple"].index(row["label"])
        with open(row["image_uri"], "rb") as f:
            assert ex["image"].numpy() == f.read()
