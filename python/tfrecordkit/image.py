"""Decoding encoded images (JPEG, PNG, WebP) to NumPy arrays, natively.

The same decoding runs inside pipelines as :meth:`tfrecordkit.Dataset.decode_image`.
Pixels come out ``[height, width, channels]``: ``uint8`` as stored, or ``float32`` in
``[0, 1]``, exactly the usual tf.data pipeline's ``tf.cast(image, tf.float32) / 255`` followed
by ``tf.image.resize(image, size)`` (bilinear, half-pixel centres, no antialiasing).

>>> import numpy as np, tfrecordkit as tfr
>>> png = tfr.image.encode_png(np.zeros((4, 6, 3), np.uint8))
>>> tfr.image.decode(png, size=(2, 3)).shape
(2, 3, 3)
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core

__all__ = ["ImageOptions", "decode", "decode_batch", "encode_png"]

#: The random-resized-crop defaults of the standard ImageNet training recipe.
DEFAULT_CROP_SCALE = (0.08, 1.0)
DEFAULT_CROP_RATIO = (3 / 4, 4 / 3)


@dataclass(frozen=True)
class ImageOptions:
    """What :func:`decode` and :meth:`Dataset.decode_image` make of each image.

    ``channels``: 1, 3 or 4 (0 keeps each image's own). ``size``: ``(height, width)`` or
    one int for a square, ``None`` to keep the decoded size. ``dtype``: ``"float32"``
    (``[0, 1]``) or ``"uint8"``. ``resize``: ``"bilinear"`` or ``"nearest"``.
    ``random_crop``: ``True`` for a random resized crop with the ImageNet defaults
    (area 8% to 100%, aspect ratio 3/4 to 4/3), or an ``(low, high)`` area range; it needs a
    ``size``. ``random_flip``: flip horizontally half of the time. ``seed`` makes the
    augmentation repeatable.
    """

    channels: int = 3
    size: tuple[int, int] | None = None
    dtype: str = "float32"
    resize: str = "bilinear"
    random_crop: tuple[float, float] | None = None
    crop_ratio: tuple[float, float] = DEFAULT_CROP_RATIO
    random_flip: bool = False
    seed: int | None = None

    @classmethod
    def make(
        cls,
        channels: int = 3,
        size: int | Sequence[int] | None = None,
        dtype: Any = "float32",
        resize: str = "bilinear",
        *,
        random_crop: bool | Sequence[float] = False,
        crop_ratio: Sequence[float] = DEFAULT_CROP_RATIO,
        random_flip: bool = False,
        seed: int | None = None,
    ) -> ImageOptions:
        """Checks and normalizes the arguments :func:`decode` takes."""
        if channels not in (0, 1, 3, 4):
            raise ValueError(f"channels must be 0, 1, 3 or 4, not {channels!r}")
        if size is not None:
            if isinstance(size, (int, np.integer)):
                size = (int(size), int(size))
            size = tuple(int(s) for s in size)
            if len(size) != 2 or min(size) < 1:
                raise ValueError(f"size must be an int or (height, width) >= 1, not {size!r}")
        dtype = np.dtype(dtype).name
        if dtype not in ("float32", "uint8"):
            raise ValueError(f"dtype must be float32 or uint8, not {dtype}")
        crop: tuple[float, float] | None
        if random_crop is True:
            crop = DEFAULT_CROP_SCALE
        elif random_crop is False or random_crop is None:
            crop = None
        else:
            crop = tuple(float(x) for x in random_crop)  # type: ignore[assignment]
        if seed is not None and (
            not isinstance(seed, (int, np.integer))
            or isinstance(seed, bool)
            or not 0 <= seed < 2**64
        ):
            raise ValueError(f"seed must be an int from 0 to 2**64 - 1, or None, not {seed!r}")
        options = cls(
            int(channels),
            size,
            dtype,
            resize,
            crop,
            (float(crop_ratio[0]), float(crop_ratio[1])),
            bool(random_flip),
            None if seed is None else int(seed),
        )
        options.native()  # checks the rest
        return options

    @property
    def augments(self) -> bool:
        return self.random_crop is not None or self.random_flip

    def native(self) -> _core.ImageSpec:
        return _core.ImageSpec(
            channels=self.channels,
            size=self.size,
            dtype=self.dtype,
            resize=self.resize,
            crop_scale=self.random_crop,
            crop_ratio=self.crop_ratio,
            flip=self.random_flip,
        )

    def seed_value(self) -> int:
        """The seed for native augmentation: the given one, or a fresh random one."""
        if self.seed is not None:
            return self.seed & ((1 << 64) - 1)
        return int.from_bytes(os.urandom(8), "little")


def decode(
    data: bytes,
    channels: int = 3,
    size: int | Sequence[int] | None = None,
    dtype: Any = "float32",
    resize: str = "bilinear",
    *,
    random_crop: bool | Sequence[float] = False,
    crop_ratio: Sequence[float] = DEFAULT_CROP_RATIO,
    random_flip: bool = False,
    seed: int | None = None,
) -> np.ndarray:
    """Decodes one JPEG, PNG or WebP image to a ``[height, width, channels]`` array.

    Bytes that are not an image raise :class:`tfrecordkit.ImageDecodeError`. See
    :class:`ImageOptions` for the arguments.
    """
    options = ImageOptions.make(
        channels,
        size,
        dtype,
        resize,
        random_crop=random_crop,
        crop_ratio=crop_ratio,
        random_flip=random_flip,
        seed=seed,
    )
    if not isinstance(data, bytes):
        data = bytes(data)
    return _core.decode_image(
        data, options.native(), _core.mix_seed(_core.mix_seed(options.seed_value(), 0), 0)
    )


def decode_batch(images: Sequence[bytes], *args: Any, **kwargs: Any) -> np.ndarray:
    """Decodes encoded images into one ``[n, height, width, channels]`` array; the same
    arguments as :func:`decode`. Without a ``size`` every image must decode to the
    same shape."""
    return decode_with(ImageOptions.make(*args, **kwargs), list(images))


def decode_with(options: ImageOptions, images: list[bytes], salt: int = 0) -> np.ndarray:
    """Decodes ``images`` with ``options``; image ``i`` is augmented with a seed made
    from the options' seed, ``salt`` and ``i``."""
    base = _core.mix_seed(options.seed_value(), salt)
    return decode_seeded(options, images, [_core.mix_seed(base, i) for i in range(len(images))])


def decode_seeded(options: ImageOptions, images: list[bytes], seeds: list[int]) -> np.ndarray:
    """Decodes ``images`` with ``options``, image ``i`` augmented with ``seeds[i]``."""
    images = [bytes(i) if not isinstance(i, bytes) else i for i in images]
    return _core.decode_images(images, options.native(), seeds)


def encode_png(pixels: np.ndarray) -> bytes:
    """A minimal PNG of ``uint8`` pixels (``[h, w]`` or ``[h, w, 1|3|4]``), for tests and
    examples that need an image without an imaging library."""
    a = np.ascontiguousarray(pixels, dtype=np.uint8)
    if a.ndim == 2:
        a = a[:, :, None]
    h, w, c = a.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + a[y].tobytes() for y in range(h))

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return len(body).to_bytes(4, "big") + kind + body + crc.to_bytes(4, "big")

    header = w.to_bytes(4, "big") + h.to_bytes(4, "big") + bytes([8, color, 0, 0, 0])
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
