"""Image decoding against TensorFlow's decode_jpeg / decode_png + resize, on the same bytes."""

from __future__ import annotations

import io

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr
from PIL import Image
from sklearn.datasets import load_sample_images

PHOTOS = load_sample_images().images  # two real 427x640 photographs


def jpeg_cuts():
    """JPEGs cut from the photographs, ImageNet-like sizes, at a few qualities."""
    cuts = []
    for photo in PHOTOS:
        for (y, x, h, w), quality in [
            ((0, 0, 375, 500), 90),
            ((40, 120, 333, 500), 75),
            ((10, 300, 400, 281), 95),
        ]:
            buf = io.BytesIO()
            Image.fromarray(photo[y : y + h, x : x + w]).save(buf, "JPEG", quality=quality)
            cuts.append(buf.getvalue())
    return cuts


JPEGS = jpeg_cuts()


def tf_pipeline_image(data: bytes, size, channels: int = 3) -> np.ndarray:
    """The usual tf.data pipeline's image steps."""
    image = tf.io.decode_jpeg(data, channels=channels)
    image = tf.cast(image, tf.float32) / 255.0
    if size is not None:
        image = tf.image.resize(image, size)
    return image.numpy()


@pytest.mark.parametrize("size", [(224, 224), (160, 320), (512, 640), None])
def test_jpeg_pixels_agree_with_tensorflow(size):
    for data in JPEGS:
        ours = tfr.image.decode(data, size=size)
        theirs = tf_pipeline_image(data, size)
        assert ours.shape == theirs.shape and ours.dtype == np.float32
        assert np.abs(ours - theirs).mean() < 0.02


def test_grayscale_and_uint8_agree_with_tensorflow():
    for data in JPEGS[:3]:
        ours = tfr.image.decode(data, channels=1, dtype="uint8")
        theirs = tf.io.decode_jpeg(data, channels=1).numpy()
        assert ours.shape == theirs.shape
        assert np.abs(ours.astype(int) - theirs).mean() / 255 < 0.02
        ours = tfr.image.decode(data, size=224, dtype="uint8").astype(np.float32) / 255
        assert np.abs(ours - tf_pipeline_image(data, (224, 224))).mean() < 0.02


def test_cmyk_jpegs_decode_as_tensorflow_does_and_to_gray_as_well():
    buf = io.BytesIO()
    Image.fromarray(PHOTOS[0][:200, :300]).convert("CMYK").save(buf, "JPEG", quality=90)
    data = buf.getvalue()
    theirs = tf.io.decode_jpeg(data, channels=3).numpy()
    ours = tfr.image.decode(data, dtype="uint8")
    assert ours.shape == theirs.shape
    assert np.abs(ours.astype(int) - theirs).mean() / 255 < 0.02
    # TensorFlow refuses one channel from a CMYK JPEG; ours is the gray of its RGB.
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.decode_jpeg(data, channels=1)
    gray = tfr.image.decode(data, channels=1, dtype="uint8")
    want = tf.image.rgb_to_grayscale(theirs).numpy()
    assert gray.shape == want.shape
    assert np.abs(gray.astype(int) - want).mean() / 255 < 0.02


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("size", [(224, 224), (37, 91), (600, 500), (427, 640)])
def test_png_decode_and_resize_match_tensorflow_exactly(method, size):
    buf = io.BytesIO()
    Image.fromarray(PHOTOS[1][:300, :420]).save(buf, "PNG")
    data = buf.getvalue()
    np.testing.assert_array_equal(
        tfr.image.decode(data, dtype="uint8"), tf.io.decode_png(data, channels=3).numpy()
    )
    ours = tfr.image.decode(data, size=size, resize=method)
    theirs = tf.image.resize(
        tf.cast(tf.io.decode_png(data, channels=3), tf.float32) / 255.0, size, method=method
    ).numpy()
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_the_seed_image_pipeline_matches_tf_data(tmp_path):
    paths = []
    for s in range(2):
        path = str(tmp_path / f"train-{s}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for i in range(s, len(JPEGS), 2):
                ex = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "image": tf.train.Feature(
                                bytes_list=tf.train.BytesList(value=[JPEGS[i]])
                            ),
                            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                        }
                    )
                )
                w.write(ex.SerializeToString())
        paths.append(path)
    desc = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(serialized):
        ex = tf.io.parse_single_example(serialized, desc)
        return {"image": tf_image(ex["image"]), "label": ex["label"]}

    def tf_image(data):
        image = tf.cast(tf.io.decode_jpeg(data, channels=3), tf.float32) / 255.0
        return tf.image.resize(image, [224, 224])

    theirs = list(
        tf.data.Dataset.from_tensor_slices(paths)
        .interleave(tf.data.TFRecordDataset, cycle_length=2, block_length=1)
        .map(parse)
        .batch(4)
        .as_numpy_iterator()
    )
    ds = (
        tfr.Dataset.list_files(paths)
        .interleave(cycle_length=2, block_length=1)
        .parse({"image": tfr.FixedLen([], "bytes"), "label": tfr.FixedLen([], "int64")})
        .decode_image("image", size=224)
        .batch(4)
        .prefetch(tfr.AUTOTUNE)
    )
    ours = list(ds)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a["label"], b["label"])
        assert a["image"].shape == b["image"].shape
        assert np.abs(a["image"] - b["image"]).mean() < 0.02

    # to_tf(): the decoded images come with a tensor spec from the pipeline.
    as_tf = ds.to_tf()
    spec = as_tf.element_spec["image"]
    assert spec.shape.as_list() == [None, 224, 224, 3] and spec.dtype == tf.float32
    first = next(iter(as_tf))
    np.testing.assert_array_equal(first["image"].numpy(), ours[0]["image"])
