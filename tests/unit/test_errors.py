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


def test_a_file_of_another_format_is_named(tmp_path):
    png = tmp_path / "picture.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(64))
    with pytest.raises(tfr.NotTFRecordError) as info:
        list(tfr.read_records(png))
    err = info.value
    assert isinstance(err, tfr.CorruptRecordError)
    assert err.message == "not a TFRecord file (it starts with a PNG signature)"
    assert (err.path, err.offset, err.record_index) == (str(png), 0, 0)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is tfr.NotTFRecordError and again.path == err.path

    csv = tmp_path / "rows.csv"
    csv.write_text("split,image_uri,label\n")
    with pytest.raises(tfr.NotTFRecordError, match='text: "split,image_uri,label"'):
        tfr.count(str(csv))
    (report,) = tfr.verify(str(csv))
    assert report.foreign and not report.ok


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_parse_errors_from_a_read_name_the_file_record_offset_and_feature(tmp_path, compression):
    import numpy as np

    floats = tfr.encode_examples({"x": np.arange(3, dtype=np.float32)})
    ints = tfr.encode_examples({"x": np.arange(3, dtype=np.int64)})
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    for path, records in zip(paths, [floats, [*floats[:2], ints[2]]], strict=True):
        with tfr.RecordWriter(path, compression=compression) as w:
            w.write_many(records)
    # The header of record 2 follows two framed records (in the decompressed stream).
    offset = sum(len(r) + 16 for r in floats[:2])
    schema = {"x": tfr.FixedLen([], "float32")}
    reads = {
        "read_examples": lambda: list(tfr.read_examples(paths, schema, batch_size=4)),
        "read_arrow": lambda: tfr.read_arrow(paths, schema).read_all(),
        "Dataset": lambda: list(tfr.Dataset.from_files(paths).parse(schema).batch(4)),
    }
    for name, read in reads.items():
        with pytest.raises(tfr.SchemaError) as info:
            read()
        err = info.value
        assert (err.path, err.record_index, err.offset, err.key) == (paths[1], 2, offset, "x"), name
        assert str(err).startswith('feature "x": data types don\'t match: found int64'), name
        assert f"({paths[1]}, record 2, offset {offset})" in str(err), name


def test_records_that_are_no_examples_are_named_by_file_record_and_offset(tmp_path):
    import numpy as np

    good = tfr.encode_examples({"x": np.arange(4, dtype=np.int64)})
    path = str(tmp_path / "a.tfrecord")
    with tfr.RecordWriter(path) as w:
        w.write_many([*good[:3], b"\xff not an Example", good[3]])
    offset = sum(len(r) + 16 for r in good[:3])
    for read in (lambda: tfr.infer_schema(path), lambda: tfr.stats(path)):
        with pytest.raises(tfr.ExampleDecodeError) as info:
            read()
        assert (info.value.path, info.value.record_index, info.value.offset) == (path, 3, offset)


def test_an_error_made_again_from_its_printed_traceback_has_its_location(tmp_path, u):
    import traceback

    err, path = _real_error(tmp_path, u)
    err.note_location()
    # As PyTorch's DataLoader does with a worker's error: only its type and text cross.
    text = "Caught it in a worker.\n" + "".join(traceback.format_exception(err))
    again = type(err)(text)
    assert (again.path, again.offset, again.record_index, again.key) == (path, 21, 1, None)
    assert "error location" not in again.message
    # The location is in the text already, and not added to it twice.
    assert str(again).rstrip().endswith(f"{err.message} ({path}, record 1, offset 21)")
    assert str(again).count(path) == 1


@pytest.mark.parametrize(
    "text",
    [
        'feature "k" tfrecordkit error location: {"path": "/etc/passwd"}',  # not its own line
        'x\ntfrecordkit error location: {"path": "/etc/passwd"} and more',  # not JSON
        'x\ntfrecordkit error location: ["/etc/passwd"]',
        'tfrecordkit error location: {"path": "/etc/passwd"}',  # no line before it
    ],
)
def test_a_location_note_that_is_not_one_is_ignored(text):
    err = tfr.SchemaError(text)
    assert (err.path, err.offset, err.record_index, err.key, err.message) == (
        None,
        None,
        None,
        None,
        text,
    )


def test_a_location_note_of_the_wrong_types_gives_no_location():
    note = '{"path": 3, "offset": "21", "record_index": true, "key": "k", "lost": [1, "2"]}'
    err = tfr.SchemaError("x\ntfrecordkit error location: " + note + "\n")
    assert (err.path, err.offset, err.record_index, err.key, err.lost) == (
        None,
        None,
        None,
        "k",
        None,
    )
    assert err.message == "x\n"
