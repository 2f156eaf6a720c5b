"""A repaired file holds every intact record, and TensorFlow reads it."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest
import tensorflow as tf
import tfrecordkit as tfr


def test_repair_keeps_every_other_record_and_tensorflow_reads_it(tmp_path):
    payloads = [
        tf.train.Example(
            features=tf.train.Features(
                feature={"i": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}
            )
        ).SerializeToString()
        for i in range(200)
    ]
    src = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(src) as w:
        for p in payloads:
            w.write(p)
    with open(src, "rb") as f:
        data = bytearray(f.read())
    record = 16 + len(payloads[0])  # all payloads here have the same length
    data[57 * record + 12 + 3] ^= 0x5A  # corrupt the data of record 57
    torn = bytes(data[: len(data) - 9])  # and tear the last record
    with open(src, "wb") as f:
        f.write(torn)

    # TensorFlow itself stops at the damage.
    with pytest.raises(tf.errors.DataLossError):
        list(tf.data.TFRecordDataset(src))

    dst = str(tmp_path / "repaired.tfrecord")
    report = tfr.repair(src, dst)
    expected = [p for i, p in enumerate(payloads) if i not in (57, 199)]
    assert report.records == len(expected) and len(report.damage) == 2
    assert [r.numpy() for r in tf.data.TFRecordDataset(dst)] == expected
