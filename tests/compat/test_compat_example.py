"""tf.train.Example encoding and decoding against TensorFlow's protos and parser."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import struct

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

I64, F32, BYT = "int64", "float32", "bytes"

# (input value, the list kind TF documents for it, the values TF's proto is built from)
COERCIONS = {
    "py_int": (7, I64, [7]),
    "py_negative_int": (-(2**63), I64, [-(2**63)]),
    "py_max_int": (2**63 - 1, I64, [2**63 - 1]),
    "py_bool_true": (True, I64, [1]),
    "py_bool_false": (False, I64, [0]),
    "np_int8": (np.int8(-3), I64, [-3]),
    "np_uint8": (np.uint8(255), I64, [255]),
    "np_int32": (np.int32(-(2**31)), I64, [-(2**31)]),
    "np_uint32": (np.uint32(2**32 - 1), I64, [2**32 - 1]),
    "np_int64": (np.int64(2**62), I64, [2**62]),
    "np_uint64_small": (np.uint64(2**63 - 1), I64, [2**63 - 1]),
    "np_bool": (np.bool_(True), I64, [1]),
    "int_list": ([1, -2, 3], I64, [1, -2, 3]),
    "mixed_int_list": ([True, 2, np.int16(3), np.uint64(4)], I64, [1, 2, 3, 4]),
    "int_ndarray_2d": (np.arange(6, dtype=np.int64).reshape(2, 3), I64, list(range(6))),
    "int32_ndarray_3d": (
        np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 12,
        I64,
        list(range(-12, 12)),
    ),
    "uint16_ndarray": (np.array([0, 65535], dtype=np.uint16), I64, [0, 65535]),
    "bool_ndarray": (np.array([[True, False], [False, True]]), I64, [1, 0, 0, 1]),
    "fortran_order_ndarray": (
        np.asfortranarray(np.arange(6).reshape(2, 3)),
        I64,
        [0, 1, 2, 3, 4, 5],
    ),
    "strided_ndarray": (np.arange(10, dtype=np.int64)[::3], I64, [0, 3, 6, 9]),
    "zero_d_int": (np.array(5), I64, [5]),
    "py_float": (0.1, F32, [0.1]),
    "py_float_overflow_to_inf": (1e39, F32, [float("inf")]),
    "py_float_underflow_to_zero": (1e-50, F32, [0.0]),
    "py_float_inf": (float("-inf"), F32, [float("-inf")]),
    "negative_zero": (-0.0, F32, [-0.0]),
    "np_float16": (np.float16(0.333), F32, [float(np.float16(0.333))]),
    "np_float32": (np.float32(1.1), F32, [float(np.float32(1.1))]),
    "np_float64": (np.float64(1.1), F32, [1.1]),
    "float_list": ([1.0, 2.5, -3.75], F32, [1.0, 2.5, -3.75]),
    "float_list_with_ints": ([1, 2.5], F32, [1.0, 2.5]),
    "float64_ndarray_2d": (
        np.linspace(-1, 1, 6).reshape(3, 2),
        F32,
        np.linspace(-1, 1, 6).tolist(),
    ),
    "float32_ndarray": (
        np.array([1e-45, 3.4e38, -1.5], dtype=np.float32),
        F32,
        np.array([1e-45, 3.4e38, -1.5], dtype=np.float32).tolist(),
    ),
    "zero_d_float": (np.array(2.5), F32, [2.5]),
    "bytes": (b"\x00\xffabc", BYT, [b"\x00\xffabc"]),
    "empty_bytes": (b"", BYT, [b""]),
    "str": ("héllo 🙂", BYT, ["héllo 🙂".encode()]),
    "empty_str": ("", BYT, [b""]),
    "np_bytes_scalar": (np.bytes_(b"xy"), BYT, [b"xy"]),
    "np_str_scalar": (np.str_("ключ"), BYT, ["ключ".encode()]),
    "bytes_list": ([b"a", b"", b"\x00"], BYT, [b"a", b"", b"\x00"]),
    "str_list": (["a", "日本語", ""], BYT, [b"a", "日本語".encode(), b""]),
    "mixed_bytes_str_list": ([b"a", "é"], BYT, [b"a", "é".encode()]),
    "unicode_ndarray": (
        np.array([["ab", "çé"], ["🙂", ""]]),
        BYT,
        [b"ab", "çé".encode(), "🙂".encode(), b""],
    ),
    "bytes_ndarray": (np.array([b"ab", b"\xff\x00z"]), BYT, [b"ab", b"\xff\x00z"]),
    "object_ndarray": (np.array([b"a", "b"], dtype=object), BYT, [b"a", b"b"]),
    "empty_int64_ndarray": (np.zeros(0, dtype=np.int64), I64, []),
    "empty_float32_ndarray": (np.zeros((2, 0), dtype=np.float32), F32, []),
    "empty_bytes_ndarray": (np.array([], dtype="S1"), BYT, []),
}


@pytest.mark.parametrize("name", list(COERCIONS))
def test_encode_example_coercion_matches_tf_proto(name, tf_feature):
    value, kind, tf_values = COERCIONS[name]
    expected = tf.train.Example(
        features=tf.train.Features(
            feature={"f": tf_feature(kind, tf_values), "other": tf_feature(I64, [1])}
        )
    )
    parsed = tf.train.Example.FromString(tfr.encode_example({"f": value, "other": 1}))
    assert parsed == expected, f"TF parsed {parsed}, expected {expected}"
    assert parsed.features.feature["f"].WhichOneof("kind") == expected.features.feature[
        "f"
    ].WhichOneof("kind")


def test_encode_example_many_features_and_unicode_keys(tf_feature):
    features = {
        "label": (3, I64, [3]),
        "ключ": ("значение", BYT, ["значение".encode()]),
        "日本語/キー": ([1.5, 2.5], F32, [1.5, 2.5]),
        "🙂": (np.arange(3), I64, [0, 1, 2]),
        "": (b"empty key", BYT, [b"empty key"]),
        "a b\tc\n": (np.float32(-1), F32, [-1.0]),
    }
    expected = tf.train.Example(
        features=tf.train.Features(
            feature={k: tf_feature(kind, v) for k, (_, kind, v) in features.items()}
        )
    )
    parsed = tf.train.Example.FromString(
        tfr.encode_example({k: v for k, (v, _, _) in features.items()})
    )
    assert parsed == expected


def test_encode_example_nan_float_bits(tf_feature):
    # Proto equality cannot compare NaN: compare the float32 bits TF decodes.
    values = np.array([np.nan, -np.nan, np.inf, -0.0, 1e-45], dtype=np.float32)
    values[1] = np.frombuffer(struct.pack("<I", 0x7FC00001), dtype=np.float32)[0]
    parsed = tf.train.Example.FromString(tfr.encode_example({"f": values}))
    got = np.array(parsed.features.feature["f"].float_list.value, dtype=np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), values.view(np.uint32))


def test_encode_example_large_bytes(tf_feature):
    rng = np.random.default_rng(11)
    big = rng.bytes(1_200_000)
    parsed = tf.train.Example.FromString(tfr.encode_example({"img": big, "n": len(big)}))
    assert parsed.features.feature["img"].bytes_list.value == [big]
    assert parsed.features.feature["n"].int64_list.value == [len(big)]


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, np.uint64(2**63)])
def test_encode_example_rejects_out_of_int64_range_as_tf_does(value):
    with pytest.raises((ValueError, TypeError)):
        tf.train.Int64List(value=[value])
    with pytest.raises((ValueError, OverflowError, TypeError)):
        tfr.encode_example({"x": value})


def test_encode_example_empty_list_parses_as_tf_parses_empty(tf_example, tf_parse):
    # An untyped empty list has no list kind; TF's parser must treat it like TF's own empty
    # typed lists for VarLen and FixedLenSequence features, and like a missing feature for
    # FixedLen features with a default.
    ours = tfr.encode_example({"v": [], "s": [], "d": []})
    for dtype, kind in [(tf.int64, I64), (tf.float32, F32), (tf.string, BYT)]:
        spec = {
            "v": tf.io.VarLenFeature(dtype),
            "s": tf.io.FixedLenSequenceFeature([], dtype, allow_missing=True),
        }
        theirs = tf_example({"v": (kind, []), "s": (kind, [])}).SerializeToString()
        a, b = tf_parse([ours], spec), tf_parse([theirs], spec)
        assert a["v"].values.numpy().tolist() == b["v"].values.numpy().tolist() == []
        assert a["s"].shape == b["s"].shape == (1, 0)
    missing = tf.train.Example().SerializeToString()
    spec = {"d": tf.io.FixedLenFeature([], tf.int64, default_value=9)}
    assert (
        tf_parse([ours], spec)["d"].numpy().tolist()
        == tf_parse([missing], spec)["d"].numpy().tolist()
        == [9]
    )


# -- decoding what TF built --------------------------------------------------------------------

DECODE_CASES = {
    "int64": (I64, [0, 1, -1, 2**63 - 1, -(2**63), 300]),
    "float32": (F32, [0.0, -0.0, 1.5, float("inf"), float("-inf"), 3.4028234663852886e38, 1e-45]),
    "bytes": (BYT, [b"", b"\x00", "ünï🙂".encode(), bytes(range(256))]),
    "empty_int64": (I64, []),
    "empty_float32": (F32, []),
    "empty_bytes": (BYT, []),
    "no_list": (None, []),
    "big_bytes": (BYT, [b"x" * 1_000_003]),
    "many_ints": (I64, list(range(-5000, 5000, 7))),
}


def _assert_decoded(got, kind, values, key):
    if kind == I64:
        assert isinstance(got, np.ndarray) and got.dtype == np.int64, key
        assert got.ndim == 1
        np.testing.assert_array_equal(got, np.array(values, dtype=np.int64))
    elif kind == F32:
        assert isinstance(got, np.ndarray) and got.dtype == np.float32, key
        assert got.ndim == 1
        np.testing.assert_array_equal(
            got.view(np.uint32), np.array(values, dtype=np.float32).view(np.uint32)
        )
    else:
        assert isinstance(got, list), key
        assert all(type(v) is bytes for v in got), key
        assert got == list(values), key


@pytest.mark.parametrize("name", list(DECODE_CASES))
def test_decode_example_of_tf_example(name, tf_example):
    kind, values = DECODE_CASES[name]
    data = tf_example({"f": (kind, values), "g": (I64, [5])}).SerializeToString()
    got = tfr.decode_example(data)
    assert set(got) == {"f", "g"}
    _assert_decoded(got["f"], kind, values, name)
    _assert_decoded(got["g"], I64, [5], "g")


def test_decode_example_of_empty_tf_example():
    assert tfr.decode_example(tf.train.Example().SerializeToString()) == {}
    empty_features = tf.train.Example(features=tf.train.Features()).SerializeToString()
    assert tfr.decode_example(empty_features) == {}


def test_decode_example_of_many_random_tf_examples(tf_example, random_values):
    rv = random_values(21)
    rng = rv.rng
    keys = ["a", "ключ", "🙂", "x/y", ""]
    for _ in range(400):
        features = {}
        for key in keys:
            if rng.random() < 0.2:
                continue
            kind = str(rng.choice([I64, F32, BYT]))
            features[key] = (kind, rv.values(kind, int(rng.integers(0, 6))))
        proto = tf_example(features)
        got = tfr.decode_example(proto.SerializeToString())
        assert set(got) == set(features)
        for key, (kind, values) in features.items():
            _assert_decoded(got[key], kind, values, key)
        # And the proto TF parses back from our re-encoding is the same message (NaN aside).
        again = tfr.encode_example(got)
        reparsed = tf.train.Example.FromString(again)
        for key, (kind, values) in features.items():
            if kind == BYT and not values:
                continue  # an empty list[bytes] carries no list kind to re-encode
            assert reparsed.features.feature[key].WhichOneof("kind") == proto.features.feature[
                key
            ].WhichOneof("kind")


# -- wire forms TF's protobuf parser accepts ---------------------------------------------------


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _ld(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _entry(key: str, feature: bytes) -> bytes:
    return _ld(1, _ld(1, key.encode()) + _ld(2, feature))


def _example(*entries: bytes) -> bytes:
    return _ld(1, b"".join(entries))


def _int_list(values, packed=True) -> bytes:
    if packed:
        return _ld(3, _ld(1, b"".join(_varint(v) for v in values)))
    return _ld(3, b"".join(_varint(1 << 3 | 0) + _varint(v) for v in values))


def _float_list(values, packed=True) -> bytes:
    if packed:
        return _ld(2, _ld(1, b"".join(struct.pack("<f", v) for v in values)))
    return _ld(2, b"".join(_varint(1 << 3 | 5) + struct.pack("<f", v) for v in values))


def _bytes_list(values) -> bytes:
    return _ld(1, b"".join(_ld(1, v) for v in values))


WIRE_CASES = {
    "unpacked_ints_and_floats": _example(
        _entry("i", _int_list([1, -2, 2**63 - 1], packed=False)),
        _entry("f", _float_list([1.5, -2.5], packed=False)),
    ),
    "mixed_packed_and_unpacked": _example(
        _entry("i", _ld(3, _ld(1, _varint(1) + _varint(2)) + _varint(1 << 3) + _varint(3)))
    ),
    "duplicate_key_last_wins": _example(
        _entry("i", _int_list([1])), _entry("i", _int_list([2, 3]))
    ),
    "duplicate_key_other_type": _example(
        _entry("i", _int_list([1])), _entry("i", _float_list([2.0]))
    ),
    "features_message_twice": _ld(1, _entry("i", _int_list([1])))
    + _ld(1, _entry("j", _bytes_list([b"z"]))),
    "unknown_fields_everywhere": (
        _ld(1, _entry("i", _int_list([4]) + _varint(7 << 3) + _varint(1)) + _ld(9, b"junk"))
        + _varint(5 << 3 | 0)
        + _varint(99)
        + _varint(6 << 3 | 5)
        + b"\x00\x00\x00\x00"
    ),
    "entry_value_before_key": _ld(1, _ld(1, _ld(2, _int_list([8])) + _ld(1, b"k"))),
    "entry_without_value": _ld(1, _ld(1, _ld(1, b"nv"))),
    "negative_int_ten_byte_varint": _example(_entry("i", _int_list([-1, -(2**63)]))),
    "overlong_varint_encoding": _example(_entry("i", _ld(3, _ld(1, b"\x81\x80\x80\x00")))),
    "empty_record": b"",
}


@pytest.mark.parametrize("name", list(WIRE_CASES))
def test_decode_example_wire_forms_like_tf_proto(name):
    data = WIRE_CASES[name]
    proto = tf.train.Example.FromString(data)
    got = tfr.decode_example(data)
    assert set(got) == set(proto.features.feature)
    for key, feature in proto.features.feature.items():
        kind = feature.WhichOneof("kind")
        if kind is None:
            assert isinstance(got[key], list) and got[key] == [], key
            continue
        kind = {"int64_list": I64, "float_list": F32, "bytes_list": BYT}[kind]
        _assert_decoded(
            got[key], kind, list(getattr(feature, feature.WhichOneof("kind")).value), key
        )


# -- hypothesis round trips through TF ----------------------------------------------------------

_int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_float32s = st.floats(width=32, allow_nan=False)
_blobs = st.one_of(st.binary(max_size=40), st.text(max_size=10).map(lambda s: s.encode("utf-8")))
_feature_values = st.one_of(
    st.tuples(st.just(I64), st.lists(_int64s, max_size=8)),
    st.tuples(st.just(F32), st.lists(_float32s, max_size=8)),
    st.tuples(st.just(BYT), st.lists(_blobs, max_size=6)),
)
_feature_maps = st.dictionaries(st.text(max_size=8), _feature_values, max_size=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(features=_feature_maps)
def test_hypothesis_encode_example_parsed_by_tf_proto(features, tf_example, tfr_value):
    # Typed empty ndarrays keep their list kind; compare with TF's own message.
    ours = tfr.encode_example({k: tfr_value(kind, v) for k, (kind, v) in features.items()})
    assert tf.train.Example.FromString(ours) == tf_example(features)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(features=_feature_maps)
def test_hypothesis_decode_example_of_tf_serialized(features, tf_example):
    got = tfr.decode_example(tf_example(features).SerializeToString())
    assert set(got) == set(features)
    for key, (kind, values) in features.items():
        _assert_decoded(got[key], kind, values, key)


def test_write_dataset_types_empty_lists_by_the_schema_or_the_rows_before(tmp_path):
    def kinds(pattern):
        out = []
        for record in tfr.read_records(pattern):
            features = tf.train.Example.FromString(record).features.feature
            out.append({k: v.WhichOneof("kind") for k, v in features.items()})
        return out

    rows = [{"a": [], "b": 1}, {"a": [2], "b": 2}]
    schema = {"a": tfr.VarLen("int64"), "b": tfr.FixedLen([], "int64")}
    tfr.write_dataset(rows, str(tmp_path / "x"), schema=schema, progress=False)
    assert kinds(str(tmp_path / "x-*")) == [{"a": "int64_list", "b": "int64_list"}] * 2
    # Without a schema, the rows before say the kind; nothing says it for "c".
    rows = [{"a": [0.5]}, {"a": []}, {"c": []}]
    with pytest.warns(tfr.SchemaWarning, match="'c', empty wherever"):
        tfr.write_dataset(rows, str(tmp_path / "y"), progress=False)
    assert kinds(str(tmp_path / "y-*")) == [{"a": "float_list"}, {"a": "float_list"}, {"c": None}]
    spec = {"a": tf.io.VarLenFeature(tf.float32)}
    records = list(tfr.read_records(str(tmp_path / "y-*")))
    parsed = tf.io.parse_example(records, spec)
    assert parsed["a"].values.numpy().tolist() == [0.5]
