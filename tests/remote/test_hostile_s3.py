"""Datasets from strangers on object storage: a manifest or TFDS metadata in one bucket
can never lead a reader to another bucket, another scheme, or a local file."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tfrecordkit as tfr

ESCAPES = [
    ("../other/x.tfrecord", "path separator"),
    ("s3://another-bucket/x.tfrecord", "URL"),
    ("file:///etc/passwd", "URL"),
    ("/etc/passwd", "path separator"),
    ("..", "names a directory"),
]


@pytest.fixture
def remote_dataset(s3):
    bucket = s3.bucket()
    prefix = f"s3://{bucket}/data/train"
    tfr.write_dataset(
        {"x": np.arange(6)}, prefix, num_shards=2, progress=False, storage_options=s3.options
    )
    return prefix


@pytest.mark.parametrize(("name", "rule"), ESCAPES)
def test_a_remote_manifest_cannot_lead_outside_its_prefix(s3, remote_dataset, name, rule):
    fs = s3.fs()
    path = remote_dataset + ".manifest.json"
    manifest = json.loads(fs.cat_file(path))
    assert (
        tfr.Manifest.load(remote_dataset, storage_options=s3.options)
        .files[0]
        .startswith(remote_dataset.rsplit("/", 1)[0] + "/train-00000-of-00002")
    )
    manifest["shards"][1]["file"] = name
    fs.pipe_file(path, json.dumps(manifest).encode())
    with pytest.raises(tfr.UnsafePathError, match=rule) as info:
        tfr.Manifest.load(remote_dataset, storage_options=s3.options)
    assert info.value.path == path and "shard 1" in str(info.value)


def test_remote_tfds_metadata_cannot_lead_outside_its_prefix(s3):
    bucket = s3.bucket()
    root = f"s3://{bucket}/tfds/d/1.0.0"
    info = {
        "name": "d",
        "version": "1.0.0",
        "splits": [
            {"name": "train", "shardLengths": ["1"], "filepathTemplate": "s3://other/x"},
        ],
    }
    features = {
        "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
        "featuresDict": {
            "features": {
                "label": {
                    "pythonClassName": "tensorflow_datasets.core.features.tensor_feature.Tensor",
                    "tensor": {"shape": {}, "dtype": "int64", "encoding": "none"},
                }
            }
        },
    }
    fs = s3.fs()
    fs.pipe_file(f"{root}/dataset_info.json", json.dumps(info).encode())
    fs.pipe_file(f"{root}/features.json", json.dumps(features).encode())
    with pytest.raises(tfr.UnsafePathError, match="URL"):
        tfr.tfds.info(root, storage_options=s3.options)
    info["splits"][0]["filepathTemplate"] = "../../../{SPLIT}"
    fs.pipe_file(f"{root}/dataset_info.json", json.dumps(info).encode())
    with pytest.raises(tfr.UnsafePathError, match="path separator"):
        tfr.load(root, "train", storage_options=s3.options)
