"""Writes the fuzz targets' starting inputs: small files and payloads made by TensorFlow and by
tfrecordkit, and images TensorFlow cannot encode made by Pillow. Run from the repository
root with the test environment:

    .venv/bin/python crates/core/fuzz/make_samples.py
"""

from __future__ import annotations

import io
import os
import zlib
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import tfrecordkit as tfr
from PIL import Image

SAMPLES = Path(__file__).resolve().parent / "samples"


def tf_examples() -> list[bytes]:
    f = tf.train.Feature
    return [
        tf.train.Example(
            features=tf.train.Features(
                feature={
                    "a": f(int64_list=tf.train.Int64List(value=[1, -2])),
                    "b": f(float_list=tf.train.FloatList(value=[0.5, float("nan")])),
                    "c": f(bytes_list=tf.train.BytesList(value=[b"cat"])),
                    "d": f(int64_list=tf.train.Int64List(value=[3, 4, 5, 6])),
                    "e": f(bytes_list=tf.train.BytesList(value=[b"x", b""])),
                }
            )
        ).SerializeToString(),
        tf.train.Example(features=tf.train.Features(feature={"a": f()})).SerializeToString(),
        tf.train.Example().SerializeToString(),
    ]


def tf_sequence_example() -> bytes:
    s = tf.train.SequenceExample()
    s.context.feature["id"].bytes_list.value.append(b"v1")
    fl = s.feature_lists.feature_list["tokens"].feature
    fl.add().int64_list.value.extend([1, 2])
    fl.add().float_list.value.extend([0.25])
    return s.SerializeToString()


def tf_file(path: Path, payloads: list[bytes], compression: str = "") -> bytes:
    options = tf.io.TFRecordOptions(compression_type=compression)
    with tf.io.TFRecordWriter(str(path), options) as w:
        for p in payloads:
            w.write(p)
    return path.read_bytes()


def put(target: str, name: str, data: bytes) -> None:
    d = SAMPLES / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def schema_specs_sample() -> bytes:
    """Three specs (k0: FixedLen [2] int64 with a default, k1: VarLen float32, k2:
    FixedLenSequence [2] bytes), 0xFE, then records with those keys split at 0xFF."""
    head = bytes([3, 0, 0, 1, 2, 0, 1, 1, 1, 0, 1, 0, 2, 2, 1, 2, 2, 0, 0])
    records = [
        tfr.encode_example({"k0": [1, 2], "k1": np.float32([0.5]), "k2": ["a", "b"]}),
        tfr.encode_example({"k1": np.float32([]), "k2": []}),
    ]
    return head + b"\xfe" + b"\xff".join(records)


def main() -> None:
    tmp = SAMPLES / "_tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    examples = tf_examples()
    ours = [
        tfr.encode_example({"a": [7, 8], "b": np.float32([1.5]), "c": "dog", "e": ["p", "q"]}),
        *tfr.encode_examples({"a": np.arange(6).reshape(3, 2), "c": ["u", "v", "w"]}),
    ]
    put("records", "tf.tfrecord", tf_file(tmp / "t", examples))
    with tfr.RecordWriter(tmp / "o") as w:
        w.write_many(ours)
    put("records", "ours.tfrecord", (tmp / "o").read_bytes())
    put("compressed_records", "tf.gz", tf_file(tmp / "g", examples, "GZIP"))
    put("compressed_records", "tf.zz", tf_file(tmp / "z", examples, "ZLIB"))
    put("compressed_records", "ours.zz", zlib.compress((tmp / "o").read_bytes()))
    for target in ("example_decode", "example_roundtrip"):
        for i, e in enumerate(examples + ours):
            put(target, f"example-{i}", e)
        put(target, "sequence", tf_sequence_example())
    for target in ("schema_parse", "parse_in_place"):
        put(target, "batch", b"\xff".join(examples[:2] + ours))
    put("schema_specs", "three-specs", schema_specs_sample())
    pixels = np.arange(6 * 9 * 3, dtype=np.uint8).reshape(6, 9, 3)
    for pick, name, data in [
        (0x07, "rgb.jpg", tf.io.encode_jpeg(pixels).numpy()),
        (0x0D, "gray.jpg", tf.io.encode_jpeg(pixels[..., :1]).numpy()),
        (0x2C, "rgb.png", tf.io.encode_png(pixels).numpy()),
        (0x30, "rgba16.png", tf.io.encode_png(np.uint16(pixels[..., :2]) * 257).numpy()),
    ]:
        put("image_decode", name, bytes([pick]) + data)
    # What TensorFlow does not encode: progressive and CMYK JPEGs (the latter asked for one
    # channel), and lossy WebP, from Pillow.
    for pick, name, image, fmt, options in [
        (0x23, "progressive.jpg", Image.fromarray(pixels), "JPEG", {"progressive": True}),
        (0x01, "cmyk.jpg", Image.fromarray(pixels).convert("CMYK"), "JPEG", {}),
        (0x07, "rgb.webp", Image.fromarray(pixels), "WEBP", {"quality": 80}),
    ]:
        buf = io.BytesIO()
        image.save(buf, fmt, **options)
        put("image_decode", name, bytes([pick]) + buf.getvalue())
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()


if __name__ == "__main__":
    main()
