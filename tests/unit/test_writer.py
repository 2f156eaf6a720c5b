"""tfr.RecordWriter: framing, atomic writes, flush, compression and argument checks."""

from __future__ import annotations

import gc
import gzip
import os

import pytest
import tfrecordkit as tfr


def _hidden(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith("."))


def test_context_manager_writes_the_exact_framing(tmp_path, u):
    path = tmp_path / "out.tfrecord"
    records = [*u.sample_records(7), b""]
    with tfr.RecordWriter(path) as w:
        assert isinstance(w, tfr.RecordWriter)
        w.write(records[0])
        assert w.write_many(records[1:]) == len(records) - 1
        assert w.records_written == len(records)
        assert not w.closed
    assert w.closed
    assert path.read_bytes() == b"".join(u.frame(r) for r in records)
    assert list(tfr.read_records(path)) == records


def test_write_many_accepts_any_iterable(tmp_path):
    path = tmp_path / "gen.tfrecord"
    with tfr.RecordWriter(path) as w:
        assert w.write_many(b"%d" % i for i in range(100)) == 100
        assert w.write_many([]) == 0
        assert w.write_many(iter((b"a", b"b"))) == 2
    assert tfr.count(path) == 102


def test_close_is_idempotent_and_explicit_close_works(tmp_path):
    path = tmp_path / "c.tfrecord"
    w = tfr.RecordWriter(path)
    w.write(b"one")
    w.close()
    w.close()
    assert w.closed
    assert list(tfr.read_records(path)) == [b"one"]


def test_atomic_final_path_appears_only_at_close(tmp_path):
    path = tmp_path / "atomic.tfrecord"
    w = tfr.RecordWriter(path)
    w.write(b"x" * 100)
    w.flush()
    assert not path.exists()
    hidden = _hidden(tmp_path)
    assert len(hidden) == 1 and "atomic.tfrecord" in hidden[0]
    assert os.listdir(tmp_path) == hidden
    w.close()
    assert path.exists()
    assert os.listdir(tmp_path) == ["atomic.tfrecord"]


def test_exception_inside_with_leaves_nothing(tmp_path):
    path = tmp_path / "boom.tfrecord"
    with pytest.raises(RuntimeError, match="boom"):
        with tfr.RecordWriter(path) as w:
            w.write_many([b"a", b"b"])
            w.flush()
            assert len(_hidden(tmp_path)) == 1
            raise RuntimeError("boom")
    assert not path.exists()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_exception_inside_with_leaves_nothing_compressed(tmp_path, compression):
    path = tmp_path / "boom.tfrecord"
    with pytest.raises(KeyError):
        with tfr.RecordWriter(path, compression) as w:
            w.write(b"a" * 1000)
            raise KeyError("x")
    assert os.listdir(tmp_path) == []


def test_abort_discards(tmp_path):
    path = tmp_path / "aborted.tfrecord"
    w = tfr.RecordWriter(path)
    w.write(b"zzz")
    w.abort()
    assert not path.exists() and os.listdir(tmp_path) == []


def test_a_writer_never_closed_leaves_nothing_and_says_so(tmp_path):
    # An exception outside a `with` leaves the writer to the garbage collector: the
    # records before it are not given the final name as though the file were whole.
    path = tmp_path / "unclosed.tfrecord"

    def job():
        w = tfr.RecordWriter(path)
        for i in range(10):
            if i == 5:
                raise RuntimeError("stopped halfway")
            w.write(b"%d" % i)

    with pytest.warns(RuntimeWarning, match="collected without close.*5 records were discarded"):
        with pytest.raises(RuntimeError):
            job()
        gc.collect()
    assert os.listdir(tmp_path) == []


def test_existing_file_is_replaced_only_at_close(tmp_path, u):
    path = tmp_path / "keep.tfrecord"
    u.write_file(path, [b"old"])
    w = tfr.RecordWriter(path)
    w.write(b"new")
    w.flush()
    assert list(tfr.read_records(path)) == [b"old"]
    w.close()
    assert list(tfr.read_records(path)) == [b"new"]


