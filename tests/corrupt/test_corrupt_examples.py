"""Malformed serialized Examples, and valid Examples that do not fit the schema."""

from __future__ import annotations

import pytest
import tfrecordkit as tfr

SCHEMA = {"a": tfr.VarLen("int64")}


def _malformed(h) -> dict[str, bytes]:
    """Named malformed Example payloads built by hand."""
    good_entry = h.feature_entry(b"a", h.int64_feature(1, 2))
    features = h.ld(1, good_entry)
    return {
        "wire_type_7_top_level": b"\x0f",
        "wire_type_6_top_level": b"\x0e\x00",
        "end_group_without_start": b"\x0c",
        "truncated_varint_value": b"\x08\xff",
        "truncated_varint_tag": b"\x80",
        "truncated_length": b"\x0a\xff",
        "eleven_byte_varint": b"\x08" + b"\xff" * 10 + b"\x01",
        "eleven_byte_tag": b"\xff" * 10 + b"\x01",
        "ten_byte_varint_overflow": b"\x08" + b"\xff" * 9 + b"\x7f",
        "length_past_end": b"\x0a\x05ab",
        "huge_length": b"\x0a" + h.varint(2**62) + b"abc",
        # Features (length 4) whose entry claims 10 bytes: runs past its parent message
        # even though the whole buffer holds enough bytes after it.
        "length_past_parent": b"\x0a\x04\x0a\x0a\x0a\x01" + b"a" * 20,
        "entry_past_parent": h.ld(1, features[:-2]) + features[-2:] + b"\x00" * 8,
        "list_past_parent": h.example(
            h.feature_entry(b"a", h.ld(3, b"\x0a\x09\x01\x02")) + b"\x00" * 10
        ),
        "deep_groups": b"\x0b" * 100_000,
        "deep_groups_in_features": h.ld(1, b"\x13" * 5_000),
        "unterminated_group": b"\x0b\x08\x01",
        "mismatched_group_end": b"\x0b\x14",
        "feature_list_wrong_wire_type": h.example(h.feature_entry(b"a", b"\x18\x01")),
        "packed_int_truncated": h.example(h.feature_entry(b"a", h.ld(3, h.ld(1, b"\x01\xff")))),
        "packed_float_not_multiple_of_4": h.example(
            h.feature_entry(b"a", h.ld(2, h.ld(1, b"\x00\x00\x80")))
        ),
        "bytes_value_wrong_wire_type": h.example(h.feature_entry(b"a", h.ld(1, b"\x08\x01"))),
        "key_wrong_wire_type": h.example(b"\x08\x01" + h.ld(2, h.int64_feature(1))),
        "features_wrong_wire_type_fixed64_truncated": b"\x09\x00\x00",
        "features_fixed32_truncated": b"\x0d\x00",
    }


def _cases(h, for_parse=False):
    cases = _malformed(h)
    if for_parse:
        # Parsing for an int64 column does not look inside a BytesList (as TensorFlow's
        # fast parser does not): those are type mismatches there; each list kind is
        # tested malformed for its own dtype below.
        del cases["bytes_value_wrong_wire_type"]
        del cases["packed_float_not_multiple_of_4"]
    return sorted(cases.items())


def test_malformed_payloads_decode_example(h):
    for name, data in _cases(h):
        try:
            result = tfr.decode_example(data)
        except BaseException as err:
            assert type(err) is tfr.ExampleDecodeError, f"{name}: {type(err).__name__}: {err}"
            assert isinstance(err, ValueError)
            assert err.message
        else:
            pytest.fail(f"{name}: decoded {data[:20]!r} to {result!r}")


