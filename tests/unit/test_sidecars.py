"""Sidecars are never read as data: index files, manifests and convert's side files that a
shell glob hands to a reader or a command are left out, with a note."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import tfrecordkit as tfr


@pytest.fixture
def dataset(tmp_path):
    manifest = tfr.write_dataset({"x": np.arange(50)}, tmp_path / "train", num_shards=2)
    (tmp_path / "schema.json").write_text("{}")
    (tmp_path / "discarded.csv").write_text("row,reason\n")
    # What the shell makes of `train-*` and of `*`: data, indexes, manifest, side files.
    return manifest, sorted(str(p) for p in tmp_path.iterdir())


def test_readers_leave_out_named_sidecars_and_say_so(dataset):
    manifest, everything = dataset
    assert len(everything) > len(manifest.files)
    with pytest.warns(tfr.SidecarSkippedWarning, match=r"skipped 5 sidecar file\(s\)"):
        assert tfr.count(everything) == 50
    with pytest.warns(tfr.SidecarSkippedWarning):
        assert len(list(tfr.read_records(everything))) == 50
    with pytest.warns(tfr.SidecarSkippedWarning):
        assert [r.ok for r in tfr.verify(everything)] == [True, True]
    with pytest.warns(tfr.SidecarSkippedWarning):
        assert len(tfr.Dataset.from_files(everything).files) == 2


def test_only_sidecars_is_an_error_naming_them(dataset):
    manifest, _ = dataset
    with pytest.raises(FileNotFoundError, match="only sidecars") as info:
        tfr.count([f + ".idx" for f in manifest.files])
    assert info.value.filename.endswith(".idx, " + manifest.files[1] + ".idx")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = "from tfrecordkit.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )


def test_commands_handed_a_shell_glob_skip_sidecars(dataset):
    _, everything = dataset
    verify = _cli("verify", *everything)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stdout.count("ok ") == 2 and "DAMAGED" not in verify.stdout
    assert verify.stderr.startswith("note: skipped 5 sidecar file(s)")
    assert len(verify.stderr.splitlines()) == 1
    count = _cli("count", *everything)
    assert count.returncode == 0, count.stderr
    assert count.stdout.splitlines()[-1].split() == ["50", "total"]


def test_tfds_metadata_beside_the_shards_is_a_sidecar(dataset, tmp_path):
    manifest, _ = dataset
    written = tfr.tfds.write_metadata(tmp_path)
    assert {p.rsplit("/", 1)[-1] for p in written} >= {"dataset_info.json", "features.json"}
    everything = sorted(str(p) for p in tmp_path.iterdir())
    with pytest.warns(tfr.SidecarSkippedWarning):
        assert tfr.count(everything) == manifest.records == 50
