"""Reading files that are still being written (follow=True)."""

from __future__ import annotations

import threading
import time

import pytest
import tfrecordkit as tfr
from tfrecordkit._core import masked_crc32c


def frame(data: bytes) -> bytes:
    n = len(data).to_bytes(8, "little")
    return (
        n
        + masked_crc32c(n).to_bytes(4, "little")
        + data
        + masked_crc32c(data).to_bytes(4, "little")
    )


def test_torn_tail_is_waited_on_not_reported(tmp_path):
    path = tmp_path / "live.tfrecord"
    whole = frame(b"first") + frame(b"second record")
    path.write_bytes(whole[:-7])  # the second record is still being written
    with pytest.raises(tfr.TruncatedRecordError):
        list(tfr.read_records(path))

    got: list[bytes] = []

    def finish_later():
        time.sleep(0.3)
        with open(path, "ab") as f:
            f.write(whole[-7:])

    t = threading.Thread(target=finish_later)
    t.start()
    for r in tfr.read_records(path, follow=True, follow_timeout=1.0, poll_interval=0.05):
        got.append(r)
    t.join()
    assert got == [b"first", b"second record"]


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_records_are_yielded_as_a_writer_flushes(tmp_path, compression):
    path = tmp_path / ("live.tfrecord" + (".gz" if compression else ""))
    expected = [b"rec-%d" % i * (i % 7 + 1) for i in range(60)]
    writer = tfr.RecordWriter(path, compression, atomic=False)
    writer.flush()
    seen_while_writing = []

    def produce():
        for k in range(0, 60, 10):
            writer.write_many(expected[k : k + 10])
            writer.flush()
            time.sleep(0.1)
        writer.close()

    t = threading.Thread(target=produce)
    t.start()
    got = []
    for r in tfr.read_records(
        path, compression=compression, follow=True, follow_timeout=1.0, poll_interval=0.02
    ):
        got.append(r)
        if t.is_alive():
            seen_while_writing.append(r)
    t.join()
    assert got == expected
    assert seen_while_writing, "records arrived while the writer was still writing"


def test_follow_timeout_ends_an_idle_stream(tmp_path):
    path = tmp_path / "idle.tfrecord"
    path.write_bytes(frame(b"only"))
    t0 = time.monotonic()
    got = list(tfr.read_records(path, follow=True, follow_timeout=0.3, poll_interval=0.05))
    assert got == [b"only"]
    assert 0.25 <= time.monotonic() - t0 < 3


def test_follow_still_reports_real_damage(tmp_path):
    path = tmp_path / "bad.tfrecord"
    data = bytearray(frame(b"good") + frame(b"damaged") + frame(b"after"))
    data[len(frame(b"good")) + 12] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(tfr.CorruptRecordError):
        list(tfr.read_records(path, follow=True, follow_timeout=0.2, poll_interval=0.05))
