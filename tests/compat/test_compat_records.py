"""TFRecord framing, compression and CRCs against TensorFlow's own writer and readers."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gzip
import itertools
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr
from tfrecordkit import _core


def _random_sizes(seed: int, n: int, max_size: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(int(s)) for s in rng.integers(0, max_size, size=n)]


def _small_examples(n: int) -> list[bytes]:
    return [
        tf.train.Example(
            features=tf.train.Features(
                feature={"i": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}
            )
        ).SerializeToString()
        for i in range(n)
    ]


PAYLOAD_SETS = {
    "no_records": [],
    "one_empty_record": [b""],
    "several_empty_records": [b""] * 5,
    "one_byte": [b"\x00"],
    "one_byte_ff": [b"\xff"],
    "boundary_sizes": [
        bytes(range(256)) * (n // 256) + bytes(range(n % 256))
        for n in (
            1,
            2,
            3,
            4,
            7,
            8,
            9,
            15,
            16,
            17,
            127,
            128,
            255,
            256,
            257,
            4095,
            4096,
            4097,
            65535,
            65536,
            65537,
        )
    ],
    "random_up_to_300k": _random_sizes(1, 24, 300_000),
    "one_300k": [np.random.default_rng(3).bytes(300_000)],
    "thousands_small": _random_sizes(4, 5000, 40),
    "thousands_examples": _small_examples(3000),
    "text_and_binary": [b"hello", "ünïcödé 🙂".encode(), b"\x00" * 10, b"\r\n\x1a", b"\xff" * 33],
}


# -- 1. byte identity --------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(PAYLOAD_SETS))
def test_writer_bytes_identical_to_tf(tmp_path, tf_write, name):
    payloads = PAYLOAD_SETS[name]
    ours = tmp_path / "ours.tfrecord"
    theirs = tf_write(tmp_path / "tf.tfrecord", payloads)
    with tfr.RecordWriter(ours) as w:
        for p in payloads:
            w.write(p)
    assert ours.read_bytes() == Path(theirs).read_bytes()


@pytest.mark.parametrize("name", ["one_empty_record", "random_up_to_300k", "thousands_small"])
def test_write_many_bytes_identical_to_tf(tmp_path, tf_write, name):
    payloads = PAYLOAD_SETS[name]
    theirs = tf_write(tmp_path / "tf.tfrecord", payloads)
    ours = tmp_path / "ours.tfrecord"
    with tfr.RecordWriter(ours) as w:
        assert w.write_many(iter(payloads)) == len(payloads)
    assert ours.read_bytes() == Path(theirs).read_bytes()


def test_writer_accepts_bytes_like_identically(tmp_path, tf_write):
    payloads = [b"abc", b"", b"\x01\x02\x03" * 100]
    theirs = tf_write(tmp_path / "tf.tfrecord", payloads)
    ours = tmp_path / "ours.tfrecord"
    with tfr.RecordWriter(ours) as w:
        w.write(bytearray(payloads[0]))
        w.write(memoryview(payloads[1]))
        w.write(np.frombuffer(payloads[2], dtype=np.uint8))
    assert ours.read_bytes() == Path(theirs).read_bytes()


# -- 2. reading --------------------------------------------------------------------------------

COMPRESSIONS = [None, "gzip", "zlib"]
READ_SETS = ["one_empty_record", "one_byte", "random_up_to_300k", "thousands_small", "no_records"]


@pytest.mark.parametrize("name", READ_SETS)
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_read_what_tf_wrote(tmp_path, tf_write, tf_read, compression, name):
    payloads = PAYLOAD_SETS[name]
    # A neutral name: "auto" must detect the compression from the stream, not the extension.
    path = tf_write(tmp_path / "data.tfrecord", payloads, compression)
    assert tf_read(path, compression) == payloads  # the oracle reads its own file back
    assert list(tfr.read_records(path)) == payloads
    assert list(tfr.read_records(path, compression="auto")) == payloads
    assert list(tfr.read_records(path, compression=compression)) == payloads
    assert tfr.count(path) == len(payloads)


def test_read_list_and_glob_of_tf_files_with_mixed_compression(tmp_path, tf_write):
    # One read over TF files of every compression: "auto" detects each file's own.
    sets = [
        PAYLOAD_SETS["text_and_binary"],
        PAYLOAD_SETS["thousands_small"][:700],
        PAYLOAD_SETS["random_up_to_300k"][:5],
        PAYLOAD_SETS["one_empty_record"],
    ]
    paths = [
        tf_write(tmp_path / f"part-{i:05d}-of-00004", payloads, compression)
        for i, (payloads, compression) in enumerate(
            zip(sets, [None, "gzip", "zlib", "gzip"], strict=True)
        )
    ]
    expected = [r for payloads in sets for r in payloads]
    assert list(tfr.read_records(paths)) == expected
    assert list(tfr.read_records(str(tmp_path / "part-*-of-00004"))) == expected
    assert list(tfr.read_records(paths, verify=False)) == expected
    assert tfr.count(paths) == len(expected)


@pytest.mark.parametrize(
    ("compression", "suffix"),
    [(None, ".tfrecord"), ("gzip", ".tfrecord.gz"), ("zlib", ".tfrecord.zz")],
)
def test_read_what_tf_wrote_conventional_extension(tmp_path, tf_write, compression, suffix):
    payloads = PAYLOAD_SETS["random_up_to_300k"]
    path = tf_write(tmp_path / f"data{suffix}", payloads, compression)
    assert list(tfr.read_records(path)) == payloads
    assert list(tfr.read_records(path, compression=compression)) == payloads


@pytest.mark.parametrize("name", READ_SETS)
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_tf_reads_what_we_wrote(tmp_path, tf_read, compression, name):
    payloads = PAYLOAD_SETS[name]
    path = tmp_path / "ours.tfrecord"
    with tfr.RecordWriter(path, compression) as w:
        w.write_many(payloads)
    assert tf_read(path, compression) == payloads


@pytest.mark.parametrize("level", [0, 1, 9])
@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_tf_reads_what_we_wrote_at_every_level(tmp_path, tf_read, compression, level):
    payloads = PAYLOAD_SETS["random_up_to_300k"] + PAYLOAD_SETS["text_and_binary"]
    path = tmp_path / "ours.tfrecord"
    with tfr.RecordWriter(path, compression, level=level) as w:
        w.write_many(payloads)
    assert tf_read(path, compression) == payloads


@pytest.mark.parametrize(
    ("suffix", "compression"),
    [(".tfrecord", None), (".tfrecord.gz", "gzip"), (".tfrecord.zz", "zlib"), (".zlib", "zlib")],
)
def test_tf_reads_auto_compression_by_extension(tmp_path, tf_read, suffix, compression):
    payloads = PAYLOAD_SETS["text_and_binary"]
    path = tmp_path / f"ours{suffix}"
    with tfr.RecordWriter(path, "auto") as w:
        w.write_many(payloads)
    assert tf_read(path, compression) == payloads


def test_tf_reads_flushed_gzip_stream(tmp_path, tf_read):
    # A flush mid-stream must leave a stream TF still reads in full after close.
    payloads = PAYLOAD_SETS["thousands_small"]
    path = tmp_path / "ours.tfrecord.gz"
    with tfr.RecordWriter(path, "gzip") as w:
        for i, p in enumerate(payloads):
            w.write(p)
            if i % 1000 == 999:
                w.flush()
    assert tf_read(path, "gzip") == payloads


def test_concatenated_gzip_members_written_by_tf(tmp_path, tf_write, tf_read):
    first = PAYLOAD_SETS["text_and_binary"]
    second = PAYLOAD_SETS["random_up_to_300k"]
    a = tf_write(tmp_path / "a.gz", first, "gzip")
    b = tf_write(tmp_path / "b.gz", second, "gzip")
    cat = tmp_path / "cat.tfrecord.gz"
    cat.write_bytes(Path(a).read_bytes() + Path(b).read_bytes())
    assert tf_read(cat, "gzip") == first + second
    assert list(tfr.read_records(cat)) == first + second
    assert list(tfr.read_records(cat, compression="gzip")) == first + second
    assert tfr.count(cat) == len(first + second)


def test_concatenated_gzip_members_from_python_gzip(tmp_path, tf_write, tf_read):
    payloads = PAYLOAD_SETS["thousands_small"][:500] + PAYLOAD_SETS["random_up_to_300k"][:4]
    plain = Path(tf_write(tmp_path / "plain.tfrecord", payloads)).read_bytes()
    # Members split at arbitrary offsets, most of them inside records; one member is empty.
    cuts = [0, 1, 13, 100, 101, 5000, 5000, len(plain) // 2, len(plain) - 3, len(plain)]
    members = [
        gzip.compress(plain[s:e], compresslevel=1 + i % 9)
        for i, (s, e) in enumerate(itertools.pairwise(cuts))
    ]
    path = tmp_path / "members.gz"
    path.write_bytes(b"".join(members))
    assert tf_read(path, "gzip") == payloads
    assert list(tfr.read_records(path)) == payloads
    assert list(tfr.read_records(path, compression="gzip")) == payloads


def test_our_gzip_and_zlib_streams_are_standard(tmp_path, tf_write):
    # What we compress decompresses (with Python's zlib/gzip) to exactly TF's uncompressed file.
    payloads = PAYLOAD_SETS["random_up_to_300k"]
    plain = Path(tf_write(tmp_path / "plain.tfrecord", payloads)).read_bytes()
    gz, zz = tmp_path / "ours.gz", tmp_path / "ours.zz"
    with tfr.RecordWriter(gz, "gzip") as w:
        w.write_many(payloads)
    with tfr.RecordWriter(zz, "zlib") as w:
        w.write_many(payloads)
    assert gzip.decompress(gz.read_bytes()) == plain
    assert zlib.decompress(zz.read_bytes()) == plain


# -- 6. CRC ------------------------------------------------------------------------------------


def _split_frames(data: bytes) -> list[tuple[bytes, int, bytes, int]]:
    frames, pos = [], 0
    while pos < len(data):
        header = data[pos : pos + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", data[pos + 8 : pos + 12])
        payload = data[pos + 12 : pos + 12 + length]
        (data_crc,) = struct.unpack("<I", data[pos + 12 + length : pos + 16 + length])
        frames.append((header, len_crc, payload, data_crc))
        pos += 16 + length
    assert pos == len(data)
    return frames


@pytest.mark.parametrize(
    "name",
    [
        "one_empty_record",
        "boundary_sizes",
        "random_up_to_300k",
        "thousands_small",
        "text_and_binary",
    ],
)
def test_masked_crc32c_matches_tf_crc_fields(tmp_path, tf_write, name):
    payloads = PAYLOAD_SETS[name]
    data = Path(tf_write(tmp_path / "tf.tfrecord", payloads)).read_bytes()
    frames = _split_frames(data)
    assert [f[2] for f in frames] == payloads
    for header, len_crc, payload, data_crc in frames:
        assert _core.masked_crc32c(header) == len_crc
        assert _core.masked_crc32c(payload) == data_crc
