"""encode_example / decode_example and the SequenceExample pair: coercion and wire format."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import tfrecordkit as tfr

enc = tfr.encode_example
dec = tfr.decode_example


def roundtrip(value):
    return dec(enc({"v": value}))["v"]


def assert_int64(got, expected):
    assert isinstance(got, np.ndarray) and got.dtype == np.int64
    assert got.tolist() == expected


def assert_float32(got, expected):
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    np.testing.assert_array_equal(got, np.asarray(expected, dtype=np.float32))


# ---------------------------------------------------------------- the wire format


def test_known_bytes():
    # Example{features{feature{key:"a" value{int64_list{value:[1]}}}}}, packed as TF writes.
    assert enc({"a": 1}) == b"\n\x0c\n\n\n\x01a\x12\x05\x1a\x03\n\x01\x01"
    assert enc({"a": 1.0}) == b"\n\x0f\n\r\n\x01a\x12\x08\x12\x06\n\x04" + struct.pack("<f", 1.0)
    assert enc({"a": b"x"}) == b"\n\x0c\n\n\n\x01a\x12\x05\n\x03\n\x01x"
    # An Example with no features still has its (empty) Features message, as TF writes it.
    assert enc({}) == b"\n\x00"
    assert dec(b"\n\x00") == {}
    assert dec(b"") == {}


def test_unpacked_lists_and_unknown_fields_parse():
    # Int64List with two unpacked values, FloatList unpacked, plus unknown fields everywhere.
    ints = b"\x1a\x04\x08\x05\x08\x7f"  # int64_list { value: 5 value: 127 } unpacked
    ints += b"\x20\x05"  # unknown field 4 inside the Feature
    floats = b"\x12\x05\x0d" + struct.pack("<f", 2.5)  # float_list { value: 2.5 } unpacked

    def entry(key, feature):
        # ... with an unknown field 3 inside the map entry
        return (
            b"\x0a"
            + bytes([len(key)])
            + key
            + b"\x12"
            + bytes([len(feature)])
            + feature
            + b"\x18\x01"
        )

    features = (
        b"".join(b"\x0a" + bytes([len(e)]) + e for e in [entry(b"i", ints), entry(b"f", floats)])
        + b"\x10\x01"
    )  # unknown field 2 inside Features
    data = b"\x0a" + bytes([len(features)]) + features + b"\x78\x01"  # unknown field 15
    out = dec(data)
    assert_int64(out["i"], [5, 127])
    assert_float32(out["f"], [2.5])


def test_repeated_key_keeps_the_last_value():
    a = enc({"k": 1})
    b = enc({"k": [2, 3]})
    # Concatenated messages merge: the map entry seen last wins.
    assert_int64(dec(a + b)["k"], [2, 3])


# ---------------------------------------------------------------- coercion


def test_bool_to_int64():
    assert_int64(roundtrip(True), [1])
    assert_int64(roundtrip([True, False, True]), [1, 0, 1])
    assert_int64(roundtrip(np.bool_(False)), [0])
    assert_int64(roundtrip(np.array([True, False])), [1, 0])


@pytest.mark.parametrize(
    "value",
    [np.int8(-3), np.int16(-3), np.int32(-3), np.int64(-3), np.uint8(3), np.uint32(3)],
)
def test_numpy_integers_to_int64(value):
    assert_int64(roundtrip(value), [int(value)])
    assert_int64(roundtrip(np.array([value, value])), [int(value)] * 2)


@pytest.mark.parametrize(
    "value",
    [
        *(t(v) for t in (np.int8, np.int16, np.int32, np.int64) for v in (-128, 0, 127)),
        *(t(v) for t in (np.uint8, np.uint16, np.uint32, np.uint64) for v in (0, 255)),
        np.int64(-(2**63)),
        np.uint64(2**63 - 1),
        np.float16(0.1),
        np.float32(-1e30),
        np.float32(np.inf),
        np.float64(0.1),
        np.longdouble(0.25),
        np.bool_(True),
        np.bool_(False),
        np.int64(5).view(np.timedelta64),
    ],
    ids=repr,
)
def test_numpy_scalars_encode_as_python_scalars(value):
    # A row's NumPy scalars (items of arrays) encode as the Python scalars they hold, in
    # a row, a list and a 0-d array alike.
    if isinstance(value, np.timedelta64):
        with pytest.raises(TypeError, match="unsupported NumPy dtype"):
            enc({"v": value})
        return
    python = value.item()
    assert enc({"v": value}) == enc({"v": python})
    assert enc({"v": [value, value]}) == enc({"v": [python, python]})
    assert enc({"v": np.array(value)}) == enc({"v": python})


@pytest.mark.parametrize("dtype", [np.int64, np.float32, ">i8", ">f4", np.int32, np.float64])
def test_numpy_arrays_encode_as_their_values_in_order(dtype):
    # Contiguous, strided, 2-D and byte-swapped arrays all encode as their values.
    grid = np.arange(24).reshape(4, 6).astype(dtype)
    for value in (grid[1], grid[:, 2], grid[::2, ::3], grid, grid.T, grid[0, :0]):
        python = value.ravel().tolist()
        assert enc({"v": value}) == enc({"v": python} if python else {"v": np.zeros(0, dtype)})


def test_numpy_uint64_beyond_int64_overflows():
    with pytest.raises(OverflowError, match="int64 range"):
        enc({"v": np.uint64(2**63)})


def test_int64_extremes():
    lo, hi = -(2**63), 2**63 - 1
    assert_int64(roundtrip([lo, -1, 0, 1, hi]), [lo, -1, 0, 1, hi])
    assert_int64(roundtrip(np.array([lo, hi], dtype=np.int64)), [lo, hi])
    assert_int64(roundtrip(np.array([2**63 - 1], dtype=np.uint64)), [hi])


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64, 10**30, [1, 2**63]])
def test_int_beyond_int64_overflows(value):
    with pytest.raises(OverflowError):
        enc({"v": value})


def test_uint64_array_beyond_int64_overflows():
    with pytest.raises(OverflowError):
        enc({"v": np.array([1, 2**63], dtype=np.uint64)})


@pytest.mark.parametrize(
    "value", [np.float64(0.1), np.float32(0.1), np.float16(0.5), 0.1, np.float64(1e-50)]
)
def test_floats_to_float32(value):
    assert_float32(roundtrip(value), [np.float32(value)])
    assert_float32(roundtrip(np.array([value, value])), [np.float32(value)] * 2)


_LONGDOUBLE = r"""
import sys
import numpy as np
import tfrecordkit as tfr

