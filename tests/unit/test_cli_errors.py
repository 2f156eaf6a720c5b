"""Every subcommand, given bad input, as a user runs it: the installed ``tfrecordkit``
command in a subprocess. Each failure is one line on stderr starting ``error:``, with no
Python internals, and the exit code says what kind it was: 2 for a usage error, 1 for a
failure."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr

USAGE, FAILURE = 2, 1


def tfrecordkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("tfrecordkit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tfrecordkit.cli"]
    return subprocess.run(
        [*command, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A folder with a PNG, a CSV, a good file, a dataset without images and a conversion."""
    from PIL import Image

    d = tmp_path_factory.mktemp("cli")
    png = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 20, 20)).save(png, format="PNG")
    (d / "picture.png").write_bytes(png.getvalue())
    (d / "table.csv").write_text(f"split,image_uri,label\nTRAIN,{d / 'picture.png'},cat\n")
    with tfr.RecordWriter(str(d / "good.tfrecord")) as w:
        for record in tfr.encode_examples({"x": np.arange(4, dtype=np.int64)}):
            w.write(record)
    tfr.write_dataset(
        tfr.encode_examples({"x": np.arange(8, dtype=np.int64)}),
        str(d / "numbers" / "train"),
        num_shards=1,
        progress=False,
    )
    assert tfr.convert(str(d / "table.csv"), str(d / "converted"), progress=False).rows
    (d / "header-only.csv").write_text("split,image_uri,label\n")
    (d / "gzip.parquet").write_bytes(gzip.compress(b"split,image_uri,label\n" * 20))
    return d


