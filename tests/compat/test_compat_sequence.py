"""tf.train.SequenceExample round trips against TensorFlow's protos and sequence parsers."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest
import tensorflow as tf
import tfrecordkit as tfr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

I64, F32, BYT = "int64", "float32", "bytes"


def _tf_sequence_example(tf_feature, context, feature_lists) -> tf.train.SequenceExample:
    """``context``: ``{key: (kind, values)}``;
    ``feature_lists``: ``{key: (kind, [values per step])}``."""
    return tf.train.SequenceExample(
        context=tf.train.Features(
            feature={k: tf_feature(kind, v) for k, (kind, v) in context.items()}
        ),
        feature_lists=tf.train.FeatureLists(
            feature_list={
                k: tf.train.FeatureList(feature=[tf_feature(kind, step) for step in steps])
                for k, (kind, steps) in feature_lists.items()
            }
        ),
    )


def _assert_decoded(got, kind, values, what):
    if kind == I64:
        assert isinstance(got, np.ndarray) and got.dtype == np.int64, what
        np.testing.assert_array_equal(got, np.array(values, dtype=np.int64), err_msg=what)
    elif kind == F32:
        assert isinstance(got, np.ndarray) and got.dtype == np.float32, what
        np.testing.assert_array_equal(
            got.view(np.uint32), np.array(values, dtype=np.float32).view(np.uint32), err_msg=what
        )
    else:
        assert isinstance(got, list) and all(type(v) is bytes for v in got), what
        assert got == list(values), what


# -- encode → TF ------------------------------------------------------------------------------

# (our input, TF-proto description) pairs: context {k: (value, kind, tf values)},
# feature_lists {k: (value, kind, [tf values per step])}.
ENCODE_CASES = {
    "typical": (
        {"id": (b"seq-1", BYT, [b"seq-1"]), "length": (3, I64, [3]), "score": (0.5, F32, [0.5])},
        {
            "tokens": ([[1, 2], [3], [4, 5, 6]], I64, [[1, 2], [3], [4, 5, 6]]),
            "weights": ([[0.5], [1.5, 2.5], [0.25]], F32, [[0.5], [1.5, 2.5], [0.25]]),
            "words": ([["a", "b"], [b"c"], ["ü🙂"]], BYT, [[b"a", b"b"], [b"c"], ["ü🙂".encode()]]),
        },
    ),
    "scalar_steps": (
        {},
        {
            "ints": ([1, -2, 2**63 - 1, -(2**63)], I64, [[1], [-2], [2**63 - 1], [-(2**63)]]),
            "floats": ([0.1, -0.0, float("inf")], F32, [[0.1], [-0.0], [float("inf")]]),
            "bools": ([True, False], I64, [[1], [0]]),
            "strs": (["x", b"y", ""], BYT, [[b"x"], [b"y"], [b""]]),
        },
    ),
    "ndarray_rows_are_steps": (
        {"shape": (np.array([2, 3]), I64, [2, 3])},
        {
            "grid": (np.arange(6, dtype=np.int32).reshape(2, 3), I64, [[0, 1, 2], [3, 4, 5]]),
            "fgrid": (
                np.linspace(0, 1, 8).reshape(4, 2),
                F32,
                np.linspace(0, 1, 8).reshape(4, 2).tolist(),
            ),
            "sgrid": (np.array([["a", "b"], ["c", "d"]]), BYT, [[b"a", b"b"], [b"c", b"d"]]),
            "ndarray_steps": (
                [np.array([1, 2]), np.array([[3, 4], [5, 6]])],
                I64,
                [[1, 2], [3, 4, 5, 6]],
            ),
        },
    ),
    "unicode_keys": (
        {"ключ": ("значение", BYT, ["значение".encode()]), "": (1, I64, [1])},
        {
            "日本語": ([[1.0], [2.0]], F32, [[1.0], [2.0]]),
            "🙂": ([[b"\x00\xff"]], BYT, [[b"\x00\xff"]]),
        },
    ),
    "empty_feature_list_and_context": (
        {},
        {"nothing": ([], None, [])},
    ),
    "no_feature_lists": (
        {"only": (np.float32(2.5), F32, [2.5])},
        {},
    ),
    "typed_empty_steps": (
        {},
        {
            "ints": ([np.zeros(0, np.int64), np.array([7])], I64, [[], [7]]),
            "floats": ([np.zeros(0, np.float32)], F32, [[]]),
        },
    ),
    "long_sequence": (
        {"n": (5000, I64, [5000])},
        {"t": (np.arange(5000, dtype=np.int64).reshape(5000, 1), I64, [[i] for i in range(5000)])},
    ),
}


def _split_case(case):
    context, lists = case
    ours_ctx = {k: v for k, (v, _, _) in context.items()}
    ours_lists = {k: v for k, (v, _, _) in lists.items()}
    tf_ctx = {k: (kind, vals) for k, (_, kind, vals) in context.items()}
    tf_lists = {k: (kind, steps) for k, (_, kind, steps) in lists.items()}
    return ours_ctx, ours_lists, tf_ctx, tf_lists


@pytest.mark.parametrize("name", list(ENCODE_CASES))
def test_encode_sequence_example_matches_tf_proto(name, tf_feature):
    ours_ctx, ours_lists, tf_ctx, tf_lists = _split_case(ENCODE_CASES[name])
    data = tfr.encode_sequence_example(ours_ctx, ours_lists)
    expected = _tf_sequence_example(tf_feature, tf_ctx, tf_lists)
    parsed = tf.train.SequenceExample.FromString(data)
    # Compared field by field: whether an empty context / feature_lists message is written
    # at all is not observable to TF's parsers.
    assert parsed.context == expected.context, f"TF parsed {parsed}\nexpected {expected}"
    assert parsed.feature_lists == expected.feature_lists, (
        f"TF parsed {parsed}\nexpected {expected}"
    )
    # The feature list keys are present even when a list has no steps.
    assert set(parsed.feature_lists.feature_list) == set(tf_lists)


def _sequence_specs(tf_ctx, tf_lists):
    dtypes = {I64: tf.int64, F32: tf.float32, BYT: tf.string, None: tf.int64}
    context_features = {k: tf.io.VarLenFeature(dtypes[kind]) for k, (kind, _) in tf_ctx.items()}
    sequence_features = {k: tf.io.VarLenFeature(dtypes[kind]) for k, (kind, _) in tf_lists.items()}
    return context_features, sequence_features


@pytest.mark.parametrize("name", [n for n in ENCODE_CASES if n != "long_sequence"])
def test_parse_single_sequence_example_of_ours(name, tf_feature):
    ours_ctx, ours_lists, tf_ctx, tf_lists = _split_case(ENCODE_CASES[name])
    data = tfr.encode_sequence_example(ours_ctx, ours_lists)
    context_features, sequence_features = _sequence_specs(tf_ctx, tf_lists)
    ctx, seq = tf.io.parse_single_sequence_example(
        data, context_features=context_features, sequence_features=sequence_features
    )
    for key, (kind, values) in tf_ctx.items():
        _assert_decoded_tf(ctx[key].values.numpy(), kind, values, key)
    for key, (kind, steps) in tf_lists.items():
        sp = seq[key]
        assert int(sp.dense_shape.numpy()[0]) == len(steps), key
        rows = sp.indices.numpy()[:, 0]
        vals = sp.values.numpy()
        for i, step in enumerate(steps):
            _assert_decoded_tf(vals[rows == i], kind, step, f"{key}[{i}]")


def _assert_decoded_tf(got, kind, values, what):
    if kind == BYT:
        assert got.tolist() == list(values), what
    elif kind == F32:
        np.testing.assert_array_equal(
            got.astype(np.float32).view(np.uint32),
            np.array(values, np.float32).view(np.uint32),
            what,
        )
    else:
        assert got.tolist() == list(values), what


def test_parse_sequence_example_fixed_len_of_ours():
    data = tfr.encode_sequence_example(
        {"label": 4, "name": "x", "emb": np.arange(3, dtype=np.float32)},
        {
            "frames": np.arange(12, dtype=np.float32).reshape(4, 3),
            "ids": [1, 2, 3, 4],
            "tags": [b"a", b"b", b"c", b"d"],
        },
    )
    ctx, seq = tf.io.parse_single_sequence_example(
        data,
        context_features={
            "label": tf.io.FixedLenFeature([], tf.int64),
            "name": tf.io.FixedLenFeature([], tf.string),
            "emb": tf.io.FixedLenFeature([3], tf.float32),
            "missing": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        },
        sequence_features={
            "frames": tf.io.FixedLenSequenceFeature([3], tf.float32),
            "ids": tf.io.FixedLenSequenceFeature([], tf.int64),
            "tags": tf.io.FixedLenSequenceFeature([], tf.string),
            "absent": tf.io.FixedLenSequenceFeature([2], tf.int64, allow_missing=True),
        },
    )
    assert ctx["label"].numpy() == 4
    assert ctx["name"].numpy() == b"x"
    assert ctx["emb"].numpy().tolist() == [0.0, 1.0, 2.0]
    assert ctx["missing"].numpy() == -1
    assert seq["frames"].numpy().tolist() == np.arange(12, dtype=np.float32).reshape(4, 3).tolist()
    assert seq["ids"].numpy().tolist() == [1, 2, 3, 4]
    assert seq["tags"].numpy().tolist() == [b"a", b"b", b"c", b"d"]
    assert seq["absent"].numpy().shape == (0, 2)


def test_kindless_empty_steps_parse_like_tf_typed_empty_steps(tf_feature):
    # An untyped empty step ([] has no list kind) must mean to TF what TF's own typed empty
    # step means, for every dtype.
    for kind, dtype in [(I64, tf.int64), (F32, tf.float32), (BYT, tf.string)]:
        first = {I64: [1, 2], F32: [0.5], BYT: [b"z"]}[kind]
        ours = tfr.encode_sequence_example({}, {"s": [first, [], first]})
        theirs = _tf_sequence_example(
            tf_feature, {}, {"s": (kind, [first, [], first])}
        ).SerializeToString()
        spec = {"s": tf.io.VarLenFeature(dtype)}
        _, a = tf.io.parse_single_sequence_example(ours, sequence_features=spec)
        _, b = tf.io.parse_single_sequence_example(theirs, sequence_features=spec)
        assert a["s"].indices.numpy().tolist() == b["s"].indices.numpy().tolist()
        assert a["s"].values.numpy().tolist() == b["s"].values.numpy().tolist()
        assert (
            a["s"].dense_shape.numpy().tolist()
            == b["s"].dense_shape.numpy().tolist()
            == [3, len(first)]
        )


def test_batch_parse_sequence_example_ours_equals_tf_serialized(random_values, tf_feature):
    rv = random_values(31)
    rng = rv.rng
    ours, theirs = [], []
    for _ in range(200):
        n_steps = int(rng.integers(0, 6))
        ctx = {"label": (I64, rv.values(I64, 1)), "name": (BYT, rv.values(BYT, 1))}
        lists = {
            "tok": (I64, [rv.values(I64, int(rng.integers(1, 4))) for _ in range(n_steps)]),
            "vec": (F32, [rv.values(F32, 2) for _ in range(n_steps)]),
            "txt": (BYT, [rv.values(BYT, int(rng.integers(1, 3))) for _ in range(n_steps)]),
        }
        theirs.append(_tf_sequence_example(tf_feature, ctx, lists).SerializeToString())
        ours.append(
            tfr.encode_sequence_example(
                {"label": np.int64(ctx["label"][1][0]), "name": ctx["name"][1][0]},
                {
                    "tok": [np.array(s, np.int64) for s in lists["tok"][1]],
                    "vec": np.array(lists["vec"][1], np.float32).reshape(n_steps, 2),
                    "txt": lists["txt"][1],
                },
            )
        )
    kwargs = dict(
        context_features={
            "label": tf.io.FixedLenFeature([], tf.int64),
            "name": tf.io.FixedLenFeature([], tf.string),
        },
        sequence_features={
            "tok": tf.io.VarLenFeature(tf.int64),
            "vec": tf.io.FixedLenSequenceFeature([2], tf.float32),
            "txt": tf.io.RaggedFeature(tf.string),
        },
    )
    a = tf.io.parse_sequence_example(ours, **kwargs)
    b = tf.io.parse_sequence_example(theirs, **kwargs)
    for part_a, part_b in zip(a, b, strict=True):
        assert set(part_a) == set(part_b)
        for key in part_a:
            x, y = part_a[key], part_b[key]
            if isinstance(x, tf.SparseTensor):
                assert x.indices.numpy().tolist() == y.indices.numpy().tolist()
                x, y = x.values, y.values
            elif isinstance(x, tf.RaggedTensor):
                assert (
                    x.nested_row_splits[0].numpy().tolist()
                    == y.nested_row_splits[0].numpy().tolist()
                )
                x, y = x.flat_values, y.flat_values
            x, y = x.numpy(), y.numpy()
            if x.dtype == np.float32:
                x, y = x.view(np.uint32), y.view(np.uint32)
            assert x.shape == y.shape and x.tolist() == y.tolist(), key


# -- TF → decode ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ENCODE_CASES))
def test_decode_sequence_example_of_tf_built(name, tf_feature):
    _, _, tf_ctx, tf_lists = _split_case(ENCODE_CASES[name])
    data = _tf_sequence_example(tf_feature, tf_ctx, tf_lists).SerializeToString()
    ctx, lists = tfr.decode_sequence_example(data)
    assert set(ctx) == set(tf_ctx)
    for key, (kind, values) in tf_ctx.items():
        _assert_decoded(ctx[key], kind, values, key)
    assert set(lists) == set(tf_lists)
    for key, (kind, steps) in tf_lists.items():
        assert isinstance(lists[key], list), key
        assert len(lists[key]) == len(steps), key
        for i, step in enumerate(steps):
            _assert_decoded(lists[key][i], kind, step, f"{key}[{i}]")


def test_decode_sequence_example_of_empty_tf_messages():
    assert tfr.decode_sequence_example(tf.train.SequenceExample().SerializeToString()) == ({}, {})
    data = tf.train.SequenceExample(
        context=tf.train.Features(), feature_lists=tf.train.FeatureLists()
    ).SerializeToString()
    assert tfr.decode_sequence_example(data) == ({}, {})


def test_decode_sequence_example_kindless_steps(tf_feature):
    data = tf.train.SequenceExample(
        feature_lists=tf.train.FeatureLists(
            feature_list={
                "s": tf.train.FeatureList(feature=[tf.train.Feature(), tf_feature(I64, [3])])
            }
        )
    ).SerializeToString()
    _, lists = tfr.decode_sequence_example(data)
    assert len(lists["s"]) == 2
    assert isinstance(lists["s"][0], list) and lists["s"][0] == []
    _assert_decoded(lists["s"][1], I64, [3], "s[1]")


def test_decode_many_random_tf_sequence_examples(random_values, tf_feature):
    rv = random_values(41)
    rng = rv.rng
    for _ in range(300):
        ctx = {}
        for key in ["a", "ключ", "🙂"]:
            if rng.random() < 0.7:
                kind = str(rng.choice([I64, F32, BYT]))
                ctx[key] = (kind, rv.values(kind, int(rng.integers(0, 4))))
        lists = {}
        for key in ["x", "日本", ""]:
            if rng.random() < 0.7:
                kind = str(rng.choice([I64, F32, BYT]))
                lists[key] = (
                    kind,
                    [
                        rv.values(kind, int(rng.integers(0, 4)))
                        for _ in range(int(rng.integers(0, 5)))
                    ],
                )
        c, fl = tfr.decode_sequence_example(
            _tf_sequence_example(tf_feature, ctx, lists).SerializeToString()
        )
        assert set(c) == set(ctx) and set(fl) == set(lists)
        for key, (kind, values) in ctx.items():
            _assert_decoded(c[key], kind, values, key)
        for key, (kind, steps) in lists.items():
            assert len(fl[key]) == len(steps)
            for got, step in zip(fl[key], steps, strict=True):
                _assert_decoded(got, kind, step, key)


# -- hypothesis round trips -----------------------------------------------------------------------

_int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_float32s = st.floats(width=32, allow_nan=False)
_blobs = st.one_of(st.binary(max_size=20), st.text(max_size=6).map(lambda s: s.encode("utf-8")))


def _typed(kind_strategy):
    return st.one_of(
        st.tuples(st.just(I64), kind_strategy(_int64s)),
        st.tuples(st.just(F32), kind_strategy(_float32s)),
        st.tuples(st.just(BYT), kind_strategy(_blobs)),
    )


_contexts = st.dictionaries(
    st.text(max_size=6), _typed(lambda s: st.lists(s, min_size=1, max_size=5)), max_size=4
)
_lists = st.dictionaries(
    st.text(max_size=6),
    _typed(lambda s: st.lists(st.lists(s, min_size=1, max_size=4), max_size=5)),
    max_size=4,
)


def _ours(kind, values):
    if kind == I64:
        return np.array(values, dtype=np.int64)
    if kind == F32:
        return np.array(values, dtype=np.float32)
    return list(values)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(context=_contexts, feature_lists=_lists)
def test_hypothesis_sequence_round_trip_through_tf(context, feature_lists, tf_feature):
    ours = tfr.encode_sequence_example(
        {k: _ours(kind, v) for k, (kind, v) in context.items()},
        {k: [_ours(kind, s) for s in steps] for k, (kind, steps) in feature_lists.items()},
    )
    expected = _tf_sequence_example(tf_feature, context, feature_lists)
    parsed = tf.train.SequenceExample.FromString(ours)
    assert parsed.context == expected.context
    assert parsed.feature_lists == expected.feature_lists
    c, fl = tfr.decode_sequence_example(expected.SerializeToString())
    assert set(c) == set(context) and set(fl) == set(feature_lists)
    for key, (kind, values) in context.items():
        _assert_decoded(c[key], kind, values, key)
    for key, (kind, steps) in feature_lists.items():
        assert len(fl[key]) == len(steps)
        for got, step in zip(fl[key], steps, strict=True):
            _assert_decoded(got, kind, step, key)