def test_non_atomic_writes_the_final_path_directly(tmp_path, u):
    path = tmp_path / "direct.tfrecord"
    w = tfr.RecordWriter(path, atomic=False)
    assert path.exists()
    w.write(b"abc")
    w.flush()
    assert u.unframe(path.read_bytes()) == [b"abc"]
    assert _hidden(tmp_path) == []
    w.close()


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
@pytest.mark.parametrize("atomic", [True, False])
def test_flush_puts_complete_records_on_disk(tmp_path, u, compression, atomic):
    path = tmp_path / "flushed.tfrecord"
    w = tfr.RecordWriter(path, compression, atomic=atomic)

    def on_disk() -> bytes:
        if atomic:
            (name,) = _hidden(tmp_path)
            return (tmp_path / name).read_bytes()
        return path.read_bytes()

    written: list[bytes] = []
    for step in range(3):
        batch = u.sample_records(20 + step, tag=f"s{step}-")
        w.write_many(batch)
        written += batch
        w.flush()
        raw = u.decompress_available(on_disk(), compression)
        assert u.unframe(raw) == written, f"after flush {step}"
    w.close()
    assert list(tfr.read_records(path, compression=compression)) == written
    if compression == "gzip":
        assert u.unframe(gzip.decompress(path.read_bytes())) == written


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.tfrecord.gz", "gzip"),
        ("a.GZ", "gzip"),
        ("a.tfrecord.zz", "zlib"),
        ("a.zlib", "zlib"),
        ("a.tfrecord", None),
        ("noext", None),
    ],
)
def test_auto_compression_from_extension(tmp_path, name, expected):
    path = tmp_path / name
    with tfr.RecordWriter(path, "auto") as w:
        assert w.compression == expected
        w.write(b"payload" * 10)
    data = path.read_bytes()
    if expected == "gzip":
        assert data[:2] == b"\x1f\x8b"
    elif expected == "zlib":
        assert data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
    else:
        assert data[12:19] == b"payload"
    assert list(tfr.read_records(path)) == [b"payload" * 10]


def test_compression_none_means_uncompressed_whatever_the_name(tmp_path, u):
    path = tmp_path / "plain.gz"
    with tfr.RecordWriter(path) as w:
        assert w.compression is None
        w.write(b"abc")
    assert u.unframe(path.read_bytes()) == [b"abc"]


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_levels(tmp_path, compression):
    data = [bytes(200) + b"%d" % i for i in range(200)]
    sizes = {}
    for level in range(10):
        path = tmp_path / f"l{level}"
        with tfr.RecordWriter(path, compression, level=level) as w:
            w.write_many(data)
        assert list(tfr.read_records(path, compression=compression)) == data
        sizes[level] = path.stat().st_size
    assert sizes[0] > sizes[9]


@pytest.mark.parametrize("level", [10, 99, -1, -100])
@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_level_out_of_range(tmp_path, level, compression):
    with pytest.raises(ValueError):
        tfr.RecordWriter(tmp_path / "x", compression, level=level)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("compression", [None, "auto"])
def test_level_without_compression(tmp_path, compression):
    with pytest.raises(ValueError, match="level"):
        tfr.RecordWriter(tmp_path / "x.tfrecord", compression, level=5)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["lz4", "snappy", "gzip2", "ZSTD"])
def test_unknown_compression(tmp_path, name):
    with pytest.raises(ValueError, match="compression"):
        tfr.RecordWriter(tmp_path / "x", name)


def test_use_after_close_is_a_value_error(tmp_path):
    w = tfr.RecordWriter(tmp_path / "x")
    w.write(b"1")
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.write(b"2")
    with pytest.raises(ValueError, match="closed"):
        w.write_many([b"3"])
    with pytest.raises(ValueError, match="closed"):
        w.flush()
    assert w.records_written == 1
    assert list(tfr.read_records(tmp_path / "x")) == [b"1"]


