"""The PyTorch adapter: every record exactly once across DataLoader workers and ranks."""

from __future__ import annotations

import collections
import io
import os
import socket

import numpy as np
import pytest
import tfrecordkit as tfr
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader


def _pipeline(paths, schema):
    return (
        tfr.Dataset.list_files(paths, shuffle=True)
        .interleave(cycle_length=2, deterministic=False)
        .parse(schema)
        .shuffle(64)
        .batch(10)
    )


def _ids(batches) -> list[int]:
    return [int(i) for b in batches for i in b["id"]]


@pytest.mark.parametrize("counts", [[50, 31, 0, 77, 12], [203]])
def test_dataloader_workers_deliver_every_record_once(shards, helpers, counts):
    paths = shards(counts)
    ds = _pipeline(paths, helpers.SCHEMA).to_torch()
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    first = _ids(loader)
    assert collections.Counter(first) == collections.Counter(range(sum(counts)))
    ds.set_epoch(1)
    second = _ids(loader)
    assert sorted(second) == sorted(first) and second != first


def test_batches_arrive_as_tensors(shards, helpers):
    paths = shards([20])
    loader = DataLoader(
        tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).batch(8).to_torch(),
        batch_size=None,
        num_workers=2,
    )
    batches = list(loader)
    assert all(isinstance(b["id"], torch.Tensor) and b["x"].dtype == torch.float32 for b in batches)
    assert sorted(_ids(batches)) == list(range(20))
    assert isinstance(batches[0]["tokens"], tfr.Ragged)
    assert isinstance(batches[0]["name"], np.ndarray)


def test_map_style_indexed_dataset_with_distributed_sampler(shards, helpers):
    paths = shards([30, 25])
    for p in paths:
        tfr.build_index(p)
    data = tfr.IndexedDataset(paths, schema={"id": tfr.FixedLen([], "int64")})
    seen = collections.Counter()
    for rank in range(3):
        sampler = torch.utils.data.DistributedSampler(
            data, num_replicas=3, rank=rank, shuffle=True, seed=1, drop_last=False
        )
        loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=2)
        seen.update(int(i) for batch in loader for i in batch["id"])
    # DistributedSampler pads to a multiple of the ranks by repeating the first indices.
    assert set(seen) == set(range(55)) and sum(seen.values()) == 57


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank: int, world: int, port: int, paths: list[str], out_dir: str) -> None:
    from tfrecordkit import Schema

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        schema = Schema({"id": tfr.FixedLen([], "int64")})
        ds = _pipeline(paths, schema).to_torch()
        ids = _ids(DataLoader(ds, batch_size=None, num_workers=2))
        np.save(os.path.join(out_dir, f"rank{rank}.npy"), np.array(ids, dtype=np.int64))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("counts", [[40, 9, 33, 0, 21], [97]])
def test_distributed_ranks_times_workers_deliver_every_record_once(shards, tmp_path, counts):
    paths = shards(counts)
    out = tmp_path / "out"
    out.mkdir()
    mp.spawn(_rank_main, args=(2, _free_port(), paths, str(out)), nprocs=2, join=True)
    ids = np.concatenate([np.load(out / f"rank{r}.npy") for r in range(2)]).tolist()
    assert collections.Counter(ids) == collections.Counter(range(sum(counts)))


