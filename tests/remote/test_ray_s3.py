"""tfr.ray.Sink and tfr.ray.read on an S3 server, from a real local Ray cluster."""

from __future__ import annotations

import numpy as np
import pytest
import tfrecordkit as tfr

pytestmark = pytest.mark.usefixtures("ray_cluster")

N = 300


def test_sink_to_s3_claims_uploads_and_commits(s3, tmp_path):
    shards = tfr.write_dataset({"id": np.arange(N)}, str(tmp_path / "train"), num_shards=3)
    bucket = s3.bucket()
    prefix = f"s3://{bucket}/data/train"
    ds = tfr.ray.read(shards.files).repartition(2)
    ds.write_datasink(tfr.ray.Sink(prefix, storage_options=s3.options))
    manifest = tfr.Manifest.load(prefix, storage_options=s3.options)
    assert manifest.records == N
    listed = sorted(p.rsplit("/", 1)[-1] for p in s3.fs().ls(f"{bucket}/data"))
    assert listed == [
        "train-00000-of-00002.tfrecord",
        "train-00000-of-00002.tfrecord.idx",
        "train-00001-of-00002.tfrecord",
        "train-00001-of-00002.tfrecord.idx",
        "train.manifest.json",
    ]
    back = tfr.ray.read(prefix + "-*-of-*.tfrecord", storage_options=s3.options)
    assert sorted(r["id"] for r in back.take_all()) == list(range(N))
    with pytest.raises(FileExistsError):
        ds.write_datasink(tfr.ray.Sink(prefix, storage_options=s3.options))
    assert not s3.fs().exists(f"{bucket}/data/train.writing")