value = eval(sys.argv[1], {"np": np})
try:
    out = tfr.decode_example(tfr.encode_example({"v": value}))["v"]
    print("ok", out.dtype, out.tolist())
except Exception as err:
    print("error", type(err).__name__)
"""


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("np.array([0.25], dtype=np.longdouble)", "ok float32 [0.25]"),
        ("np.longdouble(0.25)", "ok float32 [0.25]"),
        ("np.array(0.25, dtype=np.longdouble)", "ok float32 [0.25]"),
        ("np.clongdouble(1)", "error TypeError"),
    ],
)
def test_longdouble_is_a_numpy_floating(expr, expected):
    # Run in a child: a crash here must fail this test, not take the whole test run down.
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _LONGDOUBLE, expr], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, f"{expr}: child died with {proc.returncode}: {proc.stderr[-500:]}"
    assert proc.stdout.strip() == expected


def test_float_arrays_and_special_values():
    assert_float32(roundtrip(np.array([0.1, -1e-300, 3.0e38])), [0.1, -0.0, 3.0e38])
    got = roundtrip([float("nan"), float("-inf"), -0.0, 1e300])
    assert np.isnan(got[0]) and got[1] == -np.inf and np.signbit(got[2]) and got[3] == np.inf
    got = roundtrip(np.array([np.nan, -np.inf, -0.0], dtype=np.float32))
    assert np.isnan(got[0]) and got[1] == -np.inf and np.signbit(got[2])


def test_mixed_int_and_float_list_is_float():
    assert_float32(roundtrip([1, 2.5, 3]), [1.0, 2.5, 3.0])
    assert_float32(roundtrip([1.5, 2]), [1.5, 2.0])
    assert_float32(roundtrip([True, 0.5]), [1.0, 0.5])
    assert_float32(roundtrip([np.int64(1), np.float32(0.5)]), [1.0, 0.5])


def test_str_and_bytes():
    assert roundtrip("héllo") == ["héllo".encode()]
    assert roundtrip(["a", b"b", ""]) == [b"a", b"b", b""]
    assert roundtrip(b"\x00\xff") == [b"\x00\xff"]
    assert roundtrip(np.array(["ab", "c"])) == [b"ab", b"c"]
    assert roundtrip(np.array([b"ab", b"c"])) == [b"ab", b"c"]
    assert roundtrip(np.array([b"x", "y"], dtype=object)) == [b"x", b"y"]
    assert roundtrip(np.bytes_(b"nb")) == [b"nb"]
    assert roundtrip(np.str_("ns")) == [b"ns"]


@pytest.mark.parametrize(
    "value", [[1, b"a"], [b"a", 1], ["a", 2.5], [True, "t"], np.array([1, "a"], dtype=object)]
)
def test_mixing_numbers_and_bytes_is_a_type_error(value):
    with pytest.raises(TypeError, match="v"):
        enc({"v": value})


@pytest.mark.parametrize("value", [None, {"a": 1}, object(), [None], [[1, 2]], 1 + 2j])
def test_unsupported_values(value):
    with pytest.raises(TypeError):
        enc({"v": value})


def test_feature_names_must_be_str():
    with pytest.raises(TypeError):
        enc({1: 1})
    with pytest.raises(TypeError):
        enc({b"k": 1})


@pytest.mark.parametrize("order", ["C", "F"])
def test_ndarray_flattened_row_major(order):
    arr = np.array([[1, 2, 3], [4, 5, 6]], order=order)
    assert_int64(roundtrip(arr), [1, 2, 3, 4, 5, 6])
    assert_float32(roundtrip(arr.astype(np.float64)), [1, 2, 3, 4, 5, 6])
    assert_int64(roundtrip(arr.T), [1, 4, 2, 5, 3, 6])
    assert_int64(roundtrip(np.arange(24).reshape(2, 3, 4)[:, ::2, 1]), [1, 9, 13, 21])


def test_scalars_lists_tuples_and_0d_arrays():
    assert_int64(roundtrip(7), [7])
    assert_int64(roundtrip((7, 8)), [7, 8])
    assert_int64(roundtrip(np.array(7)), [7])
    assert_float32(roundtrip(np.array(0.5)), [0.5])
    assert roundtrip(np.array("s")) == [b"s"]


def test_empty_list_decodes_to_empty_list():
    assert roundtrip([]) == []
    out = dec(enc({"e": [], "x": 1}))
    assert out["e"] == [] and list(out) == ["e", "x"]


def test_key_order_is_kept():
    keys = ["zeta", "alpha", "mid", ""]
    assert list(dec(enc({k: 1 for k in keys}))) == keys


# ---------------------------------------------------------------- SequenceExample


def test_sequence_example_round_trip():
    context = {"id": b"seq-1", "length": 3, "score": 0.25}
    lists = {
        "tokens": [[1, 2], [3], []],
        "words": [[b"a"], [b"b", "c"], []],
        "weights": np.array([[0.5, 1.5], [2.5, 3.5]]),
        "ints2d": np.array([[1, 2], [3, 4]]),
    }
    ctx, fl = tfr.decode_sequence_example(tfr.encode_sequence_example(context, lists))
    assert ctx["id"] == [b"seq-1"]
    assert_int64(ctx["length"], [3])
    assert_float32(ctx["score"], [0.25])
    assert [s.tolist() if isinstance(s, np.ndarray) else s for s in fl["tokens"]] == [
        [1, 2],
        [3],
        [],
    ]
    assert fl["words"] == [[b"a"], [b"b", b"c"], []]
    assert len(fl["weights"]) == 2
    assert_float32(fl["weights"][0], [0.5, 1.5])
    assert_float32(fl["weights"][1], [2.5, 3.5])
    assert_int64(fl["ints2d"][1], [3, 4])


def test_sequence_example_empty_parts():
    assert tfr.decode_sequence_example(tfr.encode_sequence_example({}, {})) == ({}, {})
    ctx, fl = tfr.decode_sequence_example(tfr.encode_sequence_example({"a": 1}, {"e": []}))
    assert_int64(ctx["a"], [1])
    assert fl == {"e": []}


def test_sequence_example_context_is_an_example():
    # A SequenceExample's context (field 1) has the wire shape of an Example's features.
    data = tfr.encode_sequence_example({"k": [4, 5]}, {})
    assert_int64(dec(data)["k"], [4, 5])


def test_sequence_example_mixing_is_a_type_error():
    with pytest.raises(TypeError):
        tfr.encode_sequence_example({}, {"bad": [[1, b"x"]]})


def test_text_that_is_not_valid_unicode_is_a_value_error_naming_its_feature(tmp_path):
    for features in ({"a": "\udc80"}, {"a": ["x", "\udc80"]}):
        with pytest.raises(ValueError, match='feature "a": a str that is not valid Unicode'):
            tfr.encode_example(features)
    with pytest.raises(ValueError, match=r"feature name '\\ud800' is not valid Unicode"):
        tfr.encode_example({"\ud800": 1})
    with pytest.raises(UnicodeEncodeError, match="surrogates not allowed, in column 'a'"):
        tfr.write_dataset({"a": ["x", "\udc80"]}, tmp_path / "s", progress=False)
    assert not list(tmp_path.rglob("*.tfrecord"))


def test_a_malformed_feature_names_its_key_when_decoded():
    # An Int64List whose value has wire type 5 (fixed32).
    int64_list = b"\x0d\x01\x00\x00\x00"
    feature = b"\x1a" + bytes([len(int64_list)]) + int64_list
    entry = b"\x0a\x01a\x12" + bytes([len(feature)]) + feature
    features = b"\x0a" + bytes([len(entry)]) + entry
    record = b"\x0a" + bytes([len(features)]) + features
    with pytest.raises(tfr.ExampleDecodeError, match='feature "a": malformed Int64List') as info:
        tfr.decode_example(record)
    assert info.value.key == "a"


def test_floats_written_as_int64_are_whole_numbers_or_refused(tmp_path):
    schema = {"a": tfr.FixedLen([], "int64")}
    with pytest.raises(ValueError, match=r"column 'a' holds 1\.5, which is not an int64"):
        tfr.write_dataset({"a": [1.0, 1.5]}, tmp_path / "f" / "s", schema=schema, progress=False)
    assert not list(tmp_path.rglob("*.tfrecord"))
    tfr.write_dataset({"a": [1.0, 2.0]}, tmp_path / "w" / "s", schema=schema, progress=False)
    (batch,) = tfr.read_examples(str(tmp_path / "w" / "s-*"), schema)
    assert batch["a"].tolist() == [1, 2]
