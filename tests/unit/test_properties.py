"""Hypothesis property tests: round trips and agreement between the parsers."""

from __future__ import annotations

import numpy as np
import tfrecordkit as tfr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INT64_EDGE = st.sampled_from([-(2**63), -(2**63) + 1, -1, 0, 1, 2**31, 2**63 - 1])
FLOAT32 = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)
KEYS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=12)

int_lists = st.lists(st.one_of(INT64, INT64_EDGE), min_size=1, max_size=20)
float_lists = st.lists(FLOAT32, min_size=1, max_size=20)
bytes_lists = st.lists(st.binary(max_size=30), min_size=0, max_size=8)

feature_values = st.one_of(
    int_lists.map(lambda v: ("int64", v)),
    float_lists.map(lambda v: ("float32", v)),
    float_lists.map(lambda v: ("float32", np.array(v, dtype=np.float32))),
    bytes_lists.map(lambda v: ("bytes", v)),
)
feature_dicts = st.dictionaries(KEYS, feature_values, max_size=8)


def _bits(values) -> list[int]:
    return np.asarray(values, dtype=np.float32).view(np.uint32).tolist()


def _check_value(kind, value, got):
    if kind == "int64":
        assert isinstance(got, np.ndarray) and got.dtype == np.int64
        assert got.tolist() == list(value)
    elif kind == "float32":
        assert isinstance(got, np.ndarray) and got.dtype == np.float32
        assert _bits(got) == _bits(value)  # bitwise: NaN payloads, -0.0, inf
    else:
        assert got == list(value)


@SETTINGS
@given(feature_dicts)
def test_encode_decode_round_trip(features):
    data = tfr.encode_example({k: v for k, (_, v) in features.items()})
    decoded = tfr.decode_example(data)
    assert list(decoded) == list(features)
    for key, (kind, value) in features.items():
        _check_value(kind, value, decoded[key])
    # Encoding is deterministic and re-encoding what was decoded gives the same bytes.
    assert tfr.encode_example(decoded) == data


@SETTINGS
@given(
    context=feature_dicts,
    lists=st.dictionaries(KEYS, st.lists(feature_values, max_size=5), max_size=4),
)
def test_sequence_example_round_trip(context, lists):
    # One dtype per feature list: keep only the steps of the first step's kind.
    steps = {}
    for key, values in lists.items():
        if values:
            kind = values[0][0]
            steps[key] = [v for v in values if v[0] == kind]
        else:
            steps[key] = []
    data = tfr.encode_sequence_example(
        {k: v for k, (_, v) in context.items()},
        {k: [v for _, v in s] for k, s in steps.items()},
    )
    ctx, fl = tfr.decode_sequence_example(data)
    assert list(ctx) == list(context)
    for key, (kind, value) in context.items():
        _check_value(kind, value, ctx[key])
    assert list(fl) == list(steps)
    for key, s in steps.items():
        assert len(fl[key]) == len(s)
        for (kind, value), got in zip(s, fl[key], strict=True):
            _check_value(kind, value, got)


@SETTINGS
@given(
    records=st.lists(st.binary(max_size=300), max_size=40),
    compression=st.sampled_from([None, "gzip", "zlib"]),
    level=st.sampled_from([None, 0, 1, 9]),
)
def test_write_read_round_trip(tmp_path_factory, records, compression, level):
    directory = tmp_path_factory.mktemp("rt")
    path = directory / "data.tfrecord"
    with tfr.RecordWriter(path, compression, level=level if compression else None) as w:
        w.write_many(records)
    assert list(tfr.read_records(path, compression=compression)) == records
    assert list(tfr.read_records(path)) == records  # "auto" detects it from the bytes
    assert tfr.count(path) == len(records)
    (report,) = tfr.verify(path)
    assert report.ok and report.records == len(records)


@SETTINGS
@given(
    parts=st.lists(st.lists(st.binary(max_size=50), max_size=10), min_size=1, max_size=4),
    compressions=st.lists(st.sampled_from([None, "gzip", "zlib"]), min_size=4, max_size=4),
)
def test_multi_file_round_trip(tmp_path_factory, parts, compressions):
    directory = tmp_path_factory.mktemp("mf")
    paths = []
    for i, (records, compression) in enumerate(zip(parts, compressions, strict=False)):
        path = directory / f"part-{i:05d}"
        with tfr.RecordWriter(path, compression) as w:
            w.write_many(records)
        paths.append(path)
    expected = [r for p in parts for r in p]
    assert list(tfr.read_records(paths)) == expected
    assert list(tfr.read_records(str(directory / "part-*"))) == expected
    assert tfr.count(paths) == len(expected)


# One dtype per key across the batch; each Example has the key or not.
_KIND_VALUES = {
    "int64": st.lists(st.one_of(INT64, INT64_EDGE), max_size=6),
    "float32": st.lists(FLOAT32, max_size=6),
    "bytes": st.lists(st.binary(max_size=10), max_size=6),
}


@st.composite
def example_batches(draw):
    kinds = draw(
        st.dictionaries(KEYS, st.sampled_from(sorted(_KIND_VALUES)), min_size=1, max_size=5)
    )
    n = draw(st.integers(min_value=0, max_value=8))
    batch = []
    for _ in range(n):
        example = {}
        for key, kind in kinds.items():
            if draw(st.booleans()):
                values = draw(_KIND_VALUES[kind])
                example[key] = np.array(values, dtype=np.float32) if kind == "float32" else values
        batch.append(example)
    return kinds, batch


@SETTINGS
@given(example_batches())
def test_parse_examples_varlen_agrees_with_decode_example(data):
    kinds, batch = data
    records = [tfr.encode_example(e) for e in batch]
    schema = {key: tfr.VarLen(kind) for key, kind in kinds.items()}
    parsed = tfr.parse_examples(records, schema)
    assert list(parsed) == list(kinds)
    decoded = [tfr.decode_example(r) for r in records]
    for key, kind in kinds.items():
        ragged = parsed[key]
        assert isinstance(ragged, tfr.Ragged)
        assert len(ragged) == len(records)
        assert ragged.row_splits[0] == 0 and ragged.row_splits[-1] == len(ragged.values)
        for i, d in enumerate(decoded):
            want = d.get(key, [])
            got = ragged[i]
            if kind == "bytes":
                assert list(got) == list(want)
            elif kind == "float32":
                assert got.dtype == np.float32
                assert _bits(got) == _bits(np.asarray(want, dtype=np.float32))
            else:
                assert got.dtype == np.int64
                assert got.tolist() == list(np.asarray(want, dtype=np.int64))
        # One record at a time gives the same rows.
        for i, r in enumerate(records):
            single = tfr.parse_example(r, {key: schema[key]})[key]
            if kind == "float32":
                assert _bits(single) == _bits(ragged[i])
            else:
                assert list(single) == list(ragged[i])


@SETTINGS
@given(
    rows=st.lists(st.lists(st.one_of(INT64, INT64_EDGE), min_size=3, max_size=3), max_size=10),
)
def test_parse_examples_fixedlen_matches_the_input(rows):
    records = [tfr.encode_example({"v": r, "s": r[0]}) for r in rows]
    out = tfr.parse_examples(
        records, {"v": tfr.FixedLen([3], "int64"), "s": tfr.FixedLen([], "int64")}
    )
    assert out["v"].shape == (len(rows), 3)
    assert out["v"].tolist() == rows
    assert out["s"].tolist() == [r[0] for r in rows]