def test_explicit_ranks_split_like_a_process_group(shards, helpers):
    counts = [7, 30, 2]
    paths = shards(counts)
    seen = collections.Counter()
    for rank in range(3):
        ds = _pipeline(paths, helpers.SCHEMA).to_torch(rank=rank, world_size=3)
        seen.update(_ids(DataLoader(ds, batch_size=None, num_workers=2)))
    assert seen == collections.Counter(range(sum(counts)))
    with pytest.raises(ValueError, match="rank 3"):
        _pipeline(paths, helpers.SCHEMA).to_torch(rank=3, world_size=3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rank": 0, "world_size": 0}, "rank 0 is not in a world of 0"),
        ({"rank": -1, "world_size": 2}, "rank must be at least 0"),
        ({"rank": 1.5, "world_size": 3}, "rank must be a whole number"),
        ({"world_size": 2}, "pass rank and world_size together"),
        ({"rank": 1}, "pass rank and world_size together"),
        ({"epoch": -1}, "epoch must be at least 0"),
        ({"device": "nonsense"}, "device 'nonsense' is not one torch knows"),
    ],
)
def test_a_rank_world_or_device_that_cannot_be_is_refused_at_once(shards, helpers, kwargs, message):
    with pytest.raises(ValueError, match=message):
        _pipeline(shards([3]), helpers.SCHEMA).to_torch(**kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_a_gpu_that_is_not_there_is_refused_at_once(shards, helpers):
    with pytest.raises(ValueError, match="torch finds 0 CUDA devices"):
        _pipeline(shards([3]), helpers.SCHEMA).to_torch(device="cuda")


def _explicit_rank_main(rank: int, world: int, port: int, paths: list[str], out: str) -> None:
    from tfrecordkit import Schema

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        ds = _pipeline(paths, Schema({"id": tfr.FixedLen([], "int64")})).to_torch(
            rank=1, world_size=2
        )
        np.save(os.path.join(out, "ids.npy"), np.array(_ids(ds), dtype=np.int64))
    finally:
        dist.destroy_process_group()


def test_a_rank_given_wins_over_the_process_group(shards, tmp_path):
    paths = shards([9, 11, 6])
    mp.spawn(_explicit_rank_main, args=(1, _free_port(), paths, str(tmp_path)), nprocs=1)
    ids = np.load(tmp_path / "ids.npy").tolist()
    share = _pipeline(paths, {"id": tfr.FixedLen([], "int64")}).share(2, 1)
    assert sorted(ids) == sorted(_ids(share)) and len(ids) < 26


def test_set_epoch_reaches_workers_that_persist(shards, helpers):
    paths = shards([20, 30, 25])
    ds = _pipeline(paths, helpers.SCHEMA).to_torch()
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    orders = []
    for epoch in (0, 1, 0):
        ds.set_epoch(epoch)
        orders.append(_ids(loader))
    assert sorted(orders[0]) == sorted(orders[1]) == list(range(75))
    assert orders[0] != orders[1]
    assert ds.epoch == 0


def test_scalar_features_of_unbatched_elements_are_tensors(shards, helpers):
    paths = shards([3])
    first = next(iter(tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).to_torch()))
    assert isinstance(first["id"], torch.Tensor) and first["id"].shape == ()
    assert isinstance(first["name"], bytes)


@pytest.mark.parametrize("filename", [None, "cache.tfrecord"])
def test_a_cache_filled_before_splitting_is_not_replayed_by_workers(
    shards, helpers, tmp_path, filename
):
    paths = shards([30, 20, 10, 5])
    cache = None if filename is None else str(tmp_path / filename)
    ds = tfr.Dataset.list_files(paths).interleave().parse(helpers.SCHEMA).cache(cache).batch(4)
    assert sorted(_ids(ds)) == list(range(65))  # fills the cache in this process
    loader = DataLoader(ds.to_torch(), batch_size=None, num_workers=2)
    for _ in range(2):
        assert collections.Counter(_ids(loader)) == collections.Counter(range(65))