@pytest.mark.parametrize("position", [0, 2])
def test_malformed_payloads_parse_examples(h, position):
    good = tfr.encode_example({"a": [1, 2, 3]})
    for name, data in _cases(h, for_parse=True):
        batch = [good, good, good]
        batch.insert(position, data)
        try:
            result = tfr.parse_examples(batch, SCHEMA)
        except BaseException as err:
            assert type(err) is tfr.ExampleDecodeError, f"{name}: {type(err).__name__}: {err}"
            assert err.record_index == position, (name, err.record_index, str(err))
            assert f"record {position}" in str(err)
        else:
            pytest.fail(f"{name}: parsed {data[:20]!r} to {result!r}")


def test_malformed_payloads_parse_example_and_sequence(h):
    for name, data in _cases(h, for_parse=True):
        with pytest.raises(tfr.ExampleDecodeError):
            tfr.parse_example(data, SCHEMA)
        # The same bytes as a SequenceExample: the context (field 1) is a Features message,
        # so everything malformed above is malformed there too.
        try:
            tfr.decode_sequence_example(data)
        except BaseException as err:
            assert isinstance(err, tfr.ExampleDecodeError), f"{name}: {type(err).__name__}: {err}"


@pytest.mark.parametrize("dtype", ["bytes", "float32", "int64"])
def test_malformed_list_of_the_requested_dtype(h, dtype):
    lists = {
        "bytes": h.ld(1, b"\x08\x01"),  # a BytesList value with wire type 0
        "float32": h.ld(2, h.ld(1, b"\x00\x00\x80")),  # 3 packed bytes
        "int64": h.ld(3, h.ld(1, b"\x01\xff")),  # a truncated packed varint
    }
    data = h.example(h.feature_entry(b"a", lists[dtype]))
    good = tfr.encode_example({"a": {"bytes": b"x", "float32": 1.0, "int64": 1}[dtype]})
    with pytest.raises(tfr.ExampleDecodeError) as info:
        tfr.parse_examples([good, data], {"a": tfr.VarLen(dtype)})
    assert info.value.record_index == 1
    with pytest.raises(tfr.ExampleDecodeError):
        tfr.decode_example(data)


def test_deep_groups_are_rejected_quickly_and_shallow_ones_skipped(h):
    # A few nested unknown groups are legal protobuf and are skipped.
    shallow = b"\x1b\x1b\x1c\x1c" + tfr.encode_example({"a": [7]})
    assert tfr.decode_example(shallow)["a"].tolist() == [7]
    assert tfr.parse_examples([shallow], SCHEMA)["a"].to_list() == [[7]]
    with pytest.raises(tfr.ExampleDecodeError, match="group"):
        tfr.decode_example(b"\x0b" * 1_000_000)


# ---------------------------------------------------------------- keys


@pytest.mark.parametrize("key", [b"\xff", b"ok\xc3", b"\xed\xa0\x80", b"\xc0\xaf"])
def test_non_utf8_feature_key(h, key):
    data = h.example(h.feature_entry(b"fine", h.int64_feature(1)), h.feature_entry(key, b""))
    with pytest.raises(tfr.ExampleDecodeError, match="UTF-8"):
        tfr.decode_example(data)
    # Parsing skips keys the schema does not ask for, unread, as tf.io.parse_example does.
    good = tfr.encode_example({"fine": 1})
    parsed = tfr.parse_examples([good, data], {"fine": tfr.FixedLen([], "int64")})
    assert parsed["fine"].tolist() == [1, 1]
    context = h.ld(1, h.ld(1, h.feature_entry(key, b"")))
    with pytest.raises(tfr.ExampleDecodeError, match="UTF-8"):
        tfr.decode_sequence_example(context)
    lists = h.ld(2, h.ld(1, h.ld(1, key) + h.ld(2, b"")))
    with pytest.raises(tfr.ExampleDecodeError, match="UTF-8"):
        tfr.decode_sequence_example(lists)


def test_utf8_keys_that_are_not_ascii_are_fine():
    data = tfr.encode_example({"größe": 3, "名前": "x"})
    assert set(tfr.decode_example(data)) == {"größe", "名前"}
    parsed = tfr.parse_examples([data], {"größe": tfr.FixedLen([], "int64")})
    assert parsed["größe"].tolist() == [3]


