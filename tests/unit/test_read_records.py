"""tfr.read_records, tfr.expand_paths and tfr.count."""

from __future__ import annotations

import contextlib
import os
import pathlib
import sys

import pytest
import tfrecordkit as tfr


@pytest.fixture
def three_files(tmp_path, u):
    # Written out of order so that sorting is observable.
    contents = {}
    for name in ["part-b.tfrecord", "part-c.tfrecord", "part-a.tfrecord"]:
        records = u.sample_records(5, tag=name[5])
        u.write_file(tmp_path / name, records)
        contents[name] = records
    return tmp_path, contents


def test_str_path(tmp_path, u):
    records = u.sample_records(12)
    path = u.write_file(tmp_path / "one.tfrecord", records)
    assert list(tfr.read_records(path)) == records


def test_pathlike(tmp_path, u):
    records = u.sample_records(3)
    u.write_file(tmp_path / "one.tfrecord", records)

    class MyPath(os.PathLike):
        def __fspath__(self):
            return str(tmp_path / "one.tfrecord")

    assert list(tfr.read_records(pathlib.Path(tmp_path / "one.tfrecord"))) == records
    assert list(tfr.read_records(MyPath())) == records
    assert list(tfr.read_records([MyPath(), pathlib.Path(tmp_path / "one.tfrecord")])) == (
        records * 2
    )


def test_returns_an_iterator(tmp_path, u):
    path = u.write_file(tmp_path / "it.tfrecord", [b"a", b"b"])
    it = tfr.read_records(path)
    assert iter(it) is it
    assert next(it) == b"a"
    assert next(it) == b"b"
    with pytest.raises(StopIteration):
        next(it)


def test_glob_is_sorted(three_files):
    directory, contents = three_files
    expected = [r for name in sorted(contents) for r in contents[name]]
    assert list(tfr.read_records(str(directory / "part-*.tfrecord"))) == expected
    assert list(tfr.read_records(str(directory / "part-[ab].tfrecord"))) == (
        contents["part-a.tfrecord"] + contents["part-b.tfrecord"]
    )
    assert list(tfr.read_records(str(directory / "part-?.tfrecord"))) == expected
    assert tfr.expand_paths(str(directory / "part-*")) == [
        str(directory / n) for n in sorted(contents)
    ]


def test_list_keeps_its_order(three_files):
    directory, contents = three_files
    names = ["part-c.tfrecord", "part-a.tfrecord", "part-b.tfrecord"]
    assert list(tfr.read_records([directory / n for n in names])) == [
        r for n in names for r in contents[n]
    ]
    # A list may mix plain paths and globs; each glob expands sorted in place.
    mixed = [str(directory / "part-c.tfrecord"), str(directory / "part-[ab]*")]
    assert list(tfr.read_records(mixed)) == (
        contents["part-c.tfrecord"] + contents["part-a.tfrecord"] + contents["part-b.tfrecord"]
    )


def test_existing_path_with_glob_characters_is_literal(tmp_path, u):
    path = tmp_path / "data[1].tfrecord"
    u.write_file(path, [b"literal"])
    assert list(tfr.read_records(str(path))) == [b"literal"]


def test_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        tfr.read_records(tmp_path / "nope.tfrecord")  # raised at call time
    assert info.value.filename == str(tmp_path / "nope.tfrecord")
    with pytest.raises(FileNotFoundError):
        tfr.count(tmp_path / "nope.tfrecord")


def test_glob_matching_nothing(tmp_path, u):
    u.write_file(tmp_path / "x.tfrecord", [b"1"])
    with pytest.raises(FileNotFoundError):
        tfr.read_records(str(tmp_path / "*.gz"))
    with pytest.raises(FileNotFoundError):
        tfr.read_records([str(tmp_path / "x.tfrecord"), str(tmp_path / "y*")])


def test_directory(tmp_path):
    with pytest.raises(IsADirectoryError):
        tfr.read_records(tmp_path)
    with pytest.raises(IsADirectoryError):
        tfr.count(str(tmp_path))


@pytest.mark.parametrize("on_error", ["ignore", "RAISE", "", None, 1])
def test_invalid_on_error_at_call_time(tmp_path, u, on_error):
    path = u.write_file(tmp_path / "x.tfrecord", [b"1"])
    with pytest.raises(ValueError, match="on_error"):
        tfr.read_records(path, on_error=on_error)  # no iteration needed


@pytest.mark.parametrize("compression", ["lz4", "deflate", "gzip ", "tar"])
def test_invalid_compression_at_call_time(tmp_path, u, compression):
    path = u.write_file(tmp_path / "x.tfrecord", [b"1"])
    with pytest.raises(ValueError, match="compression"):
        tfr.read_records(path, compression=compression)
    with pytest.raises(ValueError, match="compression"):
        tfr.count(path, compression=compression)


@pytest.mark.parametrize("written", [None, "gzip", "zlib"])
def test_compression_names(tmp_path, u, written):
    records = u.sample_records(30)
    path = u.write_file(tmp_path / "noext", records, written)
    names = {None: [None, "none", "NONE", ""], "gzip": ["gzip", "GZIP"], "zlib": ["zlib", "ZLIB"]}
    for name in ["auto", *names[written]]:
        assert list(tfr.read_records(path, compression=name)) == records, name
        assert tfr.count(path, compression=name) == len(records), name