def _jpeg_shards(tmp_path, n=24):
    from PIL import Image

    rng = np.random.default_rng(0)
    paths = []
    for s in range(2):
        path = str(tmp_path / f"jpeg-{s}.tfrecord")
        with tfr.RecordWriter(path) as w:
            for i in range(s, n, 2):
                buf = io.BytesIO()
                pixels = rng.integers(0, 256, (40 + i, 50, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(buf, "JPEG")
                w.write(tfr.encode_example({"image": buf.getvalue(), "label": i % 3}))
        paths.append(path)
    return paths


def test_uint8_image_batches_feed_a_training_step(tmp_path):
    paths = _jpeg_shards(tmp_path)
    ds = (
        tfr.Dataset.list_files(paths, shuffle=True, seed=0)
        .interleave(cycle_length=2)
        .parse({"image": tfr.FixedLen([], "bytes"), "label": tfr.FixedLen([], "int64")})
        .decode_image("image", size=32, dtype="uint8", random_crop=True, random_flip=True)
        .batch(8, drop_remainder=True)
        .to_torch(device="cpu")
    )
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(4, 3),
    )
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    steps = 0
    for batch in DataLoader(ds, batch_size=None):
        images = batch["image"]
        assert images.dtype == torch.uint8 and images.shape == (8, 32, 32, 3)
        x = images.permute(0, 3, 1, 2).float().div_(255).sub_(mean)
        loss = torch.nn.functional.cross_entropy(model(x), batch["label"])
        model.zero_grad()
        loss.backward()
        # A plain SGD step: torch.optim imports torch._dynamo, whose triton import aborts
        # in a process that has loaded TensorFlow, as the compatibility tests do.
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
        steps += 1
    assert steps == 3


def test_gpu_handoff_is_for_the_main_process(tmp_path):
    paths = _jpeg_shards(tmp_path, 8)
    ds = (
        tfr.Dataset.from_files(paths)
        .parse({"image": tfr.FixedLen([], "bytes"), "label": tfr.FixedLen([], "int64")})
        .decode_image("image", size=16, dtype="uint8")
        .batch(4)
    )
    with pytest.raises(RuntimeError, match="num_workers=0"):
        list(DataLoader(ds.to_torch(device="cpu"), batch_size=None, num_workers=1))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="pin_memory needs a CUDA device"):
            ds.to_torch(pin_memory=True)
    else:  # pragma: no cover - only where a GPU is present
        batches = list(ds.to_torch(pin_memory=True, device="cuda"))
        assert batches[0]["image"].device.type == "cuda"


def test_sparse_features_become_sparse_coo_tensors(tmp_path):
    path = str(tmp_path / "bags.tfrecord")
    bags = [{"ids": [3, 1], "w": [0.5, 2.0]}, {"ids": [], "w": []}, {"ids": [4], "w": [1.5]}]
    with tfr.RecordWriter(path) as w:
        w.write_many(tfr.encode_example(b) for b in bags)
    schema = {"bag": tfr.SparseFeature("ids", "w", "float32", 6)}
    (batch,) = list(tfr.Dataset.from_files(path).parse(schema).batch(3).to_torch())
    bag = batch["bag"]
    assert bag.is_sparse and bag.shape == (3, 6)
    want = np.zeros((3, 6), np.float32)
    want[0, 3], want[0, 1], want[2, 4] = 0.5, 2.0, 1.5
    np.testing.assert_array_equal(bag.to_dense().numpy(), want)


def test_sparse_indices_outside_the_size_are_an_error_not_a_crash(tmp_path):
    path = str(tmp_path / "bad.tfrecord")
    with tfr.RecordWriter(path) as w:
        w.write(tfr.encode_example({"ids": [9], "w": [1.0]}))
    schema = {"bag": tfr.SparseFeature("ids", "w", "float32", 6)}
    with pytest.raises(ValueError, match=r"feature 'bag' is not a sparse tensor of shape \[1, 6\]"):
        list(tfr.Dataset.from_files(path).parse(schema).batch(1).to_torch())


def test_an_error_in_a_dataloader_worker_keeps_its_type_and_location(tmp_path):
    path = str(tmp_path / "bad.tfrecord")
    with tfr.RecordWriter(path) as w:
        w.write_many(tfr.encode_example({"a": i}) for i in range(10))
        w.write(tfr.encode_example({"b": 1}))
    ds = tfr.Dataset.from_files([path]).parse({"a": tfr.FixedLen([], "int64")}).batch(4)
    loader = DataLoader(ds.to_torch(), batch_size=None, num_workers=1)
    with pytest.raises(tfr.SchemaError) as info:
        list(loader)
    err = info.value
    assert (err.path, err.record_index, err.key) == (path, 10, "a")
    assert "DataLoader worker process 0" in str(err)
    assert str(err).count(f"({path}, record 10") == 1
