"""Image decoding: tfr.image and Dataset.decode_image on the pipeline's native threads."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr
from PIL import Image

SCHEMA = {"image": tfr.FixedLen([], "bytes"), "label": tfr.FixedLen([], "int64")}


def pixels(h: int, w: int, seed: int = 0) -> np.ndarray:
    """A smooth colour image with some texture, so JPEG keeps it close."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / max(w - 1, 1), y * 255 / max(h - 1, 1), (x + y) % 256], -1)
    return np.clip(base + rng.normal(0, 4, base.shape), 0, 255).astype(np.uint8)


def encode(a: np.ndarray, fmt: str = "JPEG", **kw: object) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, fmt, **kw)
    return buf.getvalue()


@pytest.fixture
def image_shards(tmp_path: Path):
    """Two shards of Examples holding JPEGs of varied sizes; label = record id."""

    def make(n: int = 24, sizes=((30, 40), (25, 25), (40, 31)), fmt: str = "JPEG") -> list[str]:
        paths = []
        for s in range(2):
            path = str(tmp_path / f"img-{s}.tfrecord")
            with tfr.RecordWriter(path) as w:
                for i in range(s, n, 2):
                    h, wd = sizes[i % len(sizes)]
                    data = encode(pixels(h, wd, i), fmt)
                    w.write(tfr.encode_example({"image": data, "label": i}))
            paths.append(path)
        return paths

    return make


def test_png_round_trips_exactly_in_every_channel_count():
    a = pixels(7, 9)
    png = tfr.image.encode_png(a)
    np.testing.assert_array_equal(tfr.image.decode(png, dtype="uint8"), a)
    np.testing.assert_allclose(tfr.image.decode(png), a / 255, atol=1e-7)
    rgba = np.concatenate([a, np.full((7, 9, 1), 200, np.uint8)], -1)
    four = tfr.image.decode(tfr.image.encode_png(rgba), channels=4, dtype="uint8")
    np.testing.assert_array_equal(four, rgba)
    kept = tfr.image.decode(tfr.image.encode_png(rgba), channels=0, dtype="uint8")
    assert kept.shape == (7, 9, 4)
    gray = tfr.image.decode(png, channels=1, dtype="uint8")
    want = np.round(a @ np.array([0.299, 0.587, 0.114])).astype(int)
    assert gray.shape == (7, 9, 1)
    assert np.abs(gray[..., 0].astype(int) - want).max() <= 1
    expanded = tfr.image.decode(tfr.image.encode_png(a[..., 0]), dtype="uint8")
    np.testing.assert_array_equal(expanded, np.repeat(a[..., :1], 3, -1))


def test_jpeg_agrees_with_libjpeg_and_lossless_webp_is_exact():
    a = pixels(48, 64)
    for quality, subsampling in ((95, 0), (75, 2)):
        data = encode(a, "JPEG", quality=quality, subsampling=subsampling)
        out = tfr.image.decode(data, dtype="uint8")
        libjpeg = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        assert out.shape == libjpeg.shape == (48, 64, 3)
        assert np.abs(out.astype(int) - libjpeg).mean() < 1.5
    webp = encode(a, "WEBP", lossless=True)
    np.testing.assert_array_equal(tfr.image.decode(webp, dtype="uint8"), a)


def test_resize_shapes_and_identity():
    a = pixels(20, 30)
    png = tfr.image.encode_png(a)
    assert tfr.image.decode(png, size=8).shape == (8, 8, 3)
    assert tfr.image.decode(png, size=(5, 40)).shape == (5, 40, 3)
    same = tfr.image.decode(png, size=(20, 30), dtype="uint8")
    np.testing.assert_array_equal(same, a)
    # Halving with half-pixel centres averages each 2x2 block.
    halved = tfr.image.decode(png, size=(10, 15))
    blocks = a.reshape(10, 2, 15, 2, 3).mean(axis=(1, 3)) / 255
    np.testing.assert_allclose(halved, blocks, atol=1e-6)
    nearest = tfr.image.decode(png, size=(10, 15), resize="nearest", dtype="uint8")
    np.testing.assert_array_equal(nearest, a[1::2, 1::2])


def test_augmentation_is_seeded_and_varied():
    png = tfr.image.encode_png(pixels(60, 80))
    kw = {"size": 32, "random_crop": True, "random_flip": True}
    a = tfr.image.decode(png, seed=1, **kw)
    np.testing.assert_array_equal(a, tfr.image.decode(png, seed=1, **kw))
    assert not np.array_equal(a, tfr.image.decode(png, seed=2, **kw))
    flips = [tfr.image.decode(png, size=(60, 80), random_flip=True, seed=s) for s in range(8)]
    plain = tfr.image.decode(png, size=(60, 80))
    mirrored = sum(np.array_equal(f, plain[:, ::-1]) for f in flips)
    unchanged = sum(np.array_equal(f, plain) for f in flips)
    assert mirrored + unchanged == 8 and 0 < mirrored < 8