def test_valid_on_error_values_read_good_files(tmp_path, u):
    records = u.sample_records(4)
    path = u.write_file(tmp_path / "g.tfrecord", records)
    for on_error in ("raise", "skip", "warn"):
        assert list(tfr.read_records(path, on_error=on_error)) == records


def test_many_records_cross_batches(tmp_path):
    path = tmp_path / "many.tfrecord"
    records = [b"%06d" % i for i in range(5000)]
    with tfr.RecordWriter(path) as w:
        w.write_many(records)
    assert list(tfr.read_records(path)) == records


# ---------------------------------------------------------------- count


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_count(tmp_path, u, compression):
    for n in (0, 1, 17, 1500):
        path = u.write_file(tmp_path / f"c{n}", [b"x" * (i % 5) for i in range(n)], compression)
        assert tfr.count(path) == n
        assert tfr.count(path, compression=compression) == n


def test_count_several_files(tmp_path, u):
    paths = []
    for i, (n, compression) in enumerate([(3, None), (10, "gzip"), (0, "zlib"), (7, None)]):
        paths.append(u.write_file(tmp_path / f"f{i}.rec", u.sample_records(n), compression))
    assert tfr.count(paths) == 20
    assert tfr.count(str(tmp_path / "f*.rec")) == 20
    assert tfr.count(paths[1]) == 10


def test_count_ignores_data_checksums_but_not_framing(tmp_path, u):
    records = u.sample_records(6)
    raw = bytearray(b"".join(u.frame(r) for r in records))
    raw[12] ^= 1  # data of record 0
    path = tmp_path / "dmg"
    path.write_bytes(bytes(raw))
    assert tfr.count(path) == 6
    path.write_bytes(bytes(raw[:-3]))
    with pytest.raises(tfr.TruncatedRecordError):
        tfr.count(path)


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_concatenated_compressed_members(tmp_path, u, compression):
    import gzip
    import zlib

    pack = gzip.compress if compression == "gzip" else zlib.compress
    a = [b"a0", b"a1", b"a2"]
    b = [b"b0", b""]
    path = tmp_path / "members"
    path.write_bytes(pack(b"".join(u.frame(r) for r in a)) + pack(b"".join(u.frame(r) for r in b)))
    assert list(tfr.read_records(path)) == a + b
    assert list(tfr.read_records(path, compression=compression)) == a + b
    assert tfr.count(path) == 5


@pytest.mark.parametrize("length", [376, 35615, 0])
def test_auto_detection_prefers_a_valid_plain_header(tmp_path, u, length):
    # 376 starts with 0x78 0x01 (a zlib header); 35615 with 0x1f 0x8b (the gzip magic).
    records = [b"q" * length, b"z"]
    path = tmp_path / "looks-compressed.tfrecord.gz"  # even the name says gzip
    path.write_bytes(b"".join(u.frame(r) for r in records))
    assert list(tfr.read_records(path)) == records
    assert tfr.count(path) == 2


def test_write_many_stops_at_a_bad_item(tmp_path):
    path = tmp_path / "partial.tfrecord"
    with tfr.RecordWriter(path) as w:
        with pytest.raises(TypeError, match=r"item 1: expected a bytes-like object, not str"):
            w.write_many([b"a", "not bytes", b"c"])
        assert w.records_written == 1
    assert list(tfr.read_records(path)) == [b"a"]


def test_empty_list_of_paths_reads_nothing():
    assert list(tfr.read_records([])) == []
    assert tfr.count([]) == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="named pipes as Linux has them")
@pytest.mark.parametrize(
    "call",
    [
        "tfr.count(pipe)",
        "list(tfr.read_records(pipe))",
        "tfr.verify(pipe)",
        "list(tfr.read_examples(pipe, {'x': tfr.FixedLen((), 'int64')}, 4))",
        "list(tfr.Dataset.from_files([pipe]).shuffle(8).batch(2))",
        "list(tfr.Dataset.list_files(pipe).interleave(cycle_length=2).batch(2))",
    ],
)
def test_ctrl_c_stops_waiting_for_a_named_pipes_writer(tmp_path, call):
    import signal
    import subprocess
    import time

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    code = f"import tfrecordkit as tfr\npipe = {str(pipe)!r}\n{call}"
    with subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as waiting:
        # Once a thread waits in poll() for a writer to the pipe, the call is interrupted,
        # and ends (its reading threads with it).
        tasks = pathlib.Path(f"/proc/{waiting.pid}/task")
        for _ in range(600):
            with contextlib.suppress(OSError):
                if any("poll" in (t / "wchan").read_text() for t in tasks.iterdir()):
                    break
            time.sleep(0.1)
        waiting.send_signal(signal.SIGINT)
        _, err = waiting.communicate(timeout=60)
    assert waiting.returncode != 0
    assert err.decode().rstrip().splitlines()[-1] == "KeyboardInterrupt"
