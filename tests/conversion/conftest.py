"""Image tables for the conversion tests: real JPEG and PNG files made with Pillow."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

LABELS = ["cat, striped", "dog", "bird"]


def make_images(directory, n, seed=0):
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        h, w = 20 + i % 7, 30 + i % 5
        pixels = (rng.random((h, w, 3)) * 255).astype(np.uint8)
        fmt = ("JPEG", "PNG")[i % 2]
        path = directory / f"img{i:03d}.{fmt.lower()}"
        Image.fromarray(pixels).save(path, format=fmt)
        paths.append(path)
    return paths


def write_csv(path, rows, fields=("split", "image_uri", "label")):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(fields))
        w.writeheader()
        w.writerows(rows)
    return path


@pytest.fixture
def table(tmp_path):
    """A CSV of 30 good rows (labels with quoted commas) and 5 bad ones."""
    images = make_images(tmp_path, 30)
    splits = ["train"] * 18 + ["Validation"] * 6 + ["TEST"] * 6
    rows = [
        {"split": s, "image_uri": str(p), "label": LABELS[i % 3]}
        for i, (s, p) in enumerate(zip(splits, images, strict=True))
    ]
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    bad = [
        {"split": "train", "image_uri": str(tmp_path / "missing.png"), "label": "dog"},
        {"split": "train", "image_uri": str(tmp_path / "broken.jpg"), "label": "dog"},
        {"split": "holdout", "image_uri": str(images[0]), "label": "dog"},
        {"split": "test", "image_uri": str(images[0]), "label": "fish"},
        {"split": "test", "image_uri": str(images[0]), "label": ""},
    ]
    path = write_csv(tmp_path / "table.csv", rows + bad)
    return SimpleNamespace(csv=path, rows=rows, bad=bad, images=images, dir=tmp_path)


@pytest.fixture
def helpers():
    return SimpleNamespace(make_images=make_images, write_csv=write_csv, labels=LABELS)