CASES = [
    # (arguments, exit code, what the one line says)
    (["bogus"], USAGE, "No such command 'bogus'"),
    (["--storage-option", "novalue", "count", "x"], USAGE, "'novalue' is not KEY=VALUE"),
    (["head"], USAGE, "Missing argument 'FILE'"),
    (["head", "-n", "many", "good.tfrecord"], USAGE, "'many' is not a valid integer"),
    (["head", "missing.tfrecord"], FAILURE, "no such file: missing.tfrecord"),
    (["head", "picture.png"], FAILURE, "not a TFRecord file (it starts with a PNG signature)"),
    (["count", "nothing-*.tfrecord"], FAILURE, "no files match the pattern: nothing-*"),
    (["count", "table.csv"], FAILURE, 'it starts with text: "split,image_uri,label"'),
    (["verify", "missing.tfrecord"], FAILURE, "missing.tfrecord"),
    (["schema", "--sample", "0", "good.tfrecord"], USAGE, "0 is not in the range 1<=x<="),
    (["schema", "picture.png"], FAILURE, "not a TFRecord file"),
    (
        ["index", "picture.png"],
        FAILURE,
        "not a TFRecord file (it starts with a PNG signature) (picture.png",
    ),
    (["repair", "good.tfrecord", "-o", "./good.tfrecord"], USAGE, "must differ from SRC"),
    (["repair", "missing.tfrecord", "-o", "out.tfrecord"], FAILURE, "no such file"),
    (["repair", "good.tfrecord", "-o", "table.csv"], FAILURE, "pass --overwrite"),
    (["reshard", "good.tfrecord", "-o", "r", "-n", "0"], USAGE, "0 is not in the range 1<=x<="),
    (
        ["reshard", "good.tfrecord", "-o", "r", "-n", "99999999999999999999"],
        USAGE,
        "not in the range 1<=x<=99999",
    ),
    (["repair", "numbers", "-o", "out.tfrecord"], FAILURE, "is a directory; repair reads one"),
    (["reshard", "missing.tfrecord", "-o", "r"], FAILURE, "missing.tfrecord"),
    (
        ["reshard", "good.tfrecord", "-o", "r", "--max-shard-bytes", "1.2.3MiB"],
        USAGE,
        "cannot read '1.2.3MiB' as a size",
    ),
    (["reshard", "good.tfrecord", "-o", "numbers/train"], FAILURE, "pass --overwrite"),
    (["convert", "table.csv", "o", "--image-size", "64x"], USAGE, "'64x' is not HxW"),
    (["convert", "table.csv", "o", "--image-size", "big"], USAGE, "'big' is not HxW"),
    (
        ["convert", "table.csv", "o", "--image-size", "20000x20000"],
        USAGE,
        "image_size 20000x20000 is more than the 67,108,864 pixels",
    ),
    (["convert", "table.csv", "o", "--schema", "{bad"], USAGE, "'--schema': not JSON"),
    (["convert", "table.csv", "o", "--schema", "[1]"], USAGE, "must be a JSON object"),
    (["convert", "table.csv", "o", "--option", "project"], USAGE, "'project' is not KEY=VALUE"),
    (["convert", "missing.csv", "o"], FAILURE, "missing.csv"),
    (["convert", "table.csv", "converted"], FAILURE, "pass --overwrite to replace it"),
    (["inspect", "numbers"], FAILURE, "have no 'image' feature"),
    (["inspect", "nowhere"], FAILURE, "no such directory: nowhere"),
    (["inspect", "converted", "-n", "0"], USAGE, "0 is not in the range x>=1"),
    (["demo", "-n", "0"], USAGE, "0 is not in the range 1<=x<=1000000"),
    (["demo", "-n", "99999999999999999999"], USAGE, "not in the range 1<=x<=1000000"),
    (["demo", "--dir", "good.tfrecord"], FAILURE, "a file is there, not a directory"),
    (["head", "-n", "99999999999999999999", "good.tfrecord"], USAGE, "'-n': 99999999999999999999"),
    (["convert", "header-only.csv", "o2"], FAILURE, "header-only.csv holds no rows to convert"),
    (["convert", "gzip.parquet", "o3"], FAILURE, "gzip.parquet is not a readable Parquet file"),
    (["reshard", "good.tfrecord", "-o", ""], FAILURE, "prefix '' names a directory"),
    (["reshard", "good.tfrecord", "-o", "here/"], FAILURE, "prefix 'here/' names a directory"),
    (["repair", "picture.png", "-o", "r.tfrecord"], FAILURE, "no intact record to salvage"),
    (
        ["repair", "good.tfrecord", "-o", "nodir/r.tfrecord"],
        FAILURE,
        "No such file or directory: nodir/r.tfrecord",
    ),
    (["stats"], USAGE, "give PATHS or --split SPLIT=PATH"),
    (["stats", "--split", "train"], USAGE, "expected SPLIT=PATH, not 'train'"),
    (["stats", "picture.png"], FAILURE, "not a TFRecord file (it starts with a PNG signature)"),
    (["stats", "good.tfrecord", "--baseline", "eval"], FAILURE, "baseline split 'eval'"),
    (["stats", "good.tfrecord", "--shift-threshold", "0"], USAGE, "0 is not in the range"),
    (["stats", "good.tfrecord", "--shift-threshold", "nan"], USAGE, "nan is not a finite"),
    (["schema", "--sample", "99999999999999999999", "good.tfrecord"], USAGE, "'--sample'"),
    (["index", "/dev/null"], FAILURE, "/dev/null is not a regular file"),
    (["count", "--compression", "gzip", "good.tfrecord"], FAILURE, "with --compression none"),
]