def test_bytes_like_records(tmp_path):
    path = tmp_path / "bl.tfrecord"
    buf = bytearray(b"0123456789")
    with tfr.RecordWriter(path) as w:
        w.write(bytearray(b"ba"))
        w.write(memoryview(b"mv"))
        w.write(memoryview(buf)[2:5])
        w.write(memoryview(b"abcdef")[::2])  # not contiguous
        w.write_many([bytearray(b"x"), memoryview(b"yz"), b"w"])
    assert list(tfr.read_records(path)) == [b"ba", b"mv", b"234", b"ace", b"x", b"yz", b"w"]


@pytest.mark.parametrize("bad", ["text", 5, None, 1.5])
def test_non_bytes_records_are_type_errors(tmp_path, bad):
    with tfr.RecordWriter(tmp_path / "t") as w:
        with pytest.raises(TypeError):
            w.write(bad)
        w.write(b"ok")
    assert list(tfr.read_records(tmp_path / "t")) == [b"ok"]


def test_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        tfr.RecordWriter(tmp_path / "no" / "such" / "dir" / "x.tfrecord")


def test_pathlike_and_repr(tmp_path):
    path = tmp_path / "r.tfrecord"
    w = tfr.RecordWriter(path)
    assert w.path == str(path)
    w.write(b"1")
    assert "1 records" in repr(w) and "r.tfrecord" in repr(w)
    w.close()
    assert "closed" in repr(w)


def test_large_record(tmp_path):
    big = os.urandom(3 << 20)
    path = tmp_path / "big.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write(big)
        w.write(b"after")
    assert list(tfr.read_records(path)) == [big, b"after"]


def test_a_record_writer_given_a_url_says_which_writers_take_urls(tmp_path):
    url = f"memory://{tmp_path.name}/out.tfrecord"
    with pytest.raises(ValueError, match="RecordWriter writes local files, and memory://"):
        tfr.RecordWriter(url)
    # What the message points to does write there.
    local = tmp_path / "x.tfrecord"
    with tfr.RecordWriter(local) as w:
        w.write(b"a")
    tfr.repair(local, url)
    assert list(tfr.read_records(url)) == [b"a"]
    manifest = tfr.write_dataset([b"b"], f"memory://{tmp_path.name}/set/train")
    assert manifest.records == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_writer_never_replaces_a_pipe_or_a_directory(tmp_path):
    from click.testing import CliRunner
    from tfrecordkit.cli import main
    from tfrecordkit.io.paths import atomic_write

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    (tmp_path / "dir").mkdir()
    good = tmp_path / "good.tfrecord"
    with tfr.RecordWriter(good) as w:
        w.write(b"a record")
    for target, what in ((pipe, "a named pipe"), (tmp_path / "dir", "a directory")):
        refused = f"{what} is there, not a regular file, and is never replaced"
        with pytest.raises(FileExistsError, match=refused) as caught:
            tfr.RecordWriter(target)
        assert caught.value.filename == str(target)
        with pytest.raises(FileExistsError, match=refused):
            with atomic_write(str(target)) as f:
                f.write("text")
        result = CliRunner().invoke(main, ["repair", str(good), "-o", str(target), "--overwrite"])
        assert result.exit_code == 1 and refused in result.output
    assert pipe.is_fifo() and (tmp_path / "dir").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "good.tfrecord", "pipe"]


def test_a_failed_small_write_names_its_file_and_leaves_nothing(tmp_path, monkeypatch):
    # A full disk often shows only when the data is synced.
    from tfrecordkit.io import paths

    def full(fd):
        raise OSError(28, "No space left on device")

    path = tmp_path / "report.html"
    monkeypatch.setattr(paths.os, "fsync", full)
    report = tfr.stats(str(_tutorial_file(tmp_path)), progress=False)
    with pytest.raises(OSError, match="No space left on device") as caught:
        report.to_html(path)
    assert caught.value.filename == str(path)
    assert not path.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def _tutorial_file(tmp_path):
    path = tmp_path / "t.tfrecord"
    with tfr.RecordWriter(path) as w:
        for i in range(5):
            w.write(tfr.encode_example({"x": [i]}))
    return path
