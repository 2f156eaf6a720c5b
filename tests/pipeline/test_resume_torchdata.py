"""``to_torch()`` under torchdata's ``StatefulDataLoader``: a saved epoch resumes exactly,
in the main process and in each worker, through the iterator's own state (torchdata's
``Stateful`` protocol), never by torchdata's naive fast-forward."""

from __future__ import annotations

import io
import logging

import pytest
import tfrecordkit as tfr
import torch
from torch.utils.data import IterableDataset
from torchdata.stateful_dataloader import Stateful, StatefulDataLoader

FAST_FORWARD = "naively fast-forwarding"
LAYOUTS = {"files": [50, 31, 0, 77, 12, 40], "records": [203]}


def _pipeline(paths, schema, seed=4):
    return (
        tfr.Dataset.list_files(paths, shuffle=True, seed=3)
        .interleave(cycle_length=2, block_length=4)
        .parse(schema)
        .shuffle(40, seed=seed)
        .batch(8)
    )


def _ids(batches) -> list[list[int]]:
    return [b["id"].tolist() for b in batches]


def _loader(paths, schema, workers, **kwargs):
    train = _pipeline(paths, schema, **kwargs).to_torch()
    return train, StatefulDataLoader(train, batch_size=None, num_workers=workers)


def _checkpoint(state):
    """The state as a training checkpoint keeps it: through torch.save, plain types only."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_an_epoch_resumes_exactly_in_a_new_loader(shards, helpers, caplog, workers, layout):
    paths = shards(LAYOUTS[layout])
    reference, whole = _loader(paths, helpers.SCHEMA, workers)
    epochs = []
    for epoch in range(2):
        reference.set_epoch(epoch)
        epochs.append(_ids(whole))
    assert sorted(i for b in epochs[0] for i in b) == list(range(sum(LAYOUTS[layout])))

    _, interrupted = _loader(paths, helpers.SCHEMA, workers)
    batches = iter(interrupted)
    first = _ids(next(batches) for _ in range(5))
    state = _checkpoint(interrupted.state_dict())
    del batches, interrupted

    train, resumed = _loader(paths, helpers.SCHEMA, workers)  # a new pipeline, as after a restart
    resumed.load_state_dict(state)
    with caplog.at_level(logging.INFO):
        rest = _ids(resumed)
    assert first + rest == epochs[0]
    assert FAST_FORWARD not in caplog.text
    # The next epoch runs as it would have without the interruption.
    train.set_epoch(1)
    assert _ids(resumed) == epochs[1]


def test_the_state_is_saved_and_restored_by_the_iterator(shards, helpers, caplog):
    paths = shards([30, 30])
    _, loader = _loader(paths, helpers.SCHEMA, 0)
    batches = iter(loader)
    next(batches)
    state = loader.state_dict()
    saved = state["fetcher_state"]["dataset_iter_state"]
    assert saved["position"] == 1 and saved["epoch"] == 0 and saved["consumer"] == [1, 0]

    train = _pipeline(paths, helpers.SCHEMA).to_torch()
    it = iter(train)
    assert isinstance(it, Stateful) and it.state_dict()["position"] == 0
    it.load_state_dict(saved)
    assert it.state_dict() == saved  # restored, and not started yet
    assert [b["id"].tolist() for b in it] == _ids(batches)


class _Plain(IterableDataset):
    def __iter__(self):
        return iter(range(20))


def test_a_dataset_without_state_is_fast_forwarded_and_that_is_logged(caplog):
    # The check above means something only if torchdata's fallback is seen when it happens.
    loader = StatefulDataLoader(_Plain(), batch_size=None)
    batches = iter(loader)
    [next(batches) for _ in range(3)]
    resumed = StatefulDataLoader(_Plain(), batch_size=None)
    resumed.load_state_dict(loader.state_dict())
    with caplog.at_level(logging.INFO):
        assert list(resumed) == list(range(3, 20))
    assert FAST_FORWARD in caplog.text


def test_an_unseeded_shuffle_cannot_be_saved(shards, helpers):
    paths = shards([40, 40])
    unseeded = tfr.Dataset.from_files(paths).parse(helpers.SCHEMA).shuffle(20).batch(8)
    loader = StatefulDataLoader(unseeded.to_torch(), batch_size=None)
    batches = iter(loader)
    next(batches)
    with pytest.raises(ValueError, match="needs a seed for every shuffle"):
        loader.state_dict()
    # Workers save a state after every batch: there the state raises when it is loaded.
    loader = StatefulDataLoader(unseeded.to_torch(), batch_size=None, num_workers=2)
    batches = iter(loader)
    next(batches)
    state = loader.state_dict()
    del batches
    resumed = StatefulDataLoader(unseeded.to_torch(), batch_size=None, num_workers=2)
    resumed.load_state_dict(state)
    with pytest.raises(ValueError, match=r"cannot be resumed.*needs a seed for every shuffle"):
        list(resumed)


def test_a_state_resumes_only_its_own_pipeline_and_consumer(shards, helpers):
    paths = shards([30, 30])
    _, loader = _loader(paths, helpers.SCHEMA, 0)
    batches = iter(loader)
    next(batches)
    state = loader.state_dict()
    _, other = _loader(paths, helpers.SCHEMA, 0, seed=5)
    other.load_state_dict(state)
    with pytest.raises(ValueError, match="different pipeline"):
        list(other)
    ranked = StatefulDataLoader(
        _pipeline(paths, helpers.SCHEMA).to_torch(rank=1, world_size=2), batch_size=None
    )
    ranked.load_state_dict(state)
    with pytest.raises(ValueError, match=r"consumer 0 of 1.*consumer 1 of 2"):
        list(ranked)
