"""Feature specs, Schema (incl. JSON), Ragged, parse_example(s) and infer_schema."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import tfrecordkit as tfr

enc = tfr.encode_example


# ---------------------------------------------------------------- specs


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("int64", "int64"),
        ("int", "int64"),
        ("INT64", "int64"),
        (np.int64, "int64"),
        (np.dtype("int64"), "int64"),
        (int, "int64"),
        (bool, "int64"),
        ("float32", "float32"),
        ("float", "float32"),
        (np.float32, "float32"),
        (float, "float32"),
        ("bytes", "bytes"),
        ("string", "bytes"),
        ("str", "bytes"),
        (bytes, "bytes"),
        (str, "bytes"),
        (np.bytes_, "bytes"),
        (object, "bytes"),
        (SimpleNamespace(name="string"), "bytes"),  # a tf.DType-like object
        (SimpleNamespace(name="float32"), "float32"),
    ],
)
def test_dtype_aliases(alias, name):
    assert tfr.FixedLen([], alias).dtype == name
    assert tfr.VarLen(alias).dtype == name
    assert tfr.FixedLenSequence([], alias).dtype == name


@pytest.mark.parametrize("bad", ["complex64", "uint128", np.complex64, "double!", None, 3])
def test_unsupported_dtypes(bad):
    with pytest.raises(ValueError, match="dtype"):
        tfr.FixedLen([], bad)
    with pytest.raises(ValueError, match="dtype"):
        tfr.VarLen(bad)


def test_shapes_are_normalized():
    assert tfr.FixedLen([], "int64").shape == ()
    assert tfr.FixedLen(None, "int64").shape == ()
    assert tfr.FixedLen(3, "int64").shape == (3,)
    assert tfr.FixedLen(np.int64(3), "int64").shape == (3,)
    assert tfr.FixedLen((2, 3), "int64").shape == (2, 3)
    assert tfr.FixedLenSequence([4], "float").shape == (4,)
    with pytest.raises(ValueError, match="feature 'k': shape"):
        tfr.Schema({"k": tfr.FixedLen([-1], "int64")})
    with pytest.raises(ValueError, match="feature 'k': shape"):
        tfr.Schema({"k": tfr.FixedLenSequence([2, -1], "int64")})
    with pytest.raises(ValueError, match="dimensions are ints"):
        tfr.FixedLen([2.5], "int64")


def test_defaults_are_validated_and_flattened():
    assert tfr.FixedLen([2, 2], "int64", default=[[1, 2], [3, 4]]).default == (1, 2, 3, 4)
    assert tfr.FixedLen([3], "float", default=0.5).default == (0.5,)
    assert tfr.FixedLen([], "string", default="é").default == ("é".encode(),)
    with pytest.raises(ValueError, match="feature 'k': default"):
        tfr.Schema({"k": tfr.FixedLen([2], "int64", default=[1, 2, 3])})
    with pytest.raises(ValueError, match="feature 'k': a FixedLenSequence default"):
        tfr.Schema({"k": tfr.FixedLenSequence([2], "int64", default=[1, 2])})


def test_specs_are_frozen_and_comparable():
    a = tfr.FixedLen([2], np.int64, default=[1, 2])
    assert a == tfr.FixedLen((2,), "int", default=(1, 2))
    assert a != tfr.FixedLen([2], "int64")
    with pytest.raises(AttributeError):
        a.dtype = "bytes"
    assert hash(tfr.VarLen("string")) == hash(tfr.VarLen(bytes))


# ---------------------------------------------------------------- Schema


def _schema():
    return tfr.Schema(
        {
            "label": tfr.FixedLen([], "int64"),
            "weights": tfr.FixedLen([2, 2], "float", default=[0.5, 1.5, 2.5, 3.5]),
            "name": tfr.FixedLen([], "string", default=b"\x00\xffnot utf-8"),
            "names": tfr.FixedLen([2], "bytes", default=[b"a", b""]),
            "tokens": tfr.VarLen(np.int64),
            "frames": tfr.FixedLenSequence([3], "float32", allow_missing=True, default=-1.0),
            "tags": tfr.FixedLenSequence([], "bytes", allow_missing=True, default=b"\x80"),
        }
    )


def test_schema_is_an_ordered_mapping():
    s = _schema()
    assert list(s) == ["label", "weights", "name", "names", "tokens", "frames", "tags"]
    assert len(s) == 7
    assert s["tokens"] == tfr.VarLen("int64")
    assert "label" in s and "missing" not in s
    assert s == dict(s)
    assert "Schema(" in repr(s)


def test_schema_json_round_trip():
    s = _schema()
    text = s.to_json()
    assert json.loads(text)  # plain JSON
    back = tfr.Schema.from_json(text)
    assert back == s
    assert back["name"].default == (b"\x00\xffnot utf-8",)
    assert back["tags"].default == (b"\x80",)
    assert back["frames"].allow_missing is True
    assert back["weights"].shape == (2, 2)
    assert tfr.Schema.from_dict(s.to_dict()) == s
    assert tfr.Schema.from_json(back.to_json(indent=2)) == s


def test_round_tripped_schema_parses_the_same():
    s = _schema()
    records = [
        enc({"label": 1, "tokens": [1, 2], "frames": [1.0, 2.0, 3.0], "tags": ["x", "y"]}),
        enc({"label": 2, "name": b"n", "names": [b"p", b"q"], "weights": [1.0, 2.0, 3.0, 4.0]}),
    ]
    a = tfr.parse_examples(records, s)
    b = tfr.parse_examples(records, tfr.Schema.from_json(s.to_json()))
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], tfr.Ragged):
            assert a[key].to_list() == b[key].to_list()
        else:
            np.testing.assert_array_equal(a[key], b[key])
    assert a["name"].tolist() == [b"\x00\xffnot utf-8", b"n"]


def test_schema_rejects_bad_entries():
    with pytest.raises(TypeError):
        tfr.Schema({1: tfr.VarLen("int64")})
    with pytest.raises(TypeError):
        tfr.Schema({"a": "int64"})
    with pytest.raises(ValueError):
        tfr.Schema.from_dict({"a": {"kind": "weird", "dtype": "int64"}})


def test_tf_style_spec_objects_by_duck_typing():
    # Objects named like tf.io's specs (TensorFlow itself is not imported here).
    FixedLenFeature = type("FixedLenFeature", (), {})
    VarLenFeature = type("VarLenFeature", (), {})
    fixed = FixedLenFeature()
    fixed.shape, fixed.dtype, fixed.default_value = [2], SimpleNamespace(name="int64"), [7, 8]
    var = VarLenFeature()
    var.dtype = SimpleNamespace(name="string")
    s = tfr.Schema({"f": fixed, "v": var})
    assert s["f"] == tfr.FixedLen([2], "int64", default=[7, 8])
    assert s["v"] == tfr.VarLen("bytes")


# ---------------------------------------------------------------- Ragged


def test_ragged_api():
    r = tfr.Ragged(np.array([1, 2, 3, 4, 5]), np.array([0, 2, 2, 5]))
    assert len(r) == 3
    assert r[0].tolist() == [1, 2]
    assert r[1].tolist() == []
    assert r[2].tolist() == [3, 4, 5]
    assert r[-1].tolist() == [3, 4, 5]
    assert r[-3].tolist() == [1, 2]
    for i in (3, -4, 100):
        with pytest.raises(IndexError):
            r[i]
    assert [row.tolist() for row in r] == [[1, 2], [], [3, 4, 5]]
    assert r.to_list() == [[1, 2], [], [3, 4, 5]]
    assert r.row_lengths().tolist() == [2, 0, 3]
    dense = r.to_dense()
    assert dense.dtype == np.int64 or dense.dtype == r.values.dtype
    assert dense.tolist() == [[1, 2, 0], [0, 0, 0], [3, 4, 5]]
    assert r.to_dense(default=-9).tolist() == [[1, 2, -9], [-9, -9, -9], [3, 4, 5]]


def test_ragged_bytes_and_empty():
    r = tfr.Ragged(np.array([b"a", b"bc"], dtype=object), np.array([0, 1, 1, 2]))
    assert r.to_dense().tolist() == [[b"a"], [b""], [b"bc"]]
    assert r.to_dense(default=b"?").tolist() == [[b"a"], [b"?"], [b"bc"]]
    empty = tfr.Ragged(np.array([], dtype=np.float32), np.array([0]))
    assert len(empty) == 0
    assert empty.to_list() == []
    assert empty.to_dense().shape == (0, 0)
    rows = tfr.Ragged(np.array([], dtype=np.float32), np.array([0, 0, 0]))
    assert rows.to_dense().shape == (2, 0)
    assert rows.row_lengths().tolist() == [0, 0]
    # Row splits given as a list, and int32 splits, keep their lengths' values and dtype.
    assert tfr.Ragged(np.arange(3), [0, 1, 3]).row_lengths().tolist() == [1, 2]
    narrow = tfr.Ragged(np.arange(3), np.array([0, 3], dtype=np.int32)).row_lengths()
    assert narrow.dtype == np.int32 and narrow.tolist() == [3]


# ---------------------------------------------------------------- parsing


def test_parse_examples_shapes_and_dtypes():
    records = [
        enc({"s": 1, "v": [1, 2], "m": np.arange(6), "f": 0.5, "b": "x", "r": [1.0], "q": [1, 2]}),
        enc(
            {
                "s": 2,
                "v": [3, 4],
                "m": np.arange(6, 12),
                "f": 1.5,
                "b": b"y",
                "r": [],
                "q": [3, 4, 5, 6],
            }
        ),
        enc({"s": 3, "v": [5, 6], "m": np.arange(12, 18), "f": 2.5, "b": "z", "r": [2.0, 3.0]}),
    ]
    schema = {
        "s": tfr.FixedLen([], "int64"),
        "v": tfr.FixedLen([2], "int64"),
        "m": tfr.FixedLen([2, 3], "int64"),
        "f": tfr.FixedLen([], "float32"),
        "b": tfr.FixedLen([], "bytes"),
        "r": tfr.VarLen("float32"),
        "q": tfr.FixedLenSequence([2], "int64", allow_missing=True, default=-1),
    }
    out = tfr.parse_examples(records, schema)
    assert list(out) == list(schema)
    assert out["s"].shape == (3,) and out["s"].dtype == np.int64
    assert out["s"].tolist() == [1, 2, 3]
    assert out["v"].shape == (3, 2) and out["v"].tolist() == [[1, 2], [3, 4], [5, 6]]
    assert out["m"].shape == (3, 2, 3)
    np.testing.assert_array_equal(out["m"], np.arange(18).reshape(3, 2, 3))
    assert out["f"].dtype == np.float32 and out["f"].tolist() == [0.5, 1.5, 2.5]
    assert out["b"].dtype == object and out["b"].tolist() == [b"x", b"y", b"z"]
    assert isinstance(out["r"], tfr.Ragged)
    assert out["r"].values.dtype == np.float32
    assert out["r"].row_splits.tolist() == [0, 1, 1, 3]
    assert out["r"].to_list() == [[1.0], [], [2.0, 3.0]]
    assert out["q"].shape == (3, 2, 2)
    assert out["q"].tolist() == [[[1, 2], [-1, -1]], [[3, 4], [5, 6]], [[-1, -1], [-1, -1]]]


def test_parse_examples_defaults_and_iterables():
    schema = {
        "a": tfr.FixedLen([3], "int64", default=7),
        "b": tfr.FixedLen([2], "bytes", default=[b"p", b"q"]),
        "c": tfr.FixedLen([], "float", default=0.25),
    }
    gen = (enc({"a": [i, i, i]} if i % 2 else {}) for i in range(4))
    out = tfr.parse_examples(gen, schema)
    assert out["a"].tolist() == [[7, 7, 7], [1, 1, 1], [7, 7, 7], [3, 3, 3]]
    assert out["b"].tolist() == [[b"p", b"q"]] * 4
    assert out["c"].tolist() == [0.25] * 4
    empty = tfr.parse_examples([], schema)
    assert empty["a"].shape == (0, 3) and empty["b"].shape == (0, 2) and empty["c"].shape == (0,)


def test_parse_examples_ignores_unrequested_features():
    record = enc({"want": 1, "other": [b"x"] * 10, "more": [1.0] * 5})
    out = tfr.parse_examples([record], {"want": tfr.FixedLen([], "int64")})
    assert list(out) == ["want"] and out["want"].tolist() == [1]


def test_parse_example_single_record_shapes():
    record = enc(
        {
            "s": 4,
            "v": [1.5, 2.5],
            "m": np.array([[1, 2], [3, 4]]),
            "b": [b"x", b"y"],
            "r": [9, 8, 7],
        }
    )
    out = tfr.parse_example(
        record,
        {
            "s": tfr.FixedLen([], "int64"),
            "v": tfr.FixedLen([2], "float32"),
            "m": tfr.FixedLen([2, 2], "int64"),
            "b": tfr.VarLen("bytes"),
            "r": tfr.VarLen("int64"),
            "d": tfr.FixedLen([], "int64", default=-1),
            "q": tfr.FixedLenSequence([], "int64", allow_missing=True),
        },
    )
    assert np.ndim(out["s"]) == 0 and int(out["s"]) == 4
    assert out["v"].shape == (2,) and out["v"].tolist() == [1.5, 2.5]
    assert out["m"].shape == (2, 2) and out["m"].tolist() == [[1, 2], [3, 4]]
    assert isinstance(out["b"], np.ndarray) and out["b"].tolist() == [b"x", b"y"]
    assert out["r"].tolist() == [9, 8, 7] and out["r"].dtype == np.int64
    assert int(out["d"]) == -1
    assert out["q"].shape == (0,)


def test_parse_example_missing_required():
    with pytest.raises(tfr.SchemaError) as info:
        tfr.parse_example(enc({"x": 1}), {"y": tfr.FixedLen([], "int64")})
    assert info.value.key == "y" and info.value.record_index == 0


def test_duplicate_and_merged_features_follow_protobuf_rules():
    # Two serialized Examples concatenated merge; the later map entry wins.
    merged = enc({"k": [1, 2]}) + enc({"k": [3, 4]})
    out = tfr.parse_examples([merged], {"k": tfr.FixedLen([2], "int64")})
    assert out["k"].tolist() == [[3, 4]]
    assert tfr.decode_example(merged)["k"].tolist() == [3, 4]


# ---------------------------------------------------------------- infer_schema


def test_infer_schema(tmp_path):
    path = tmp_path / "infer.tfrecord"
    with tfr.RecordWriter(path) as w:
        for i in range(30):
            features = {
                "label": i,
                "score": 0.5 * i,
                "name": f"n{i}",
                "emb": [0.1, 0.2, 0.3],
                "tokens": list(range(i % 4 + 1)),
                "sometimes": [b"s"] if i % 3 else [],
            }
            if i % 5:
                features["optional"] = 1
            w.write(enc(features))
    s = tfr.infer_schema(path)
    assert isinstance(s, tfr.Schema)
    assert s["label"] == tfr.FixedLen([], "int64")
    assert s["score"] == tfr.FixedLen([], "float32")
    assert s["name"] == tfr.FixedLen([], "bytes")
    assert s["emb"] == tfr.FixedLen([3], "float32")
    assert s["tokens"] == tfr.VarLen("int64")
    assert s["sometimes"] == tfr.VarLen("bytes")
    assert s["optional"] == tfr.VarLen("int64")
    # The inferred schema parses the file it came from.
    out = tfr.parse_examples(list(tfr.read_records(path)), s)
    assert out["label"].tolist() == list(range(30))
    assert out["tokens"].row_lengths().tolist() == [i % 4 + 1 for i in range(30)]
    # With a small sample, "tokens" (1 value in record 0) looks fixed.
    # ... and "sometimes" (empty in record 0) has no known type: left out, with a warning.
    with pytest.warns(tfr.SchemaWarning, match="'sometimes', empty wherever the 1 Examples"):
        small = tfr.infer_schema(path, sample=1)
    assert small["tokens"] == tfr.FixedLen([], "int64") and "sometimes" not in small


def test_infer_schema_conflicting_types(tmp_path):
    path = tmp_path / "conflict.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(enc({"x": 1}))
        w.write(enc({"x": b"one"}))
    with pytest.raises(tfr.SchemaError) as info:
        tfr.infer_schema(path)
    assert info.value.key == "x"


def test_a_used_schema_pickles_and_parses_where_it_lands():
    import pickle

    schema = tfr.Schema({"a": tfr.FixedLen([], "int64"), "t": tfr.VarLen("bytes")})
    record = tfr.encode_example({"a": 7, "t": [b"x", b"y"]})
    tfr.parse_example(record, schema)  # compiles the native parser
    copy = pickle.loads(pickle.dumps(schema))
    assert copy == schema
    parsed = tfr.parse_example(record, copy)
    assert parsed["a"] == 7 and list(parsed["t"]) == [b"x", b"y"]


def test_an_int64_default_is_never_a_float_or_past_int64():
    # TensorFlow refuses to convert a float default to int64 (a TypeError there).
    for default in (1.5, 2.0, [1, 2.5]):
        with pytest.raises(tfr.SchemaError, match="an int64 default holds ints, not floats"):
            tfr.FixedLen([] if not isinstance(default, list) else [2], "int64", default=default)
    with pytest.raises(tfr.SchemaError, match="out of the int64 range"):
        tfr.FixedLen([], "int64", default=1 << 70)
    assert tfr.FixedLen([], "int64", default=3).default == (3,)
    assert tfr.FixedLen([], "float32", default=2).default == (2.0,)


def test_a_schema_that_is_not_a_mapping_is_a_type_error():
    record = tfr.encode_example({"a": 1})
    for schema in (None, [("a", tfr.FixedLen([], "int64"))]):
        with pytest.raises(TypeError, match="a schema is a mapping of feature names to specs"):
            tfr.parse_example(record, schema)


def test_counts_and_lengths_past_what_a_function_takes_are_value_errors(tmp_path):
    path = tmp_path / "a.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"a": 1}))
    with pytest.raises(ValueError, match="sample must be an int >= 1, not -1"):
        tfr.infer_schema(str(path), sample=-1)
    with pytest.raises(ValueError, match="top must be an int >= 0, not -1"):
        tfr.stats(str(path), top=-1, progress=False)
    with pytest.raises(ValueError, match=r"fixed_length \(1099511627776\) must be less than 2"):
        tfr.decode_raw([b"\0\1"], "int16", fixed_length=1 << 40)


def test_a_feature_whose_type_changes_names_the_record_where_it_does(tmp_path):
    path = tmp_path / "mixed.tfrecord"
    with tfr.RecordWriter(path) as w:
        for value in (1, 2, b"x"):
            w.write(tfr.encode_example({"a": value}))
    with pytest.raises(tfr.SchemaError, match="int64 in some Examples and bytes") as info:
        tfr.infer_schema(str(path))
    assert (info.value.path, info.value.record_index, info.value.key) == (str(path), 2, "a")


def test_a_compiled_schema_with_nullable_features_masks_their_missing_rows():
    from tfrecordkit import _core

    records = [
        tfr.encode_example(r) for r in [{"a": 1, "p": [1.0, 2.0]}, {"a": []}, {"p": [3.0, 4.0]}]
    ]
    schema = tfr.Schema({"a": tfr.FixedLen([], "int64"), "p": tfr.FixedLen([2], "float32")})
    compiled = schema.compiled(nullable=["a", "p"])
    values, shape, (splits, valid) = _core.parse_examples(records, compiled)[0]
    assert (values.tolist(), shape, splits) == ([1, 0, 0], [3], None)
    assert valid.tolist() == [True, False, False]
    out = compiled.outputs(_core.parse_examples(records, compiled))
    assert isinstance(out["a"], np.ma.MaskedArray)
    assert out["a"].tolist() == [1, None, None]
    assert out["p"].shape == (3, 2)
    assert out["p"].tolist() == [[1.0, 2.0], [None, None], [3.0, 4.0]]
    # The plain compiled schema is unchanged: a missing feature is an error.
    assert schema.compiled() is schema.compiled()
    with pytest.raises(tfr.SchemaError, match="required"):
        tfr.parse_examples(records, schema)
    # A mistake in the call, not in the data: a ValueError.
    with pytest.raises(ValueError, match="default"):
        tfr.Schema({"a": tfr.FixedLen([], "int64", default=0)}).compiled(nullable=["a"])
    with pytest.raises(ValueError, match="not read"):
        schema.compiled(nullable=["b"])
    # A nullable list has no NumPy form; Arrow's lists can be null.
    lists = tfr.Schema({"v": tfr.VarLen("int64")}).compiled(nullable=["v"])
    with pytest.raises(ValueError, match="read_arrow"):
        lists.outputs(_core.parse_examples(records, lists))


def test_records_that_are_not_bytes_are_named():
    schema = {"x": tfr.FixedLen([], "int64")}
    with pytest.raises(TypeError, match="the record is a str, not bytes"):
        tfr.parse_example("abc", schema)
    with pytest.raises(TypeError, match="record 1 is None, not bytes"):
        tfr.parse_examples([tfr.encode_example({"x": 1}), None], schema)
    with pytest.raises(TypeError, match="records is one bytes: parse_examples takes a list"):
        tfr.parse_examples(tfr.encode_example({"x": 1}), schema)