def test_bad_images_and_arguments_raise_typed_errors():
    with pytest.raises(tfr.ImageDecodeError, match="not a JPEG, PNG or WebP"):
        tfr.image.decode(b"definitely not an image")
    jpeg = encode(pixels(40, 40))
    for cut in (len(jpeg) // 3, 200, len(jpeg) - 10):
        with pytest.raises(tfr.ImageDecodeError, match="bad JPEG") as err:
            tfr.image.decode(jpeg[:cut])
        # One line, and no batch position for a single image.
        assert "\n" not in str(err.value) and "record" not in str(err.value)
    with pytest.raises(tfr.ImageDecodeError, match="record 1"):
        tfr.image.decode_batch([jpeg, jpeg[:200]], size=8)
    with pytest.raises(tfr.ImageDecodeError):
        tfr.image.decode(tfr.image.encode_png(pixels(5, 5))[:-20])
    # A header claiming a huge image is refused before any pixel memory is taken.
    bomb = bytearray(tfr.image.encode_png(pixels(2, 2)))
    bomb[16:24] = (60000).to_bytes(4, "big") * 2
    with pytest.raises(tfr.ImageDecodeError):
        tfr.image.decode(bytes(bomb))
    for bad in (
        {"channels": 2},
        {"channels": -1},
        {"channels": 300},
        {"dtype": "int16"},
        {"resize": "cubic"},
        {"size": 0},
        {"seed": -3},
        {"size": 8, "random_crop": (0.5, 0.2)},
    ):
        with pytest.raises(ValueError):
            tfr.image.decode(jpeg, **bad)
    with pytest.raises(ValueError, match="needs an output size"):
        tfr.image.decode(jpeg, random_crop=True)
    with pytest.raises(tfr.ImageDecodeError, match="different shapes"):
        tfr.image.decode_batch([encode(pixels(4, 4)), encode(pixels(5, 4))])


def test_pipeline_decodes_batches_in_order(image_shards):
    paths = image_shards()
    ds = tfr.Dataset.from_files(paths).parse(SCHEMA).decode_image("image", size=(16, 20))
    batches = list(ds.batch(5))
    assert [b["image"].shape for b in batches] == [(5, 16, 20, 3)] * 4 + [(4, 16, 20, 3)]
    assert batches[0]["image"].dtype == np.float32
    records = [r for p in paths for r in tfr.read_records(p)]
    for b, start in zip(batches, range(0, 24, 5), strict=True):
        for j, label in enumerate(b["label"]):
            raw = tfr.parse_example(records[start + j], SCHEMA)
            assert raw["label"] == label
            want = tfr.image.decode(raw["image"], size=(16, 20))
            np.testing.assert_array_equal(b["image"][j], want)


def test_unbatched_images_keep_their_own_shapes(image_shards):
    ds = tfr.Dataset.from_files(image_shards(6)).parse(SCHEMA).decode_image("image", dtype="uint8")
    shapes = [e["image"].shape for e in ds]
    sizes = [(30, 40), (25, 25), (40, 31)]
    assert shapes == [(*sizes[i % 3], 3) for i in (0, 2, 4, 1, 3, 5)]
    with pytest.raises(tfr.ImageDecodeError, match="different shapes") as info:
        list(ds.batch(3))
    assert info.value.path is not None and info.value.record_index is not None


def test_seeded_augmentation_repeats_per_run_and_changes_per_epoch(image_shards):
    paths = image_shards(8)

    def make():
        return (
            tfr.Dataset.from_files(paths)
            .parse(SCHEMA)
            .decode_image("image", size=12, random_crop=True, random_flip=True, seed=5)
            .batch(8)
        )

    a, b = make(), make()
    first = next(iter(a))["image"]
    np.testing.assert_array_equal(first, next(iter(b))["image"])
    assert not np.array_equal(first, next(iter(a))["image"])  # the next epoch
    # The same record, in another batch position or after a shuffle, gets the same crop.
    shuffled = (
        tfr.Dataset.from_files(paths)
        .parse(SCHEMA)
        .shuffle(8, seed=3)
        .decode_image("image", size=12, random_crop=True, random_flip=True, seed=5)
    )
    by_label = {int(e["label"]): e["image"] for e in shuffled}
    batch = next(iter(make()))
    for label, img in zip(batch["label"], batch["image"], strict=True):
        np.testing.assert_array_equal(by_label[int(label)], img)
    # repeat() draws new augmentation for every pass.
    twice = list(
        tfr.Dataset.from_files(paths[:1])
        .parse(SCHEMA)
        .decode_image("image", size=12, random_crop=True, seed=5)
        .repeat(2)
    )
    assert not np.array_equal(twice[0]["image"], twice[4]["image"])


def test_undecodable_images_follow_on_error(tmp_path):
    path = str(tmp_path / "mixed.tfrecord")
    good = encode(pixels(10, 10))
    with tfr.RecordWriter(path) as w:
        for i in range(6):
            data = b"not an image" if i in (2, 4) else good
            w.write(tfr.encode_example({"image": data, "label": i}))

    def make(on_error):
        return (
            tfr.Dataset.from_files(path, on_error=on_error)
            .parse(SCHEMA)
            .decode_image("image", size=8)
            .batch(3)
        )

    with pytest.raises(tfr.ImageDecodeError) as info:
        list(make("raise"))
    err = info.value
    assert err.path == path and err.record_index == 2 and err.key == "image"
    assert err.offset is not None and err.offset > 0
    labels = [int(x) for b in make("skip") for x in b["label"]]
    assert labels == [0, 1, 3, 5]
    seen = []
    kept = [int(x) for b in make(seen.append) for x in b["label"]]
    assert kept == [0, 1, 3, 5]
    assert [e.record_index for e in seen] == [2, 4]
    with pytest.warns(tfr.DataLossWarning):
        list(make("warn"))


def test_decode_image_checks_its_place_and_feature(image_shards):
    paths = image_shards(4)
    with pytest.raises(TypeError, match=r"call \.parse"):
        tfr.Dataset.from_files(paths).decode_image("image")
    # A mistake in the plan, not data that misfits its schema: not a SchemaError.
    with pytest.raises(ValueError, match="no feature") as info:
        tfr.Dataset.from_files(paths).parse(SCHEMA).decode_image("photo")
    assert not isinstance(info.value, tfr.SchemaError)
    with pytest.raises(ValueError, match="FixedLen") as info:
        tfr.Dataset.from_files(paths).parse(SCHEMA).decode_image("label")
    assert not isinstance(info.value, tfr.SchemaError)


def test_decode_image_after_python_stages(image_shards):
    paths = image_shards(6)
    native = list(tfr.Dataset.from_files(paths).parse(SCHEMA).decode_image("image", size=9))
    via_map = list(
        tfr.Dataset.from_files(paths).parse(SCHEMA).map(lambda e: e).decode_image("image", size=9)
    )
    for a, b in zip(native, via_map, strict=True):
        np.testing.assert_array_equal(a["image"], b["image"])
    batched = list(
        tfr.Dataset.from_files(paths)
        .parse(SCHEMA)
        .map(lambda e: e)
        .batch(4)
        .decode_image("image", size=9, dtype="uint8")
    )
    assert [b["image"].shape for b in batched] == [(4, 9, 9, 3), (2, 9, 9, 3)]


def test_decode_image_after_sequence_examples(tmp_path):
    path = str(tmp_path / "clips.tfrecord")
    with tfr.RecordWriter(path) as w:
        for i in range(5):
            poster = encode(pixels(20, 30, i))
            w.write(tfr.encode_sequence_example({"poster": poster}, {"t": [[i], [i + 1]]}))
    lists = {"t": tfr.FixedLenSequence([], "int64")}
    ds = tfr.Dataset.from_files(path).parse(SCHEMA_OF_POSTERS, lists)
    one = next(iter(ds.decode_image("poster", size=8)))
    assert one["poster"].shape == (8, 8, 3) and one["t"].tolist() == [0, 1]
    batches = list(ds.batch(2).decode_image("poster", size=8, dtype="uint8"))
    assert [b["poster"].shape for b in batches] == [(2, 8, 8, 3), (2, 8, 8, 3), (1, 8, 8, 3)]
    assert batches[1]["t"].tolist() == [[2, 3], [3, 4]]


SCHEMA_OF_POSTERS = {"poster": tfr.FixedLen([], "bytes")}


def test_seeded_augmentation_is_the_same_with_or_without_a_map_before_it(image_shards):
    paths = image_shards(8)
    augment = {"size": 12, "random_crop": True, "random_flip": True, "seed": 5}

    def by_label(ds):
        out = {}
        for element in ds:
            labels, images = np.atleast_1d(element["label"]), element["image"]
            images = images if images.ndim == 4 else images[None]
            out.update({int(k): img for k, img in zip(labels, images, strict=True)})
        return out

    parsed = tfr.Dataset.from_files(paths).parse(SCHEMA)
    native = by_label(parsed.decode_image("image", **augment))
    assert len(native) == 8
    relabelled = {"label": None}

    def touch(e):
        relabelled["label"] = e["label"]
        return dict(e)

    # A map (Python) before the decoding, then a shuffle and a batch in Python too.
    for ds in (
        parsed.map(touch).decode_image("image", **augment),
        parsed.map(touch).shuffle(8, seed=1).decode_image("image", **augment),
        parsed.map(touch).batch(3).decode_image("image", **augment),
        parsed.shuffle(8, seed=2)
        .map(touch)
        .filter(lambda e: True)
        .decode_image("image", **augment),
    ):
        got = by_label(ds)
        assert got.keys() == native.keys()
        for label, image in got.items():
            np.testing.assert_array_equal(image, native[label])
    assert relabelled["label"] is not None
    # Another epoch draws other crops, alike on both paths.
    ds_native = parsed.decode_image("image", **augment)
    ds_mapped = parsed.map(touch).decode_image("image", **augment)
    second = [by_label(ds.iterate(epoch=1)) for ds in (ds_native, ds_mapped)]
    for label in native:
        np.testing.assert_array_equal(second[0][label], second[1][label])
    assert any(not np.array_equal(second[0][k], native[k]) for k in native)


def test_image_pipeline_in_the_seed_shape_with_workers(image_shards):
    paths = image_shards(40)
    ds = (
        tfr.Dataset.list_files(paths, shuffle=True, seed=1)
        .interleave(cycle_length=tfr.AUTOTUNE, deterministic=False)
        .parse(SCHEMA)
        .decode_image("image", size=24, dtype="uint8")
        .cache()
        .shuffle(16, seed=2)
        .batch(8, drop_remainder=True)
        .prefetch(tfr.AUTOTUNE)
    )
    for _ in range(2):
        batches = list(ds)
        labels = sorted(int(x) for b in batches for x in b["label"])
        assert labels == list(range(40))
        assert all(b["image"].shape == (8, 24, 24, 3) for b in batches)
        assert all(b["image"].dtype == np.uint8 for b in batches)


def test_resumable_pipelines_need_an_augmentation_seed(image_shards):
    ds = (
        tfr.Dataset.from_files(image_shards(4))
        .parse(SCHEMA)
        .decode_image("image", size=8, random_flip=True)
    )
    it = iter(ds)
    next(it)
    with pytest.raises(ValueError, match="seed for random image augmentation"):
        it.state()


def test_reused_batch_buffers_never_show_through(image_shards):
    """Freed batches lend their memory to later ones; batches still held keep theirs."""
    paths = image_shards(40)
    records = [r for p in paths for r in tfr.read_records(p)]
    images = [tfr.parse_example(r, SCHEMA)["image"] for r in records]
    for dtype in ("float32", "uint8"):
        ds = tfr.Dataset.from_files(paths).parse(SCHEMA)
        batched = ds.decode_image("image", size=(20, 24), dtype=dtype).batch(6)
        for _ in range(2):
            for i, b in enumerate(batched):  # each batch freed before the next arrives
                chunk = images[i * 6 : (i + 1) * 6]
                want = tfr.image.decode_batch(chunk, size=(20, 24), dtype=dtype)
                np.testing.assert_array_equal(b["image"], want)
    ds = tfr.Dataset.from_files(paths).parse(SCHEMA).decode_image("image", size=(20, 24))
    held = list(ds.batch(6))
    assert len({b["image"].__array_interface__["data"][0] for b in held}) == len(held)
    for i, b in enumerate(held):
        want = tfr.image.decode_batch(images[i * 6 : (i + 1) * 6], size=(20, 24))
        np.testing.assert_array_equal(b["image"], want)


def test_skipped_records_leave_no_batch_short(tmp_path):
    """As in tf.data, where skipped elements never reach batch(): later records fill in."""
    path = str(tmp_path / "gaps.tfrecord")
    good = encode(pixels(10, 10))
    bad = {2, 3, 7, 11}
    with tfr.RecordWriter(path) as w:
        for i in range(14):
            w.write(tfr.encode_example({"image": b"nope" if i in bad else good, "label": i}))
    kept = [i for i in range(14) if i not in bad]

    def batches(drop_remainder):
        ds = (
            tfr.Dataset.from_files(path, on_error="skip")
            .parse(SCHEMA)
            .decode_image("image", size=8, dtype="uint8")
            .batch(4, drop_remainder=drop_remainder)
        )
        return list(ds)

    full = batches(True)
    assert [len(b["label"]) for b in full] == [4, 4]
    assert [int(x) for b in full for x in b["label"]] == kept[:8]
    assert all(b["image"].shape == (4, 8, 8, 3) for b in full)
    ragged_end = batches(False)
    assert [len(b["label"]) for b in ragged_end] == [4, 4, 2]
    assert [int(x) for b in ragged_end for x in b["label"]] == kept
