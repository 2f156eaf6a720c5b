"""Every reader, writer and command on ``s3://`` URLs, against moto's S3 server on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import tfrecordkit as tfr
from click.testing import CliRunner
from tfrecordkit import _core
from tfrecordkit.cli import main
from tfrecordkit.conversion import contact_sheet

N = 3000


def columns(n: int = N, offset: int = 0) -> dict:
    i = np.arange(offset, offset + n)
    return {"i": i, "score": (i * 0.5).astype(np.float32), "name": [f"n{k}" for k in i]}


@pytest.fixture
def dataset(s3, tmp_path):
    """A 3-shard dataset written to a fresh bucket, with the same data on local disk."""
    bucket = s3.bucket()
    url = f"s3://{bucket}/data/train"
    tfr.write_dataset(columns(), url, num_shards=3, progress=False, storage_options=s3.options)
    local = tfr.write_dataset(columns(), tmp_path / "local" / "train", num_shards=3, progress=False)
    return url, local


def test_written_dataset_is_the_same_bytes_as_on_local_disk(s3, dataset):
    url, local = dataset
    fs = s3.fs()
    remote = tfr.Manifest.load(url, storage_options=s3.options)
    assert remote.files == [f"{url}-{k:05d}-of-00003.tfrecord" for k in range(3)]
    assert [s.crc32c for s in remote.shards] == [s.crc32c for s in local.shards]
    for shard, path in zip(remote.shards, remote.files, strict=True):
        assert fs.size(path) == shard.bytes
        assert fs.exists(path + ".idx")


def test_readers_read_urls_like_local_files(s3, dataset):
    url, local = dataset
    so = s3.options
    pattern = url + "-*"
    assert list(tfr.read_records(pattern, storage_options=so)) == list(
        tfr.read_records(local.files)
    )
    batches = list(tfr.read_batches(pattern, 1000, storage_options=so))
    assert [len(b) for b in batches] == [1000, 1000, 1000]
    schema = {"i": tfr.FixedLen([], "int64"), "name": tfr.FixedLen([], "string")}
    parsed = list(tfr.read_examples(pattern, schema, 512, storage_options=so))
    assert np.concatenate([b["i"] for b in parsed]).tolist() == list(range(N))
    assert tfr.infer_schema(pattern, storage_options=so) == tfr.infer_schema(local.files)


def test_count_answers_from_the_manifest_and_idx_without_reading_shards(s3, dataset, monkeypatch):
    url, _ = dataset
    fs = s3.fs()
    assert tfr.count(url + "-*", storage_options=s3.options) == N

    def no_scan(*args, **kwargs):
        raise AssertionError("count read a shard")

    monkeypatch.setattr(_core, "count_records", no_scan)
    assert tfr.count(url + "-*", storage_options=s3.options) == N
    fs.rm_file(url + ".manifest.json")  # the .idx sidecars still answer
    assert tfr.count(url + "-*", storage_options=s3.options) == N
    monkeypatch.undo()
    for k in range(3):
        fs.rm_file(f"{url}-{k:05d}-of-00003.tfrecord.idx")
    assert tfr.count(url + "-*", storage_options=s3.options) == N  # scanned


def test_pipeline_with_inferred_schema_over_s3(s3, dataset):
    url, _ = dataset
    ds = (
        tfr.Dataset.list_files(url + "-*", shuffle=True, seed=3, storage_options=s3.options)
        .interleave(cycle_length=3)
        .parse()
        .shuffle(500, seed=1)
        .batch(256)
    )
    ids = np.concatenate([b["i"] for b in ds])
    assert sorted(ids.tolist()) == list(range(N))


def test_indexed_dataset_reads_by_ranges(s3, dataset):
    url, local = dataset
    schema = {"i": tfr.FixedLen([], "int64")}
    remote = tfr.IndexedDataset(url + "-*", schema, storage_options=s3.options)
    here = tfr.IndexedDataset(local.files, schema)
    assert len(remote) == len(here) == N
    picks = [5, N - 1, 1200, 7, 2999, 1000, 0]
    assert [int(remote[k]["i"]) for k in picks] == picks
    got = [int(e["i"]) for e in remote.__getitems__(picks)]
    assert got == [int(e["i"]) for e in here.__getitems__(picks)] == picks
    with pytest.raises(IndexError):
        remote[N]


def test_seekable_gzip_members_by_ranges(s3):
    bucket = s3.bucket()
    url = f"s3://{bucket}/gz/train"
    tfr.write_dataset(
        columns(),
        url,
        num_shards=2,
        compression="gzip",
        seekable=True,
        progress=False,
        storage_options=s3.options,
    )
    ds = tfr.IndexedDataset(
        url + "-*", {"i": tfr.FixedLen([], "int64")}, storage_options=s3.options
    )
    assert len(ds) == N
    assert [int(ds[k]["i"]) for k in (0, 1499, 1500, N - 1)] == [0, 1499, 1500, N - 1]


def test_build_index_on_s3_writes_the_sidecar_beside_the_file(s3, tmp_path):
    bucket = s3.bucket()
    local = tmp_path / "plain.tfrecord"
    with tfr.RecordWriter(local) as w:
        w.write_examples(columns(200))
    fs = s3.fs()
    url = f"s3://{bucket}/plain.tfrecord"
    fs.put_file(str(local), url)
    target = tfr.build_index(url, storage_options=s3.options)
    assert target == url + ".idx"
    tfr.build_index(local)
    assert fs.cat_file(target) == (tmp_path / "plain.tfrecord.idx").read_bytes()
    assert (
        tfr.RecordIndex(url, storage_options=s3.options)[199] == list(tfr.read_records(local))[199]
    )


def test_verify_and_repair_on_s3(s3, tmp_path):
    bucket = s3.bucket()
    local = tmp_path / "d.tfrecord"
    with tfr.RecordWriter(local) as w:
        w.write_examples(columns(100))
    data = bytearray(local.read_bytes())
    data[100] ^= 0xFF  # inside the data of an early record
    fs = s3.fs()
    url = f"s3://{bucket}/d.tfrecord"
    fs.pipe_file(url, bytes(data))
    (report,) = tfr.verify(url, storage_options=s3.options)
    assert not report.ok and report.records == 99 and report.path == url
    out = f"s3://{bucket}/fixed.tfrecord"
    fixed = tfr.repair(url, out, storage_options=s3.options)
    assert fixed.records == 99
    assert tfr.count(out, storage_options=s3.options) == 99
    with pytest.raises(FileExistsError):
        tfr.repair(url, out, storage_options=s3.options)


def test_missing_objects_and_empty_globs_name_the_url(s3):
    bucket = s3.bucket()
    missing = f"s3://{bucket}/nothing.tfrecord"
    with pytest.raises(FileNotFoundError) as info:
        list(tfr.read_records(missing, storage_options=s3.options))
    assert missing in str(info.value)
    with pytest.raises(FileNotFoundError, match="no files match"):
        tfr.Dataset.list_files(f"s3://{bucket}/x-*", storage_options=s3.options)
    with pytest.raises(FileNotFoundError) as info:
        tfr.IndexedDataset(missing, storage_options=s3.options)
    with pytest.raises(FileNotFoundError):
        tfr.count(missing, storage_options=s3.options)


def test_sidecars_named_by_a_listing_are_skipped(s3, dataset):
    url, _ = dataset
    named = [f"{url}-00000-of-00003.tfrecord", f"{url}-00000-of-00003.tfrecord.idx"]
    with pytest.warns(tfr.SidecarSkippedWarning, match="1 sidecar"):
        records = list(tfr.read_records(named, storage_options=s3.options))
    assert len(records) == 1000


def test_racing_writers_one_commits_the_other_raises(s3):
    bucket = s3.bucket()
    url = f"s3://{bucket}/race/train"
    start = threading.Barrier(2)
    outcome: dict[int, object] = {}

    def write(k: int) -> None:
        start.wait()
        try:
            outcome[k] = tfr.write_dataset(
                columns(20_000, offset=k * 100_000),
                url,
                num_shards=2 + k,
                progress=False,
                storage_options=s3.options,
            )
        except FileExistsError as err:
            outcome[k] = err

    threads = [threading.Thread(target=write, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [k for k, v in outcome.items() if isinstance(v, tfr.Manifest)]
    lost = [k for k, v in outcome.items() if isinstance(v, FileExistsError)]
    assert len(won) == 1 and len(lost) == 1, outcome
    manifest = tfr.Manifest.load(url, storage_options=s3.options)
    assert len(manifest.shards) == 2 + won[0]
    ids = [
        tfr.decode_example(r)["i"][0]
        for r in tfr.read_records(manifest.files, storage_options=s3.options)
    ]
    assert ids == list(range(won[0] * 100_000, won[0] * 100_000 + 20_000))
    assert not s3.fs().exists(url + ".writing")


def test_a_claim_left_by_a_killed_writer_is_reported_and_cleared_by_overwrite(s3):
    bucket = s3.bucket()
    url = f"s3://{bucket}/x/train"
    fs = s3.fs()
    fs.pipe_file(url + ".writing", b"{}")
    with pytest.raises(FileExistsError, match="another writer"):
        tfr.write_dataset(columns(10), url, progress=False, storage_options=s3.options)
    tfr.write_dataset(columns(10), url, overwrite=True, progress=False, storage_options=s3.options)
    assert tfr.count(url + "-*", storage_options=s3.options) == 10
    assert not fs.exists(url + ".writing")


def cli(s3, *args: str):
    opts = [f"--storage-option={k}={v}" for k, v in s3.options.items()]
    return CliRunner().invoke(main, [*opts, *args], catch_exceptions=False)


def test_cli_commands_on_s3(s3, dataset):
    url, _ = dataset
    pattern = url + "-*"
    result = cli(s3, "count", "--json", pattern)
    assert result.exit_code == 0 and json.loads(result.output)["total"] == N
    result = cli(s3, "verify", pattern)
    assert result.exit_code == 0 and result.output.count("ok ") == 3
    result = cli(s3, "head", "-n", "2", "--json", f"{url}-00000-of-00003.tfrecord")
    assert result.exit_code == 0
    assert [json.loads(line)["i"] for line in result.output.splitlines()] == [[0], [1]]
    result = cli(s3, "schema", "--json", pattern)
    assert result.exit_code == 0 and "score" in json.loads(result.output)
    out = url.replace("/data/", "/resharded/")
    result = cli(s3, "reshard", pattern, "-o", out, "-n", "2", "--json")
    assert result.exit_code == 0, result.output
    assert tfr.count(out + "-*", storage_options=s3.options) == N
    result = cli(s3, "index", f"{out}-00000-of-00002.tfrecord")
    assert result.exit_code == 0 and ".idx" in result.output


def test_cli_takes_fsspec_configuration_from_the_environment(s3, dataset):
    url, _ = dataset
    env = {
        **os.environ,
        "FSSPEC_S3_ENDPOINT_URL": s3.endpoint,
        "FSSPEC_S3_KEY": "testing",
        "FSSPEC_S3_SECRET": "testing",
    }
    done = subprocess.run(
        [sys.executable, "-m", "tfrecordkit.cli", "verify", url + "-*"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("ok ") == 3


def test_cli_bad_storage_option_is_a_usage_error(s3):
    result = CliRunner().invoke(main, ["--storage-option", "novalue", "count", "x"])
    assert result.exit_code == 2 and "KEY=VALUE" in result.output


def test_convert_from_and_to_s3_then_load_and_inspect(s3, tmp_path):
    from PIL import Image

    bucket = s3.bucket()
    fs = s3.fs()
    rows = ["split,image_uri,label"]
    for k in range(12):
        img = tmp_path / f"img{k}.png"
        Image.new("RGB", (16, 12), (20 * k, 0, 0)).save(img)
        fs.put_file(str(img), f"s3://{bucket}/images/img{k}.png")
        split = "TRAIN" if k < 8 else "VALIDATION"
        rows.append(f"{split},s3://{bucket}/images/img{k}.png,{'cat' if k % 2 else 'dog'}")
    rows.append(f"TRAIN,s3://{bucket}/images/missing.png,cat")
    fs.pipe_file(f"s3://{bucket}/table.csv", ("\n".join(rows) + "\n").encode())
    out = f"s3://{bucket}/out"
    summary = tfr.convert(
        f"s3://{bucket}/table.csv", out, progress=False, storage_options=s3.options
    )
    assert summary.rows == {"TRAIN": 8, "VALIDATION": 4} and summary.discarded == 1
    names = {p.rsplit("/", 1)[-1] for p in fs.ls(out)}
    assert {"schema.json", "labels.txt", "discarded.csv", "summary.json"} <= names
    assert "missing.png" in fs.cat_file(f"{out}/discarded.csv").decode()
    batch = next(iter(tfr.load(out, "train", storage_options=s3.options).batch(8)))
    assert sorted(batch["label"].tolist()) == [0] * 4 + [1] * 4
    sheet = contact_sheet(out, "validation", out=tmp_path / "sheet.png", storage_options=s3.options)
    with Image.open(sheet) as img:
        assert img.size[0] > 0


def test_stats_over_s3_match_local(s3, dataset, tmp_path):
    url, local = dataset
    remote = tfr.stats(url + "-*", storage_options=s3.options)
    here = tfr.stats(local.files)
    assert remote["files"] == [f"{url}-{k:05d}-of-00003.tfrecord" for k in range(3)]
    assert list(remote["splits"]) == ["train"]
    assert remote["records"] == N
    assert remote["features"] == here["features"]
    result = cli(s3, "stats", url + "-*", "--html", str(tmp_path / "r.html"))
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"3 files, {N:,} records, 3 features; splits: train")
    assert (tmp_path / "r.html").read_text().count("<svg class='plot'") == 3
