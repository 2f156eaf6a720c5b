"""write_dataset to fsspec URLs (here the in-memory filesystem)."""

from __future__ import annotations

import os
import uuid

import fsspec
import numpy as np
import pytest
import tfrecordkit as tfr


@pytest.fixture
def bucket():
    fs = fsspec.filesystem("memory")
    root = f"/t-{uuid.uuid4().hex}"
    yield fs, root
    if fs.exists(root):
        fs.rm(root, recursive=True)


def read_remote(fs, url, tmp_path):
    local = tmp_path / url.rsplit("/", 1)[-1]
    local.write_bytes(fs.cat_file(url.split("://", 1)[1]))
    return list(tfr.read_records(local))


def test_remote_dataset_is_uploaded_with_manifest_last(bucket, tmp_path):
    fs, root = bucket
    n = 5000
    cols = {"i": np.arange(n), "name": [f"n{i}" for i in range(n)]}
    m = tfr.write_dataset(cols, f"memory://{root}/ds/train", num_shards=4, progress=False)
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls(f"{root}/ds", detail=False))
    assert names == sorted(
        [f"train-{k:05d}-of-00004.tfrecord" for k in range(4)]
        + [f"train-{k:05d}-of-00004.tfrecord.idx" for k in range(4)]
        + ["train.manifest.json"]
    )
    assert m.path == f"memory://{root}/ds/train.manifest.json"
    assert m.records == n and len(m.files) == 4
    records = [r for f in m.files for r in read_remote(fs, f, tmp_path)]
    assert [tfr.decode_example(r)["i"][0] for r in records] == list(range(n))
    for shard, f in zip(m.shards, m.files, strict=True):
        assert fs.size(f.split("://", 1)[1]) == shard.bytes


def test_remote_overwrite_and_refusal(bucket):
    fs, root = bucket
    url = f"memory://{root}/ds/x"
    tfr.write_dataset({"i": np.arange(100)}, url, num_shards=3, progress=False)
    with pytest.raises(FileExistsError):
        tfr.write_dataset({"i": np.arange(10)}, url, progress=False)
    m = tfr.write_dataset(
        {"i": np.arange(10)}, url, num_shards=1, compression="gzip", overwrite=True, progress=False
    )
    left = sorted(p.rsplit("/", 1)[-1] for p in fs.ls(f"{root}/ds", detail=False))
    assert left == ["x-00000-of-00001.tfrecord.gz", "x.manifest.json"]
    assert m.records == 10


def test_failed_remote_write_uploads_nothing(bucket):
    fs, root = bucket

    def rows():
        yield {"a": 1}
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tfr.write_dataset(rows(), f"memory://{root}/ds/y", num_shards=2, progress=False)
    assert not fs.exists(f"{root}/ds") or fs.ls(f"{root}/ds") == []


def test_remote_shards_are_uploaded_as_they_finish(bucket, tmp_path, monkeypatch):
    import tempfile

    from tfrecordkit.datasets import commit

    fs, root = bucket
    stage = tmp_path / "stage"
    stage.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(stage))
    staged: list[int] = []
    upload = commit.upload

    def spy(local, url, **kwargs):
        # Local disk holds the shard being uploaded (and its sidecar), never the dataset.
        staged.append(sum(len(files) for _, _, files in os.walk(stage)))
        return upload(local, url, **kwargs)

    monkeypatch.setattr(commit, "upload", spy)
    cols = {"i": np.arange(8000), "pad": [b"x" * 100] * 8000}
    m = tfr.write_dataset(cols, f"memory://{root}/ds/t", num_shards=8, workers=1, progress=False)
    assert m.records == 8000 and len(m.shards) == 8
    assert len(staged) == 16 and max(staged) <= 2
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls(f"{root}/ds", detail=False))
    assert all(".part-" not in n for n in names) and len(names) == 17
    assert not os.listdir(stage)


class Sized:
    """A sized iterable of rows that fails after ``fail_at`` of them."""

    def __init__(self, n: int, fail_at: int) -> None:
        self.n, self.fail_at = n, fail_at

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for i in range(self.n):
            if i == self.fail_at:
                raise RuntimeError("the source failed")
            yield {"i": i}


def test_a_remote_write_failing_after_uploads_leaves_nothing(bucket):
    fs, root = bucket
    with pytest.raises(RuntimeError, match="the source failed"):
        tfr.write_dataset(
            Sized(400, fail_at=250), f"memory://{root}/ds/z", num_shards=4, progress=False
        )
    assert not fs.exists(f"{root}/ds") or fs.ls(f"{root}/ds") == []


def test_a_sidecar_upload_failing_leaves_no_part(bucket, monkeypatch):
    from tfrecordkit.datasets import commit

    fs, root = bucket
    upload = commit.upload

    def refuse_sidecars(local, url, **kwargs):
        if url.endswith(".idx"):
            raise ConnectionError(f"{url}: the link went down")
        return upload(local, url, **kwargs)

    monkeypatch.setattr(commit, "upload", refuse_sidecars)
    with pytest.raises(ConnectionError):
        tfr.write_dataset(
            {"i": np.arange(100)}, f"memory://{root}/ds/s", num_shards=2, progress=False
        )
    # The shard's data had gone up before its sidecar failed: it is removed all the same.
    assert not fs.exists(f"{root}/ds") or fs.ls(f"{root}/ds") == []
