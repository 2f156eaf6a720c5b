"""Local paths as users write them: file:// URLs, and files out of reach."""

from __future__ import annotations

import os

import pytest
import tfrecordkit as tfr
from click.testing import CliRunner
from tfrecordkit.cli import main


def _file(path, n=5):
    with tfr.RecordWriter(path) as w:
        for i in range(n):
            w.write(tfr.encode_example({"x": [i]}))
    return path


def test_file_urls_read_and_write_local_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = _file(tmp_path / "a.tfrecord")
    url = f"file://{src}"
    assert tfr.count(url) == 5
    assert len(list(tfr.read_records(url))) == 5
    manifest = tfr.write_dataset(tfr.read_records(url), f"file://{tmp_path}/out/s", num_shards=2)
    assert manifest.records == 5 and tfr.count(str(tmp_path / "out" / "s-*")) == 5
    report = tfr.repair(url, f"file://{tmp_path}/fixed.tfrecord")
    assert report.records == 5 and tfr.count(str(tmp_path / "fixed.tfrecord")) == 5
    result = CliRunner().invoke(main, ["reshard", url, "-o", f"file://{tmp_path}/cli/s", "-n", "1"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cli" / "s-00000-of-00001.tfrecord").is_file()
    assert not (tmp_path / "file:").exists()


def test_a_file_out_of_reach_is_not_called_missing(tmp_path, monkeypatch):
    hidden = tmp_path / "locked"
    hidden.mkdir()
    path = _file(hidden / "a.tfrecord")
    if os.geteuid() == 0:
        # Root searches any directory: the refusal a user meets is made here instead.
        real_stat = os.stat

        def stat(p, *args, **kwargs):
            if os.fspath(p) == str(path):
                raise PermissionError(13, "Permission denied")
            return real_stat(p, *args, **kwargs)

        monkeypatch.setattr(os, "stat", stat)
    else:
        hidden.chmod(0)
    try:
        with pytest.raises(PermissionError) as caught:
            tfr.count(str(path))
        assert caught.value.filename == str(path)
        result = CliRunner().invoke(main, ["repair", str(path), "-o", str(tmp_path / "o")])
        assert result.exit_code == 1
        assert result.output == f"error: Permission denied: {path}\n"
    finally:
        hidden.chmod(0o755)


def test_repair_says_a_directory_is_a_directory(tmp_path):
    (tmp_path / "d.tfrecord").mkdir()
    with pytest.raises(IsADirectoryError, match="is a directory"):
        tfr.repair(tmp_path / "d.tfrecord", tmp_path / "o.tfrecord")