@pytest.mark.parametrize(("args", "code", "says"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_one_line_and_the_right_exit_code(work, args, code, says):
    done = tfrecordkit(*args, cwd=work)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    assert says in lines[0]
    for internal in ("Traceback", "Errno", "os error", "overwrite=True", 'File "'):
        assert internal not in done.stderr + done.stdout


def test_output_cut_short_by_its_reader_ends_quietly(work, tmp_path):
    # `tfrecordkit head ... | head -1`: the pipe closes, and no error is printed for it.
    many = tmp_path / "many.tfrecord"
    with tfr.RecordWriter(str(many)) as w:
        w.write_many(tfr.encode_examples({"x": np.arange(20_000, dtype=np.int64)}))
    script = Path(sys.executable).with_name("tfrecordkit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tfrecordkit.cli"]
    for args in (["head", "-n", "20000", str(many)], ["verify", *[str(many)] * 2000]):
        with subprocess.Popen(
            [*command, *args], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as shown:
            assert shown.stdout is not None and shown.stderr is not None
            shown.stdout.readline()
            shown.stdout.close()
            assert shown.wait(timeout=120) == 1
            assert shown.stderr.read() == b""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="named pipes as Linux has them")
def test_a_named_pipe_is_read_and_waiting_for_its_writer_can_be_stopped(work, tmp_path):
    import signal
    import time

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    script = Path(sys.executable).with_name("tfrecordkit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tfrecordkit.cli"]
    stops = ((signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted"))
    for sig, code, says in stops:
        with subprocess.Popen(
            [*command, "count", str(pipe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as waiting:
            # Once the command waits in open() for a writer to the pipe, it is stopped.
            for _ in range(600):
                with contextlib.suppress(OSError):
                    if Path(f"/proc/{waiting.pid}/wchan").read_text() == "wait_for_partner":
                        break
                time.sleep(0.1)
            waiting.send_signal(sig)
            out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == code, err
        assert err.decode().strip() == f"error: {says}" and out == b""
    # With a writer, the pipe is read as a file is.
    with subprocess.Popen(
        [*command, "count", str(pipe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as reading:
        with open(pipe, "wb") as writer:
            writer.write((work / "good.tfrecord").read_bytes())
        out, err = reading.communicate(timeout=60)
    assert reading.returncode == 0, err
    assert out.decode().split() == ["4"]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="an endless stream of zeros")
@pytest.mark.parametrize("args", [["verify"], ["repair", "-o", "kept.tfrecord"]])
def test_a_scan_through_endless_damage_can_be_stopped(tmp_path, args):
    import signal
    import time

    # /dev/zero is damage without end: the resync scan never finds a record, and a
    # signal still ends it, with nothing left behind.
    script = Path(sys.executable).with_name("tfrecordkit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tfrecordkit.cli"]
    for sig, code, says in (
        (signal.SIGTERM, 143, "terminated"),
        (signal.SIGINT, 130, "interrupted"),
    ):
        with subprocess.Popen(
            [*command, args[0], "/dev/zero", *args[1:]],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as scanning:
            time.sleep(3)
            scanning.send_signal(sig)
            _, err = scanning.communicate(timeout=60)
        assert scanning.returncode == code, err
        assert err.decode().strip().splitlines()[-1] == f"error: {says}"
        assert list(tmp_path.iterdir()) == []


def test_every_subcommand_has_a_bad_input_case():
    from tfrecordkit.cli import main

    covered = {args[0] for args, _, _ in CASES}
    assert set(main.commands) <= covered


def test_verify_and_repair_say_which_compression_a_file_looks_like(work, tmp_path):
    gz = tmp_path / "good.tfrecord.gz"
    with tfr.RecordWriter(str(gz), "gzip") as w:
        w.write_many(tfr.read_records(str(work / "good.tfrecord")))
    read_plain = tfrecordkit("verify", str(gz), "--compression", "none", cwd=work)
    assert read_plain.returncode == FAILURE
    assert "the file looks GZIP-compressed: read it with --compression gzip" in read_plain.stdout
    read_gzip = tfrecordkit("verify", "good.tfrecord", "--compression", "gzip", cwd=work)
    assert "the file looks uncompressed: read it with --compression none" in read_gzip.stdout
    kept = tmp_path / "kept.tfrecord"
    repaired = tfrecordkit("repair", str(gz), "-o", str(kept), "--compression", "none", cwd=work)
    assert repaired.returncode == FAILURE
    assert repaired.stderr.startswith("error: no intact record to salvage, nothing written: ")
    assert "read it with --compression gzip" in repaired.stderr
    assert not kept.exists()


def test_verify_reports_a_file_it_cannot_read_and_goes_on(work, monkeypatch):
    import tfrecordkit.cli as cli
    from click.testing import CliRunner

    real = cli.verify_files

    def refusing(paths, **kw):
        if paths[0].endswith("table.csv"):
            raise PermissionError(13, "Permission denied", paths[0])
        return real(paths, **kw)

    monkeypatch.setattr(cli, "verify_files", refusing)
    monkeypatch.chdir(work)
    done = CliRunner().invoke(cli.main, ["verify", "table.csv", "good.tfrecord"])
    assert done.exit_code == FAILURE
    assert done.output.splitlines() == [
        "ERROR    table.csv: Permission denied: table.csv",
        "ok       good.tfrecord: 4 good records",
        "total: 2 files (1 ok, 1 unreadable); 4 good records",
    ]


def test_verify_names_other_formats_and_totals(work):
    done = tfrecordkit("verify", "picture.png", "table.csv", "good.tfrecord", cwd=work)
    assert done.returncode == FAILURE
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        "INVALID  picture.png: not a TFRecord file (it starts with a PNG signature)",
        'INVALID  table.csv: not a TFRecord file (it starts with text: "split,image_uri,label")',
        "ok       good.tfrecord: 4 good records",
        "total: 3 files (1 ok, 2 not TFRecord); 4 good records",
    ]


def test_verify_total_counts_damage_and_lost_bytes(work, tmp_path):
    raw = bytearray((work / "good.tfrecord").read_bytes())
    raw[3] ^= 0xFF  # the length of record 0
    (tmp_path / "damaged.tfrecord").write_bytes(bytes(raw))
    (tmp_path / "good.tfrecord").write_bytes((work / "good.tfrecord").read_bytes())
    done = tfrecordkit("verify", "damaged.tfrecord", "good.tfrecord", cwd=tmp_path)
    assert done.returncode == FAILURE
    record = len(raw) // 4
    assert done.stdout.splitlines()[-1] == (
        f"total: 2 files (1 ok, 1 damaged); 7 good records, {record} bytes lost"
    )


def test_repair_lost_lines_give_the_record(work, tmp_path):
    raw = bytearray((work / "good.tfrecord").read_bytes())
    record = len(raw) // 4
    raw[record + 3] ^= 0xFF  # the length of record 1
    (tmp_path / "damaged.tfrecord").write_bytes(bytes(raw))
    done = tfrecordkit("repair", "damaged.tfrecord", "-o", "fixed.tfrecord", cwd=tmp_path)
    assert done.returncode == FAILURE
    lost = [line for line in done.stdout.splitlines() if line.startswith("lost")]
    assert len(lost) == 1
    assert lost[0].startswith(f"lost    record 1, bytes {record}-{2 * record}: CorruptRecordError")


def test_convert_says_where_the_discarded_rows_are(tmp_path):
    (tmp_path / "t.csv").write_text("split,image_uri,label\nTRAIN,missing.png,cat\n")
    done = tfrecordkit("convert", "t.csv", "out", cwd=tmp_path)
    where = os.path.join("out", "discarded.csv")
    assert f"1 discarded (the reasons are in {where})" in done.stdout
    # Nothing converted is a failure, however the rows went.
    assert done.returncode == 1
    assert done.stderr == f"error: no row could be converted; the reasons are in {where}\n"
    assert "missing.png" in (tmp_path / where).read_text()
    assert done.stdout.startswith("converted 0 rows into out; 1 discarded")
    # A table of no rows at all is one error line, with no summary of nothing before it.
    (tmp_path / "empty.csv").write_text("split,image_uri,label\n")
    empty = tfrecordkit("convert", "empty.csv", "out2", cwd=tmp_path)
    assert empty.returncode == 1 and empty.stdout == ""
    assert empty.stderr == "error: empty.csv holds no rows to convert\n"


def test_inspect_writes_beside_the_dataset(work):
    done = tfrecordkit("inspect", "converted", cwd=work)
    assert done.returncode == 0, done.stderr
    sheet = work / "converted" / "sheet-train.png"
    assert done.stdout.strip() == f"wrote {os.path.join('converted', 'sheet-train.png')}"
    assert sheet.read_bytes().startswith(b"\x89PNG")
    # The sheet is not taken for a shard of the split.
    assert tfr.count(str(work / "converted" / "train-*")) == 1


def test_image_size_takes_n_for_a_square(tmp_path, work):
    done = tfrecordkit("convert", str(work / "table.csv"), "sq", "--image-size", "4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    from PIL import Image

    parsed = next(iter(tfr.load(str(tmp_path / "sq"))))
    assert Image.open(io.BytesIO(parsed["image"])).size == (4, 4)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM ends a Windows process at once")
def test_a_terminated_command_leaves_no_temporary_files(tmp_path):
    import signal
    import time

    n = 2_000_000
    with tfr.RecordWriter(tmp_path / "in.tfrecord") as w:
        w.write_examples({"a": np.arange(n), "b": np.zeros(n, np.float32)})
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-m", "tfrecordkit", "reshard", "in.tfrecord", "-o", "out/s"]
    running = subprocess.Popen(
        [*command, "-n", "4"], cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    waited = time.monotonic() + 60
    # Terminated once it is writing: its shards are under their temporary names.
    while not any(".tmp-" in p.name for p in out.iterdir()):
        assert running.poll() is None, "reshard ended before it was terminated"
        assert time.monotonic() < waited
        time.sleep(0.002)
    running.send_signal(signal.SIGTERM)
    _, err = running.communicate(timeout=60)
    assert (running.returncode, err) == (143, "error: terminated\n")
    assert list(out.iterdir()) == []
