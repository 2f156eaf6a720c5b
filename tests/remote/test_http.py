"""Reading over HTTP from a server that answers Range requests: streams in blocks, random
access by ranges (never the whole file), and typed errors for refusals and timeouts."""

from __future__ import annotations

import aiohttp
import numpy as np
import pytest
import tfrecordkit as tfr
from tfrecordkit.io.paths import REMOTE_BLOCK


@pytest.fixture
def served(range_server, tmp_path):
    """One large shard (about 3 blocks) with its .idx sidecar, served over HTTP."""
    n = 60_000
    payload = np.random.default_rng(0).bytes(200)
    rows = {"i": np.arange(n), "blob": [payload] * n}
    manifest = tfr.write_dataset(rows, range_server.root / "big", num_shards=1, progress=False)
    name = manifest.shards[0].file
    return range_server, name, n, manifest.files[0]


def test_a_large_file_streams_in_block_requests(served):
    server, name, _, local = served
    url = f"{server.url}/{name}"
    assert list(tfr.read_records(url)) == list(tfr.read_records(local))
    ranged = [h for path, h, _ in server.sent if path.endswith(name) and h]
    size = server.root.joinpath(name).stat().st_size
    assert size > 2 * REMOTE_BLOCK
    assert len(ranged) == -(-size // REMOTE_BLOCK)  # one request per block
    assert server.bytes_sent(name) == size


def test_random_access_fetches_only_the_records_asked_for(served):
    server, name, n, local = served
    ds = tfr.IndexedDataset(f"{server.url}/{name}")
    assert len(ds) == n
    server.sent.clear()
    picks = [n - 1, 0, 31_337, 17]
    want = tfr.IndexedDataset(local).__getitems__(picks)
    assert ds.__getitems__(picks) == want
    assert ds[31_337] == want[2]
    assert 0 < server.bytes_sent(name) <= 2 * sum(len(r) + 16 for r in want)


def test_a_refused_url_is_a_permission_error_naming_it(range_server):
    url = f"{range_server.url}/forbidden/x.tfrecord"
    with pytest.raises(PermissionError) as info:
        list(tfr.read_records(url))
    assert url in str(info.value)
    with pytest.raises(PermissionError):
        list(tfr.Dataset.from_files(url))


def test_a_missing_url_is_file_not_found_naming_it(range_server):
    url = f"{range_server.url}/nothing.tfrecord"
    with pytest.raises(FileNotFoundError) as info:
        tfr.count(url)
    assert url in str(info.value)


def test_a_stalled_server_is_a_timeout_naming_the_url(served):
    server, name, _, _ = served
    server.delay = 2.0
    url = f"{server.url}/slow/{name}"
    options = {"client_kwargs": {"timeout": aiohttp.ClientTimeout(total=0.3)}}
    with pytest.raises(TimeoutError) as info:
        list(tfr.read_records(url, storage_options=options))
    assert url in str(info.value)


def test_large_records_stream_whole_across_blocks(range_server):
    # Records of 64 KiB and more are read straight into their bytes, across block edges.
    rng = np.random.default_rng(3)
    records = [rng.bytes(n) for n in (70_000, 10, 3 * REMOTE_BLOCK + 5, 65_536, 1_000_001)]
    path = range_server.root / "large.tfrecord"
    with tfr.RecordWriter(path) as w:
        w.write_many(records)
    url = f"{range_server.url}/large.tfrecord"
    assert list(tfr.read_records(url)) == records
    assert [r for b in tfr.read_batches(url, 2) for r in b] == records


def test_a_storage_option_the_filesystem_does_not_take_is_not_a_missing_object(served):
    server, name, n, _ = served
    url = f"{server.url}/{name}"
    with pytest.raises(OSError, match="a storage option is not one its filesystem takes") as info:
        tfr.count(url, storage_options={"anon": True})
    assert not isinstance(info.value, FileNotFoundError) and url in str(info.value)
    assert tfr.count(url) == n


def test_urls_no_installed_filesystem_serves_say_so():
    with pytest.raises(ValueError, match=r"no filesystem serves bogus:// URLs"):
        tfr.count("bogus://bucket/x.tfrecord")
    # fsspec knows gs://, and names the package that serves it when it is not installed.
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"gs://bucket/x.tfrecord: .*gcsfs"):
            list(tfr.read_records("gs://bucket/x.tfrecord"))
