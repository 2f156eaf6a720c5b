"""``tfr.parse_examples`` against ``tf.io.parse_example``, value for value, on the same bytes."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import re
import struct

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr

I64, F32, BYT = "int64", "float32", "bytes"
_TF_DTYPE = {I64: tf.int64, F32: tf.float32, BYT: tf.string}

UKEY_VAR = "ключ 🙂"
UKEY_FIXED = "ünï/cödé"

# One rich schema, written twice: as TensorFlow specs (the oracle's input) and as tfrecordkit
# specs (what tfrecordkit is asked to parse with).
TF_SPEC = {
    "label": tf.io.FixedLenFeature([], tf.int64),
    "matrix": tf.io.FixedLenFeature([2, 3], tf.float32),
    "pair": tf.io.FixedLenFeature([2], tf.string),
    "cube": tf.io.FixedLenFeature([2, 1, 2], tf.int64),
    "opt_int": tf.io.FixedLenFeature([], tf.int64, default_value=-7),
    "opt_float": tf.io.FixedLenFeature([], tf.float32, default_value=0.25),
    "opt_name": tf.io.FixedLenFeature([], tf.string, default_value=b"none"),
    "opt_grid": tf.io.FixedLenFeature([2, 2], tf.float32, default_value=[[0.5, 1.5], [2.5, -3.5]]),
    "opt_ivec": tf.io.FixedLenFeature([3], tf.int64, default_value=[2**63 - 1, 0, -(2**63)]),
    "opt_bvec": tf.io.FixedLenFeature(
        [3, 1], tf.string, default_value=[[b"a"], [b""], [b"\xff\x00"]]
    ),
    "v_int": tf.io.VarLenFeature(tf.int64),
    "v_float": tf.io.VarLenFeature(tf.float32),
    "v_bytes": tf.io.VarLenFeature(tf.string),
    "seq_int": tf.io.FixedLenSequenceFeature([2], tf.int64, allow_missing=True, default_value=-1),
    "seq_float": tf.io.FixedLenSequenceFeature(
        [], tf.float32, allow_missing=True, default_value=9.5
    ),
    "seq_bytes": tf.io.FixedLenSequenceFeature(
        [], tf.string, allow_missing=True, default_value=b"pad"
    ),
    "seq_mat": tf.io.FixedLenSequenceFeature([2, 2], tf.float32, allow_missing=True),
    "seq_i0": tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True),
    "seq_b0": tf.io.FixedLenSequenceFeature([1], tf.string, allow_missing=True),
    UKEY_VAR: tf.io.VarLenFeature(tf.string),
    UKEY_FIXED: tf.io.FixedLenFeature([], tf.float32, default_value=1.25),
}

TFR_SCHEMA = {
    "label": tfr.FixedLen([], "int64"),
    "matrix": tfr.FixedLen([2, 3], "float32"),
    "pair": tfr.FixedLen([2], "bytes"),
    "cube": tfr.FixedLen([2, 1, 2], "int64"),
    "opt_int": tfr.FixedLen([], "int64", default=-7),
    "opt_float": tfr.FixedLen([], "float32", default=0.25),
    "opt_name": tfr.FixedLen([], "bytes", default=b"none"),
    "opt_grid": tfr.FixedLen([2, 2], "float32", default=[[0.5, 1.5], [2.5, -3.5]]),
    "opt_ivec": tfr.FixedLen([3], "int64", default=[2**63 - 1, 0, -(2**63)]),
    "opt_bvec": tfr.FixedLen([3, 1], "bytes", default=[[b"a"], [b""], [b"\xff\x00"]]),
    "v_int": tfr.VarLen("int64"),
    "v_float": tfr.VarLen("float32"),
    "v_bytes": tfr.VarLen("bytes"),
    "seq_int": tfr.FixedLenSequence([2], "int64", allow_missing=True, default=-1),
    "seq_float": tfr.FixedLenSequence([], "float32", allow_missing=True, default=9.5),
    "seq_bytes": tfr.FixedLenSequence([], "bytes", allow_missing=True, default=b"pad"),
    "seq_mat": tfr.FixedLenSequence([2, 2], "float32", allow_missing=True),
    "seq_i0": tfr.FixedLenSequence([], "int64", allow_missing=True),
    "seq_b0": tfr.FixedLenSequence([1], "string", allow_missing=True),
    UKEY_VAR: tfr.VarLen("bytes"),
    UKEY_FIXED: tfr.FixedLen([], "float32", default=1.25),
}


def _kind(spec) -> str:
    return {tf.int64: I64, tf.float32: F32, tf.string: BYT}[spec.dtype]


def _random_features(rv, tf_spec, noise: bool = True) -> dict:
    """Random ``{key: (kind, values)}`` that TF's parser accepts under ``tf_spec``.

    kind ``None`` is a Feature with no list set (TF treats it as missing / empty)."""
    rng = rv.rng
    out: dict = {}
    for key, spec in tf_spec.items():
        kind = _kind(spec)
        r = rng.random()
        if isinstance(spec, tf.io.FixedLenFeature):
            n = int(np.prod(spec.shape, dtype=np.int64))
            if spec.default_value is not None and r < 0.45:
                if r < 0.08:
                    out[key] = (None, [])
                continue
            out[key] = (kind, rv.values(kind, n))
        elif isinstance(spec, tf.io.VarLenFeature):
            if r < 0.15:
                continue
            if r < 0.22:
                out[key] = (None, [])
            else:
                out[key] = (kind, rv.values(kind, int(rng.integers(0, 7))))
        else:
            if r < 0.2:
                continue
            if r < 0.25:
                out[key] = (None, [])
            else:
                per_row = int(np.prod(spec.shape, dtype=np.int64))
                out[key] = (kind, rv.values(kind, per_row * int(rng.integers(0, 5))))
    if noise:
        # Features the schema does not name, of every kind, are ignored by both parsers.
        for i in range(int(rng.integers(0, 4))):
            kind = str(rng.choice([I64, F32, BYT]))
            out[f"noise_{i}_{kind}"] = (kind, rv.values(kind, int(rng.integers(0, 4))))
    return out


def _serialize_tf(tf_example, features) -> bytes:
    return tf_example(features).SerializeToString()


def _serialize_tfr(tfr_value, features) -> bytes:
    return tfr.encode_example({k: tfr_value(kind, v) for k, (kind, v) in features.items()})


# -- 4. random Examples over a rich schema ------------------------------------------------------


@pytest.mark.parametrize("seed", [101, 202])
def test_random_tf_serialized_examples(seed, random_values, tf_example, assert_parse_matches):
    rv = random_values(seed)
    records = [_serialize_tf(tf_example, _random_features(rv, TF_SPEC)) for _ in range(1500)]
    assert_parse_matches(records, TF_SPEC, TFR_SCHEMA)


@pytest.mark.parametrize("seed", [303, 404])
def test_random_tfr_serialized_examples(seed, random_values, tfr_value, assert_parse_matches):
    rv = random_values(seed)
    records = [_serialize_tfr(tfr_value, _random_features(rv, TF_SPEC)) for _ in range(1500)]
    assert_parse_matches(records, TF_SPEC, TFR_SCHEMA)


def test_mixed_batch_same_values_both_serializers(
    random_values, tf_example, tfr_value, assert_parse_matches
):
    # The same logical Examples serialized by TF and by us parse to the same batch, and each
    # half equals TF's parse.
    rv = random_values(505)
    feats = [_random_features(rv, TF_SPEC) for _ in range(600)]
    theirs = [_serialize_tf(tf_example, f) for f in feats]
    ours = [_serialize_tfr(tfr_value, f) for f in feats]
    a = assert_parse_matches(theirs, TF_SPEC, TFR_SCHEMA)
    b = assert_parse_matches(ours, TF_SPEC, TFR_SCHEMA)
    assert_parse_matches(theirs + ours, TF_SPEC, TFR_SCHEMA)
    for key in TF_SPEC:
        if isinstance(a[key], tfr.Ragged):
            np.testing.assert_array_equal(a[key].row_splits, b[key].row_splits)
        else:
            assert a[key].shape == b[key].shape


def test_tf_spec_objects_accepted_directly(
    random_values, tf_example, assert_parse_matches, assert_values_identical
):
    rv = random_values(606)
    records = [_serialize_tf(tf_example, _random_features(rv, TF_SPEC)) for _ in range(500)]
    via_tf_spec = assert_parse_matches(records, TF_SPEC)  # schema = the tf.io specs
    via_tfr = tfr.parse_examples(records, TFR_SCHEMA)
    for key, spec in TF_SPEC.items():
        if isinstance(via_tfr[key], tfr.Ragged):
            np.testing.assert_array_equal(via_tf_spec[key].row_splits, via_tfr[key].row_splits)
            assert_values_identical(via_tf_spec[key].values, via_tfr[key].values, _kind(spec), key)
        else:
            assert_values_identical(via_tf_spec[key], via_tfr[key], _kind(spec), key)
    # A tfr.Schema built from tf.io specs, and one mixing both kinds of spec, parse the same.
    mixed = {k: (TF_SPEC[k] if i % 2 else TFR_SCHEMA[k]) for i, k in enumerate(TF_SPEC)}
    assert_parse_matches(records, TF_SPEC, mixed)
    assert_parse_matches(records, TF_SPEC, tfr.Schema(TF_SPEC))


def test_schema_from_tf_spec_survives_json(random_values, tf_example, assert_parse_matches):
    rv = random_values(707)
    records = [_serialize_tf(tf_example, _random_features(rv, TF_SPEC)) for _ in range(300)]
    schema = tfr.Schema.from_json(tfr.Schema(TF_SPEC).to_json())
    assert_parse_matches(records, TF_SPEC, schema)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_random_small_batches_and_random_schemas(
    seed, random_values, tf_example, tfr_value, assert_parse_matches
):
    # Random sub-schemas and small batch sizes (1..40) shake out padding and batch edge cases.
    rv = random_values(1000 + seed)
    rng = rv.rng
    for _ in range(12):
        keys = [k for k in TF_SPEC if rng.random() < 0.5] or ["v_int"]
        spec = {k: TF_SPEC[k] for k in keys}
        schema = {k: TFR_SCHEMA[k] for k in keys}
        feats = [
            _random_features(rv, spec, noise=rng.random() < 0.5)
            for _ in range(int(rng.integers(1, 41)))
        ]
        by_tf = rng.random() < 0.5
        records = [
            _serialize_tf(tf_example, f) if by_tf else _serialize_tfr(tfr_value, f) for f in feats
        ]
        assert_parse_matches(records, spec, schema)


def test_empty_batch(assert_parse_matches):
    got = assert_parse_matches([], TF_SPEC, TFR_SCHEMA)
    assert got["matrix"].shape == (0, 2, 3)
    assert len(got["v_int"]) == 0


def test_single_record_parse_example_matches_parse_single_example(
    random_values, tf_example, assert_values_identical
):
    rv = random_values(808)
    for _ in range(30):
        record = _serialize_tf(tf_example, _random_features(rv, TF_SPEC))
        expected = tf.io.parse_single_example(record, TF_SPEC)
        got = tfr.parse_example(record, TFR_SCHEMA)
        for key, spec in TF_SPEC.items():
            e = expected[key]
            if isinstance(spec, tf.io.VarLenFeature):
                assert_values_identical(got[key], e.values.numpy(), _kind(spec), key)
            elif isinstance(spec, tf.io.FixedLenFeature) and _kind(spec) == BYT and not spec.shape:
                # TF gives a scalar string as a bytes object; so must we.
                assert type(got[key]) is bytes and got[key] == e.numpy(), key
            else:
                assert type(got[key]) is type(e.numpy()), key
                assert_values_identical(got[key], e.numpy(), _kind(spec), key)


# -- defaults and missing features ---------------------------------------------------------------


def test_all_optional_features_missing(assert_parse_matches):
    optional = {
        k: s
        for k, s in TF_SPEC.items()
        if not (isinstance(s, tf.io.FixedLenFeature) and s.default_value is None)
    }
    records = [tf.train.Example().SerializeToString()] * 5 + [b""]
    got = assert_parse_matches(records, optional, {k: TFR_SCHEMA[k] for k in optional})
    assert got["seq_mat"].shape == (6, 0, 2, 2)
    assert got["opt_grid"].shape == (6, 2, 2)


@pytest.mark.parametrize(
    ("tf_spec", "tfr_spec"),
    [
        (tf.io.FixedLenFeature([], tf.int64, default_value=0), tfr.FixedLen([], "int64", 0)),
        (
            tf.io.FixedLenFeature([], tf.int64, default_value=-(2**63)),
            tfr.FixedLen((), "int64", -(2**63)),
        ),
        (
            tf.io.FixedLenFeature([], tf.float32, default_value=float("nan")),
            tfr.FixedLen([], "float32", float("nan")),
        ),
        (
            tf.io.FixedLenFeature([], tf.float32, default_value=-0.0),
            tfr.FixedLen([], "float32", -0.0),
        ),
        (
            tf.io.FixedLenFeature([], tf.float32, default_value=0.1),
            tfr.FixedLen([], "float32", 0.1),
        ),
        (tf.io.FixedLenFeature([], tf.string, default_value=""), tfr.FixedLen([], "bytes", "")),
        (
            tf.io.FixedLenFeature([], tf.string, default_value="ü🙂"),
            tfr.FixedLen([], "bytes", "ü🙂"),
        ),
        (tf.io.FixedLenFeature([1], tf.int64, default_value=[3]), tfr.FixedLen([1], "int64", [3])),
        (
            tf.io.FixedLenFeature(
                [2, 3], tf.float32, default_value=np.arange(6, dtype=np.float32).reshape(2, 3)
            ),
            tfr.FixedLen([2, 3], "float32", np.arange(6, dtype=np.float32).reshape(2, 3)),
        ),
        (
            tf.io.FixedLenFeature([2, 3], tf.int64, default_value=list(range(6))),
            tfr.FixedLen([2, 3], "int64", list(range(6))),
        ),
        (
            tf.io.FixedLenFeature([2], tf.string, default_value=[b"x", "ÿ"]),
            tfr.FixedLen([2], "bytes", [b"x", "ÿ"]),
        ),
        (
            tf.io.FixedLenSequenceFeature(
                [3], tf.float32, allow_missing=True, default_value=float("-inf")
            ),
            tfr.FixedLenSequence([3], "float32", True, float("-inf")),
        ),
        (
            tf.io.FixedLenSequenceFeature([], tf.string, allow_missing=True, default_value="ü"),
            tfr.FixedLenSequence([], "bytes", True, "ü"),
        ),
    ],
    ids=lambda s: repr(s)[:60],
)
def test_defaults_fill_like_tf(
    tf_spec, tfr_spec, random_values, tf_example, tfr_value, assert_parse_matches
):
    rv = random_values(909)
    spec = {"x": tf_spec, "y": tf.io.FixedLenFeature([], tf.int64)}
    schema = {"x": tfr_spec, "y": tfr.FixedLen([], "int64")}
    records = []
    for i in range(60):
        f = _random_features(rv, spec)
        f["y"] = (I64, [i])
        records.append(_serialize_tf(tf_example, f) if i % 2 else _serialize_tfr(tfr_value, f))
    records.append(tf_example({"y": (I64, [0])}).SerializeToString())  # surely missing
    assert_parse_matches(records, spec, schema)


# -- bytes: unicode, binary, large -----------------------------------------------------------------


def test_unicode_keys_and_binary_values(tf_example, tfr_value, assert_parse_matches):
    keys = ["ключ", "日本語", "🙂", "a\u0301", "", " ", "tab\tkey", "x" * 300]
    values = [
        b"",
        b"\x00",
        b"\xff\xfe",
        "é".encode(),
        "🙂".encode(),
        "é".encode("latin-1"),
        bytes(range(256)),
        "\u0000".encode(),
    ]
    spec = {}
    for i, k in enumerate(keys):
        spec[k] = tf.io.VarLenFeature(tf.string) if i % 2 else tf.io.FixedLenFeature([2], tf.string)
    records = []
    for r in range(40):
        feats = {}
        for i, k in enumerate(keys):
            n = 2 if i % 2 == 0 else r % 4
            feats[k] = (BYT, [values[(r + i + j) % len(values)] for j in range(n)])
        records.append(
            _serialize_tf(tf_example, feats) if r % 2 else _serialize_tfr(tfr_value, feats)
        )
    assert_parse_matches(records, spec)
    # Keys that differ only in Unicode normalization are different features.
    nfc = {
        "\u00e9": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        "e\u0301": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
    }
    rec = tfr.encode_example({"\u00e9": 1, "e\u0301": 2})
    got = assert_parse_matches([rec, tf_example({"e\u0301": (I64, [5])}).SerializeToString()], nfc)
    assert got["\u00e9"].tolist() == [1, -1]


def test_large_bytes_values(tf_example, tfr_value, assert_parse_matches):
    rng = np.random.default_rng(77)
    spec = {
        "img": tf.io.FixedLenFeature([], tf.string),
        "chunks": tf.io.VarLenFeature(tf.string),
        "frames": tf.io.FixedLenSequenceFeature([], tf.string, allow_missing=True),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    records = []
    for i in range(6):
        feats = {
            "img": (BYT, [rng.bytes(1_000_000 + i)]),
            "chunks": (BYT, [rng.bytes(int(rng.integers(0, 400_000))) for _ in range(i % 3)]),
            "frames": (BYT, [rng.bytes(300_000)] * (i % 2)),
            "label": (I64, [i]),
        }
        records.append(
            _serialize_tf(tf_example, feats) if i % 2 else _serialize_tfr(tfr_value, feats)
        )
    got = assert_parse_matches(records, spec)
    assert all(len(v) >= 1_000_000 for v in got["img"])


def test_many_values_per_feature(tf_example, assert_parse_matches, random_values):
    rv = random_values(55)
    spec = {
        "ints": tf.io.VarLenFeature(tf.int64),
        "floats": tf.io.FixedLenFeature([50_000], tf.float32),
        "seq": tf.io.FixedLenSequenceFeature([4], tf.int64, allow_missing=True),
    }
    records = [
        _serialize_tf(
            tf_example,
            {
                "ints": (I64, rv.values(I64, 20_000 * (i % 3))),
                "floats": (F32, rv.values(F32, 50_000)),
                "seq": (I64, rv.values(I64, 4 * 1000 * i)),
            },
        )
        for i in range(4)
    ]
    assert_parse_matches(records, spec)


def test_many_similar_feature_names(tf_example, tfr_value, assert_parse_matches, random_values):
    # Names that share prefixes, differ by one byte, or only by length: the name lookup must
    # pick exactly the feature TF picks.
    rv = random_values(66)
    names = (
        [
            "a",
            "ab",
            "abc",
            "a\u0000",
            "b",
            "ba",
            "A",
            "x" * 64,
            "x" * 65,
            "feature/0",
            "feature/00",
            "feature_0",
        ]
        + [f"f{i}" for i in range(120)]
        + [f"f{i:03d}" for i in range(60)]
    )
    spec = {}
    for i, name in enumerate(names):
        dtype = [tf.int64, tf.float32, tf.string][i % 3]
        spec[name] = (
            tf.io.FixedLenFeature([], dtype, default_value=[-1, -1.0, b"?"][i % 3])
            if i % 2
            else tf.io.VarLenFeature(dtype)
        )
    records = []
    for r in range(120):
        feats = {}
        for i, name in enumerate(names):
            if rv.rng.random() < 0.6:
                kind = _kind(spec[name])
                n = 1 if i % 2 else int(rv.rng.integers(0, 3))
                feats[name] = (kind, rv.values(kind, n))
        records.append(
            _serialize_tf(tf_example, feats) if r % 2 else _serialize_tfr(tfr_value, feats)
        )
    # Parse with the full schema and with a schema of every third name only.
    assert_parse_matches(records, spec)
    sub = {k: v for i, (k, v) in enumerate(spec.items()) if i % 3 == 0}
    assert_parse_matches(records, sub)


# -- wire forms both TF parsers agree on ---------------------------------------------------


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def _ld(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _entry(key: str, feature: bytes) -> bytes:
    return _ld(1, _ld(1, key.encode()) + _ld(2, feature))


def _example(*entries: bytes) -> bytes:
    return _ld(1, b"".join(entries))


def test_wire_forms_parse_like_tf(assert_parse_matches):
    unpacked_ints = _ld(3, b"".join(_varint(1 << 3) + _varint(v) for v in [1, -2, 3]))
    unpacked_floats = _ld(
        2, b"".join(_varint(1 << 3 | 5) + struct.pack("<f", v) for v in [1.5, -2.5])
    )
    packed_ints = lambda vs: _ld(3, _ld(1, b"".join(_varint(v) for v in vs)))  # noqa: E731
    records = [
        _example(_entry("i", unpacked_ints), _entry("f", unpacked_floats)),
        _example(_entry("i", packed_ints([1])), _entry("i", packed_ints([2, 3]))),  # last wins
        _ld(1, _entry("i", packed_ints([7])))
        + _ld(1, _entry("f", _ld(2, _ld(1, struct.pack("<f", 4.0))))),
        _example(_entry("i", packed_ints([4]) + _varint(7 << 3) + _varint(1)))
        + _varint(5 << 3)
        + _varint(99)
        + _ld(9, b"unknown"),
        _ld(1, _ld(1, _ld(2, packed_ints([8])) + _ld(1, b"i"))),  # map entry value before key
        b"",
    ]
    spec = {
        "i": tf.io.VarLenFeature(tf.int64),
        "f": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True, default_value=-1.0),
    }
    for r in records:  # TF's proto parser and fast parser agree on these
        proto = tf.train.Example.FromString(r)
        fast = tf.io.parse_single_example(r, spec)["i"].values.numpy().tolist()
        assert fast == list(proto.features.feature["i"].int64_list.value)
    got = assert_parse_matches(records, spec)
    assert got["i"].to_list() == [[1, -2, 3], [2, 3], [7], [4], [8], []]


# -- error agreement -----------------------------------------------------------------------------

ERROR_SPEC = {
    "req": tf.io.FixedLenFeature([2], tf.int64),
    "opt": tf.io.FixedLenFeature([], tf.float32, default_value=0.0),
    "var": tf.io.VarLenFeature(tf.float32),
    "seq": tf.io.FixedLenSequenceFeature([2], tf.string, allow_missing=True),
    "zero": tf.io.FixedLenFeature([0], tf.int64),
    UKEY_FIXED: tf.io.FixedLenFeature([], tf.string, default_value=b""),
}
GOOD = {
    "req": (I64, [1, 2]),
    "opt": (F32, [0.5]),
    "var": (F32, [1.0]),
    "seq": (BYT, [b"a", b"b"]),
    "zero": (I64, []),
}

ERROR_CASES = {
    "missing_required": ("req", None),
    "missing_required_kindless": ("req", (None, [])),
    "required_too_many": ("req", (I64, [1, 2, 3])),
    "required_too_few": ("req", (I64, [1])),
    "required_empty_typed": ("req", (I64, [])),
    "required_wrong_dtype_float": ("req", (F32, [1.0, 2.0])),
    "required_wrong_dtype_bytes": ("req", (BYT, [b"1", b"2"])),
    "default_present_wrong_count": ("opt", (F32, [1.0, 2.0])),
    "default_present_empty_typed": ("opt", (F32, [])),
    "default_present_wrong_dtype": ("opt", (I64, [1])),
    "varlen_wrong_dtype": ("var", (BYT, [b"x"])),
    "varlen_wrong_dtype_empty": ("var", (I64, [])),
    "sequence_not_multiple": ("seq", (BYT, [b"a", b"b", b"c"])),
    "sequence_wrong_dtype": ("seq", (F32, [1.0, 2.0])),
    "zero_shape_missing": ("zero", None),
    "zero_shape_nonempty": ("zero", (I64, [1])),
    "unicode_key_wrong_dtype": (UKEY_FIXED, (I64, [1])),
}


def _error_records(tf_example, tfr_value, bad_key, bad_value, bad_index, n, serializer):
    records = []
    for i in range(n):
        feats = dict(GOOD)
        if i == bad_index:
            if bad_value is None:
                del feats[bad_key]
            else:
                feats[bad_key] = bad_value
        records.append(
            _serialize_tf(tf_example, feats)
            if serializer == "tf"
            else _serialize_tfr(tfr_value, feats)
        )
    return records


@pytest.mark.parametrize("serializer", ["tf", "tfr"])
@pytest.mark.parametrize("bad_index", [0, 5, 11])
@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_agree_with_tf(
    case, bad_index, serializer, tf_example, tfr_value, tf_parse, assert_parse_matches
):
    bad_key, bad_value = ERROR_CASES[case]
    records = _error_records(tf_example, tfr_value, bad_key, bad_value, bad_index, 12, serializer)
    good = records[:bad_index] + records[bad_index + 1 :]
    assert_parse_matches(good, ERROR_SPEC)  # without the bad record both parsers succeed
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf_parse(records, ERROR_SPEC)
    with pytest.raises(tfr.SchemaError) as info:
        tfr.parse_examples(records, ERROR_SPEC)
    assert info.value.key == bad_key
    assert info.value.record_index == bad_index
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "case", ["missing_required", "required_too_many", "varlen_wrong_dtype", "sequence_not_multiple"]
)
def test_errors_agree_with_tf_single_example(case, tf_example):
    bad_key, bad_value = ERROR_CASES[case]
    feats = dict(GOOD)
    if bad_value is None:
        del feats[bad_key]
    else:
        feats[bad_key] = bad_value
    record = tf_example(feats).SerializeToString()
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_single_example(record, ERROR_SPEC)
    with pytest.raises(tfr.SchemaError) as info:
        tfr.parse_example(record, ERROR_SPEC)
    assert info.value.key == bad_key
    assert info.value.record_index == 0


def test_first_bad_record_in_a_long_batch(random_values, tf_example, tf_parse):
    rv = random_values(1234)
    records = [_serialize_tf(tf_example, _random_features(rv, TF_SPEC)) for _ in range(2000)]
    feats = _random_features(rv, TF_SPEC)
    del feats["label"]
    records[1733] = _serialize_tf(tf_example, feats)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label"):
        tf_parse(records, TF_SPEC)
    with pytest.raises(tfr.SchemaError) as info:
        tfr.parse_examples(records, TFR_SCHEMA)
    assert info.value.key == "label"
    assert info.value.record_index == 1733


def test_parse_follows_tf_proto_semantics_on_merged_messages():
    # Protobuf merge rules, as tf.train.Example.FromString applies them: a packed list sent in
    # two chunks is their concatenation; of two list kinds in one Feature the last one wins.
    packed = lambda vs: _ld(1, b"".join(_varint(v) for v in vs))  # noqa: E731
    split_chunks = _example(_entry("i", _ld(3, packed([1]) + packed([5, 6]))))
    two_kinds = _example(_entry("i", _ld(2, _ld(1, struct.pack("<f", 2.0))) + _ld(3, packed([9]))))
    for record, values in [(split_chunks, [1, 5, 6]), (two_kinds, [9])]:
        proto = tf.train.Example.FromString(record)
        assert list(proto.features.feature["i"].int64_list.value) == values
        assert tfr.decode_example(record)["i"].tolist() == values
        got = tfr.parse_examples([record], {"i": tf.io.VarLenFeature(tf.int64)})
        assert got["i"].values.tolist() == values


def test_a_schema_of_no_features_is_refused_by_every_parser_as_by_tf(tmp_path):
    records = tfr.encode_examples({"x": np.arange(3, dtype=np.int64)})
    with pytest.raises(ValueError, match="features"):
        tf.io.parse_example(records, {})
    path = str(tmp_path / "a.tfrecord")
    with tfr.RecordWriter(path) as w:
        w.write_many(records)
    parsers = {
        "parse_examples()": lambda: tfr.parse_examples(records, {}),
        "parse_example()": lambda: tfr.parse_example(records[0], {}),
        "read_examples()": lambda: tfr.read_examples(path, {}),
        "parse()": lambda: tfr.Dataset.from_files(path).parse({}),
    }
    for who, parse in parsers.items():
        with pytest.raises(ValueError, match=rf"names no features, so {re.escape(who)} would"):
            parse()
    # An Arrow batch of no columns still holds its rows: the records' count.
    assert tfr.read_arrow(path, {}).read_all().num_rows == 3
    assert (
        tfr.read_arrow(path, {"x": tfr.FixedLen([], "int64")}, columns=[]).read_all().num_rows == 3
    )


def test_a_sequence_example_parse_needs_features_on_one_side_only():
    record = tfr.encode_sequence_example({"id": 7}, {"t": [[1], [2]]})
    lists = {"t": tfr.FixedLenSequence([1], "int64")}
    context, parsed, lengths = tfr.parse_sequence_example([record], {}, lists)
    assert context == {} and lengths["t"].tolist() == [2]
    assert parsed["t"].tolist() == [[[1], [2]]]
    with pytest.raises(ValueError, match="give a context_schema, a sequence_schema or both"):
        tfr.parse_sequence_example([record], {}, {})
    with pytest.raises(ValueError, match="names no features, so IndexedDataset would"):
        tfr.IndexedDataset([], {})
