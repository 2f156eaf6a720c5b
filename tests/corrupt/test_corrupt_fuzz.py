"""Fuzz-style: random and mutated bytes never escape as anything but a TFRecordError.

Every call either succeeds or raises a ``TFRecordError`` subclass: never another
exception type, never a pyo3 ``PanicException`` (a ``BaseException``), never a crash or a hang.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import tfrecordkit as tfr

SCHEMAS = [
    {"i": tfr.VarLen("int64"), "f": tfr.VarLen("float32"), "b": tfr.VarLen("bytes")},
    {"i": tfr.FixedLen([2], "int64", default=[0, 0]), "b": tfr.FixedLen([], "bytes", default=b"")},
    {"f": tfr.FixedLenSequence([], "float32", allow_missing=True), "s": tfr.VarLen("bytes")},
]


def _call(fn, *args):
    """Runs fn; returns ("ok", result) or ("error", exc). Anything else fails the test."""
    try:
        return "ok", fn(*args)
    except BaseException as err:
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise
        assert isinstance(err, tfr.TFRecordError), (
            f"{fn.__name__}({args[0][:40]!r}...) raised {type(err).__module__}."
            f"{type(err).__name__}: {err}"
        )
        return "error", err


def _seed_examples() -> list[bytes]:
    rng = np.random.default_rng(7)
    out = [
        tfr.encode_example(
            {
                "i": rng.integers(-(2**62), 2**62, size=5),
                "f": rng.standard_normal(4).astype(np.float32),
                "b": [b"alpha", b"", bytes(range(10))],
                "s": "text",
            }
        ),
        tfr.encode_example({"i": [1, 2], "b": b"x"}),
        tfr.encode_example({"f": [0.5, float("inf")], "empty": []}),
        tfr.encode_sequence_example(
            {"i": [3, 4], "b": b"ctx"}, {"tokens": [[1, 2], [3]], "words": [[b"a"], [b"b", b"c"]]}
        ),
    ]
    return out


def _mutate(rng: random.Random, data: bytes) -> bytes:
    d = bytearray(data)
    op = rng.randrange(6)
    if op == 0 and d:  # flip bits
        for _ in range(rng.randint(1, 4)):
            d[rng.randrange(len(d))] ^= 1 << rng.randrange(8)
    elif op == 1:  # truncate
        d = d[: rng.randrange(len(d) + 1)]
    elif op == 2 and d:  # overwrite a byte with something interesting
        d[rng.randrange(len(d))] = rng.choice([0x00, 0x7F, 0x80, 0xFF, 0x0B, 0x0C, 0x0F])
    elif op == 3:  # insert random bytes
        at = rng.randrange(len(d) + 1)
        d[at:at] = rng.randbytes(rng.randint(1, 8))
    elif op == 4 and d:  # delete a span
        at = rng.randrange(len(d))
        del d[at : at + rng.randint(1, 8)]
    else:  # splice with another copy
        at = rng.randrange(len(d) + 1)
        d = d[:at] + bytes(data[rng.randrange(len(data) + 1) :])
    return bytes(d)


def _exercise_payload(data: bytes, stats: dict[str, int]) -> None:
    status, decoded = _call(tfr.decode_example, data)
    stats[status] += 1
    _call(tfr.decode_sequence_example, data)
    for schema in SCHEMAS:
        _call(tfr.parse_examples, [data], schema)
    if status == "ok":
        assert isinstance(decoded, dict)
        # Whatever decodes also parses, value for value, as VarLen of its own dtype.
        schema = {}
        for key, value in decoded.items():
            if isinstance(value, np.ndarray):
                schema[key] = tfr.VarLen("int64" if value.dtype == np.int64 else "float32")
            elif value:
                schema[key] = tfr.VarLen("bytes")
        if not schema:
            return  # a schema of no features is refused, as TensorFlow refuses it
        pstatus, parsed = _call(tfr.parse_examples, [data], schema)
        assert pstatus == "ok", f"decode_example accepted {data!r} but parsing failed: {parsed}"
        for key in schema:
            got = parsed[key][0]
            want = decoded[key]
            if isinstance(want, np.ndarray):
                np.testing.assert_array_equal(got.view(want.dtype), want)
            else:
                assert list(got) == want


@pytest.mark.timeout(60)
def test_random_bytes_as_examples():
    rng = random.Random(1234)
    stats = {"ok": 0, "error": 0}
    for _ in range(5000):
        n = rng.choice([0, 1, 2, 3, 5, 8, 16, 64, 300])
        data = rng.randbytes(n)
        _exercise_payload(data, stats)
    # Random bytes are mostly malformed, but short ones sometimes decode (b"" is {}).
    assert stats["error"] > 0 and stats["ok"] > 0, stats


@pytest.mark.timeout(60)
def test_mutated_examples():
    rng = random.Random(99)
    seeds = _seed_examples()
    stats = {"ok": 0, "error": 0}
    for i in range(6000):
        data = _mutate(rng, seeds[i % len(seeds)])
        if rng.random() < 0.3:
            data = _mutate(rng, data)
        _exercise_payload(data, stats)
    assert stats["error"] > 0 and stats["ok"] > 0, stats


@pytest.mark.timeout(60)
def test_mutated_batches_report_the_failing_index():
    rng = random.Random(5)
    seeds = _seed_examples()[:3]
    schema = SCHEMAS[0]
    for _ in range(1500):
        batch = [rng.choice(seeds) for _ in range(6)]
        bad = rng.randrange(6)
        batch[bad] = _mutate(rng, batch[bad])
        status, result = _call(tfr.parse_examples, batch, schema)
        if status == "error":
            assert result.record_index == bad, (result.record_index, bad, str(result))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_mutated_record_files(tmp_path, compression):
    rng = random.Random(hash(compression) & 0xFFFF)
    records = [rng.randbytes(rng.randrange(0, 80)) for _ in range(40)]
    src = tmp_path / "src.tfrecord"
    with tfr.RecordWriter(src, compression) as w:
        w.write_many(records)
    original = src.read_bytes()
    path = tmp_path / "mutated.tfrecord"
    outcomes = {"ok": 0, "error": 0}
    for _ in range(800):
        data = _mutate(rng, original)
        path.write_bytes(data)
        for kwargs in (
            {"compression": compression},
            {"compression": "auto"},
            {"compression": compression, "verify": False},
            {"compression": compression, "on_error": "skip"},
        ):
            out = []
            try:
                for r in tfr.read_records(path, **kwargs):
                    out.append(r)
                outcomes["ok"] += 1
            except BaseException as err:
                if isinstance(err, (KeyboardInterrupt, SystemExit)):
                    raise
                assert isinstance(err, tfr.DataLossError), f"{kwargs}: {type(err).__name__}: {err}"
                assert err.path == str(path)
                assert isinstance(err.offset, int)
                outcomes["error"] += 1
            # A splice can repeat a stretch of the file, never more than once.
            assert len(out) <= 2 * len(records)
            if kwargs.get("verify", True):
                # With checksums verified, whatever comes out was written (in order).
                assert all(r in records for r in out)
        try:
            tfr.count(path, compression=compression)
        except BaseException as err:
            if isinstance(err, (KeyboardInterrupt, SystemExit)):
                raise
            assert isinstance(err, tfr.DataLossError), f"count: {type(err).__name__}: {err}"
        (report,) = tfr.verify(path, compression=compression)
        assert report.records <= 2 * len(records)
    assert outcomes["error"] > 0 and outcomes["ok"] > 0, outcomes


@pytest.mark.timeout(60)
def test_random_bytes_as_record_files(tmp_path):
    rng = random.Random(4321)
    path = tmp_path / "random.tfrecord"
    for _ in range(300):
        path.write_bytes(rng.randbytes(rng.choice([1, 7, 12, 13, 40, 500])))
        for compression in (None, "auto", "gzip", "zlib"):
            status = "ok"
            try:
                out = list(tfr.read_records(path, compression=compression, on_error="skip"))
                out += list(tfr.read_records(path, compression=compression))
            except BaseException as err:
                if isinstance(err, (KeyboardInterrupt, SystemExit)):
                    raise
                assert isinstance(err, tfr.DataLossError), f"{type(err).__name__}: {err}"
                status = "error"
            assert status in ("ok", "error")
