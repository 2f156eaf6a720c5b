"""Pipelines over fsspec URLs: an in-memory filesystem and a real HTTP server."""

from __future__ import annotations

import functools
import http.server
import os
import threading

import fsspec
import pytest
import tfrecordkit as tfr


@pytest.fixture
def memory_bucket(shards):
    paths = shards([25, 0, 40], compression=None) + shards([30], name="zipped", compression="gzip")
    fs = fsspec.filesystem("memory")
    urls = []
    for p in paths:
        url = f"memory://bucket/{os.path.basename(p)}"
        with open(p, "rb") as src, fs.open(url, "wb") as dst:
            dst.write(src.read())
        urls.append(url)
    yield paths, urls
    fs.rm("memory://bucket", recursive=True)


def test_memory_urls_read_like_local_files(memory_bucket, helpers):
    paths, urls = memory_bucket
    local = list(tfr.Dataset.list_files(paths).interleave(cycle_length=2))
    remote = tfr.Dataset.list_files("memory://bucket/*.tfrecord*").interleave(cycle_length=2)
    assert remote.files == urls
    assert list(remote) == local
    batches = list(remote.parse(helpers.SCHEMA).shuffle(50, seed=1).batch(16))
    assert sorted(helpers.ids_of(batches)) == sorted(helpers.ids_of(local))


def test_damage_in_a_remote_file_names_the_url(memory_bucket):
    _, urls = memory_bucket
    fs = fsspec.filesystem("memory")
    data = bytearray(fs.cat(urls[0]))
    data[30] ^= 0xFF
    fs.pipe(urls[0], bytes(data))
    with pytest.raises(tfr.CorruptRecordError) as info:
        list(tfr.Dataset.from_files(urls[0]))
    assert info.value.path == urls[0] and info.value.offset == 0


@pytest.fixture
def http_server(tmp_path):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))

    class Quiet(handler.func):  # type: ignore[name-defined, misc]
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_urls_through_a_real_server(shards, helpers, http_server):
    paths = shards([120, 80, 33])
    urls = [f"{http_server}/{os.path.basename(p)}" for p in paths]
    ds = tfr.Dataset.from_files(urls)
    assert list(ds) == list(tfr.read_records(paths))
    parsed = (
        tfr.Dataset.list_files(urls, shuffle=True, seed=2)
        .interleave(cycle_length=3, deterministic=False)
        .parse(helpers.SCHEMA)
        .batch(25)
    )
    assert sorted(helpers.ids_of(list(parsed))) == list(range(233))
    missing = tfr.Dataset.from_files([f"{http_server}/nothing.tfrecord"])
    with pytest.raises(OSError, match=r"nothing\.tfrecord"):
        list(missing)