# ---------------------------------------------------------------- schema mismatches


def _batch(*features):
    return [tfr.encode_example(f) for f in features]


def test_wrong_value_count():
    batch = _batch({"x": [1, 2]}, {"x": [3, 4]}, {"x": [5, 6, 7]}, {"x": [8, 9]})
    with pytest.raises(tfr.SchemaError) as info:
        tfr.parse_examples(batch, {"x": tfr.FixedLen([2], "int64")})
    err = info.value
    assert err.key == "x"
    assert err.record_index == 2
    assert "3" in err.message and "2" in err.message
    assert "has 3 values; expected 2" in err.message
    assert isinstance(err, ValueError) and not isinstance(err, tfr.DataLossError)


def test_wrong_value_count_with_a_2d_shape():
    batch = _batch({"m": [0.5] * 6}, {"m": [1.5] * 5})
    with pytest.raises(tfr.SchemaError) as info:
        tfr.parse_examples(batch, {"m": tfr.FixedLen([2, 3], "float32")})
    assert info.value.key == "m"
    assert info.value.record_index == 1
    assert "5" in info.value.message and "6" in info.value.message


def test_too_few_values_for_a_scalar():
    batch = _batch({"s": 1.0, "t": b"a"}, {"s": [], "t": b"b"})
    with pytest.raises(tfr.SchemaError) as info:
        tfr.parse_examples(batch, {"t": tfr.FixedLen([], "bytes"), "s": tfr.FixedLen([], "float")})
    # An empty list is a feature with no list: it counts as missing.
    assert info.value.key == "s"
    assert info.value.record_index == 1


def test_fixed_len_sequence_count_not_a_multiple():
    batch = _batch({"q": [1, 2, 3, 4]}, {"q": [1, 2, 3]})
    with pytest.raises(tfr.SchemaError) as info:
        tfr.parse_examples(batch, {"q": tfr.FixedLenSequence([2], "int64")})
    assert (info.value.key, info.value.record_index) == ("q", 1)
    assert "3" in info.value.message and "multiple of 2" in info.value.message


@pytest.mark.parametrize(
    "spec",
    [tfr.FixedLen([], "int64"), tfr.FixedLen([3], "bytes"), tfr.FixedLenSequence([], "float")],
)
def test_missing_required_feature(spec):
    batch = _batch({"want": spec_value(spec), "other": 1}, {"other": 2}, {"want": spec_value(spec)})
    with pytest.raises(tfr.SchemaError) as info:
        tfr.parse_examples(batch, {"want": spec})
    assert info.value.key == "want"
    assert info.value.record_index == 1
    assert "want" in str(info.value)


def spec_value(spec):
    n = 1
    for d in getattr(spec, "shape", ()):
        n *= d
    return {"int64": [1] * n, "bytes": [b"v"] * n, "float32": [0.5] * n}[spec.dtype]


@pytest.mark.parametrize(
    ("value", "spec"),
    [
        ([1.5], tfr.FixedLen([], "int64")),
        ([1], tfr.FixedLen([], "float32")),
        ([b"x"], tfr.VarLen("int64")),
        ([1, 2], tfr.VarLen("bytes")),
        ([1.0, 2.0], tfr.FixedLenSequence([2], "bytes")),
    ],
)
def test_wrong_dtype(value, spec):
    batch = _batch({"f": spec_value(spec)}, {"f": spec_value(spec)}, {"f": value})
    with pytest.raises(tfr.SchemaError) as info:
        tfr.parse_examples(batch, {"f": spec})
    err = info.value
    assert err.key == "f"
    assert err.record_index == 2
    assert spec.dtype.replace("32", "") in err.message.replace("32", "")


def test_schema_error_is_not_raised_for_defaults():
    batch = _batch({"x": 1}, {})
    parsed = tfr.parse_examples(batch, {"x": tfr.FixedLen([], "int64", default=-1)})
    assert parsed["x"].tolist() == [1, -1]
