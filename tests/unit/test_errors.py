"""The exception hierarchy and what every error carries."""

from __future__ import annotations

import pickle

import pytest
import tfrecordkit as tfr


def test_hierarchy():
    assert issubclass(tfr.TFRecordError, Exception)
    assert issubclass(tfr.DataLossError, tfr.TFRecordError)
    assert issubclass(tfr.CorruptRecordError, tfr.DataLossError)
    assert issubclass(tfr.TruncatedRecordError, tfr.DataLossError)
    assert issubclass(tfr.ExampleDecodeError, tfr.TFRecordError)
    assert issubclass(tfr.SchemaError, tfr.TFRecordError)
    assert not issubclass(tfr.ExampleDecodeError, tfr.DataLossError)
    assert not issubclass(tfr.SchemaError, tfr.DataLossError)
    assert issubclass(tfr.DataLossWarning, UserWarning)
    assert tfr.errors.CorruptRecordError is tfr.CorruptRecordError
    for name in tfr.errors.__all__:
        assert getattr(tfr, name) is getattr(tfr.errors, name)


def _real_error(tmp_path, u):
    records = [b"first", b"second", b"third"]
    raw = bytearray(b"".join(u.frame(r) for r in records))
    raw[16 + 5 + 12] ^= 1  # data of record 1
    path = tmp_path / "e.tfrecord"
    path.write_bytes(bytes(raw))
    with pytest.raises(tfr.CorruptRecordError) as info:
        list(tfr.read_records(path))
    return info.value, str(path)


def test_errors_carry_their_location(tmp_path, u):
    err, path = _real_error(tmp_path, u)
    assert (err.path, err.offset, err.record_index, err.key) == (path, 21, 1, None)
    assert str(err) == f"{err.message} ({path}, record 1, offset 21)"


def test_errors_pickle_with_their_location(tmp_path, u):
    err, path = _real_error(tmp_path, u)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is tfr.CorruptRecordError
    assert (back.path, back.offset, back.record_index, back.message) == (
        path,
        21,
        1,
        err.message,
    )
    assert str(back) == str(err)
    schema_err = tfr.SchemaError("bad", key="k", record_index=3)
    back = pickle.loads(pickle.dumps(schema_err))
    assert (back.key, back.record_index, back.path) == ("k", 3, None)


def test_schema_error_from_parsing_is_a_value_error():
    with pytest.raises(ValueError) as info:
        tfr.parse_examples([tfr.encode_example({})], {"k": tfr.FixedLen([], "int64")})
    assert isinstance(info.value, tfr.SchemaError)
    assert info.value.key == "k"
