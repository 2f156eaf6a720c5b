"""``tfr.stats`` and ``tfrecordkit stats``: values from the one native pass, checked against
NumPy on the same data; splits, anomalies, the JSON contract and errors."""

from __future__ import annotations

import collections
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr
from PIL import Image

RNG = np.random.default_rng(7)
N = 5000


def _values(n: int) -> dict[str, list]:
    """Per-record lists: ints, floats with NaN / inf / zeros, categories, ragged lists."""
    floats = RNG.normal(3.0, 2.0, n).astype(np.float32)
    floats[::50] = np.nan
    floats[7::97] = np.inf
    floats[3::11] = 0.0
    return {
        "id": [[i] for i in range(n)],
        "score": [[float(v)] for v in floats],
        "label": [[int(v)] for v in RNG.integers(-3, 40, n)],
        "word": [
            [w]
            for w in RNG.choice(
                ["cat", "dog", "bird", "", "émeu"], n, p=[0.4, 0.3, 0.2, 0.05, 0.05]
            )
        ],
        "ragged": [list(RNG.integers(0, 1000, k)) for k in RNG.integers(0, 6, n)],
        "sometimes": [[1.5] if i % 3 == 0 else None for i in range(n)],
    }


def _write(path: Path, values: dict[str, list]) -> None:
    n = len(values["id"])
    with tfr.RecordWriter(str(path)) as w:
        for i in range(n):
            ex = {}
            for k, col in values.items():
                v = col[i]
                if v is None:
                    continue
                if k == "word":
                    v = [s.encode() for s in v]
                if k in ("score", "sometimes"):
                    v = np.asarray(v, np.float32)
                if k in ("id", "label", "ragged"):
                    v = np.asarray(v, np.int64)
                ex[k] = v
            w.write(tfr.encode_example(ex))


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, dict[str, list]]:
    root = tmp_path_factory.mktemp("stats")
    values = _values(N)
    _write(root / "train.tfrecord", values)
    return root, values


def _check_quantile(got: float, finite: np.ndarray, level: float) -> None:
    lo = np.quantile(finite, level, method="lower")
    hi = np.quantile(finite, level, method="higher")
    slack = 0.011 * max(abs(lo), abs(hi)) + 1e-9
    assert lo - slack <= got <= hi + slack, (level, got, lo, hi)


def test_numbers_match_numpy(data) -> None:
    root, values = data
    report = tfr.stats(str(root / "train.tfrecord"))
    assert report["records"] == N
    for name in ("score", "label", "ragged", "id"):
        col = np.concatenate([np.asarray(v, np.float64) for v in values[name]])
        n = report["features"][name]["numbers"]
        finite = col[np.isfinite(col)]
        assert n["count"] == finite.size
        assert n["nan"] == int(np.isnan(col).sum())
        assert n["infinite"] == int(np.isinf(col).sum())
        assert n["zeros"] == int((col == 0).sum())
        assert n["min"] == col[~np.isnan(col)].min() and n["max"] == col[~np.isnan(col)].max()
        assert n["mean"] == pytest.approx(finite.mean(), rel=1e-9, abs=1e-9)
        assert n["std"] == pytest.approx(finite.std(), rel=1e-9)
        assert n["integers"] == (name != "score")
        for key, got in n["quantiles"].items():
            level = float(key[1:]) / 100
            _check_quantile(got, finite, level)
            if np.unique(finite).size <= 1024:  # counted exactly: NumPy's "lower" quantile
                assert got == np.quantile(finite, level, method="lower"), (name, key)
            if n["integers"]:
                assert got == int(got)
        hist = n["histogram"]
        assert sum(c for *_, c in hist) == pytest.approx(finite.size, abs=len(hist))
        assert hist[0][0] == finite.min() and hist[-1][1] == finite.max()


def test_presence_kinds_and_exact_list_lengths(data) -> None:
    root, values = data
    f = tfr.stats(str(root / "train.tfrecord"))["features"]
    assert f["sometimes"]["present"] == (N + 2) // 3
    assert f["sometimes"]["missing"] == N - (N + 2) // 3
    assert f["ragged"]["kinds"] == {"int64": N}
    lengths = collections.Counter(len(v) for v in values["ragged"])
    assert f["ragged"]["list_lengths"] == sorted([k, v] for k, v in lengths.items())
    assert f["ragged"]["values"] == sum(len(v) for v in values["ragged"])
    assert list(f) == sorted(values)  # features in name order


def test_bytes_top_values_distinct_and_lengths(data) -> None:
    root, values = data
    b = tfr.stats(str(root / "train.tfrecord"), top=3)["features"]["word"]["bytes"]
    words = [w[0] for w in values["word"]]
    counts = collections.Counter(words)
    assert b["distinct"] == len(counts) and b["distinct_exact"]
    assert [(t["value"], t["count"]) for t in b["top"]] == counts.most_common(3)
    lengths = [len(w.encode()) for w in words]
    assert (b["min_length"], b["max_length"]) == (min(lengths), max(lengths))
    assert b["mean_length"] == pytest.approx(np.mean(lengths))
    # Power-of-two buckets, both ends inclusive, holding every value.
    assert sum(c for *_, c in b["length_histogram"]) == N
    for lo, hi, c in b["length_histogram"]:
        assert c == sum(lo <= n <= hi for n in lengths)


def test_bytes_that_are_not_text_show_as_hex(tmp_path) -> None:
    path = tmp_path / "raw.tfrecord"
    with tfr.RecordWriter(str(path)) as w:
        for _ in range(5):
            w.write(tfr.encode_example({"blob": [b"\xff\xfe" + bytes(100)]}))
    (t,) = tfr.stats(str(path))["features"]["blob"]["bytes"]["top"]
    assert t["value"] is None and t["hex"].startswith("fffe")
    assert t["count"] == 5 and t["length"] == 102 and t["truncated"]


def _image(fmt: str, size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (10, 200, 30)).save(buf, format=fmt)
    return buf.getvalue()


def test_image_formats_and_sizes_from_headers(tmp_path) -> None:
    path = tmp_path / "images.tfrecord"
    made = [("JPEG", (64, 48))] * 3 + [("PNG", (17, 9))] * 2 + [("WEBP", (33, 20))]
    with tfr.RecordWriter(str(path)) as w:
        for fmt, size in made:
            w.write(tfr.encode_example({"image": [_image(fmt, size)]}))
        w.write(tfr.encode_example({"image": [b"\xff\xd8\xff" + bytes(20)]}))
    i = tfr.stats(str(path))["features"]["image"]["bytes"]["images"]
    assert i["formats"] == {"jpeg": 4, "png": 2, "webp": 1}
    assert i["undecodable"] == 1
    assert i["sizes"] == [[64, 48, 3], [17, 9, 2], [33, 20, 1]]


def _shards(root: Path, split: str, shift: float, extra: bool, cats: list[str]) -> None:
    for k in range(2):
        with tfr.RecordWriter(str(root / f"{split}-{k:05d}-of-00002.tfrecord")) as w:
            for i in range(2000):
                ex = {
                    "x": np.float32([RNG.normal(shift, 1.0)]),
                    "c": [cats[i % len(cats)].encode()],
                }
                if extra:
                    ex["extra"] = np.int64([i])
                w.write(tfr.encode_example(ex))


def test_splits_from_names_and_anomalies(tmp_path) -> None:
    _shards(tmp_path, "train", 0.0, True, ["a", "b"])
    _shards(tmp_path, "validation", 0.0, True, ["a", "b"])
    _shards(tmp_path, "test", 4.0, False, ["a", "z"])
    report = tfr.stats(str(tmp_path / "*.tfrecord"))
    assert list(report["splits"]) == ["test", "train", "validation"]
    assert report["baseline"] == "train"
    assert report["splits"]["test"]["records"] == 4000
    assert len(report["splits"]["train"]["files"]) == 2
    found = {(a["kind"], a["feature"], a["split"]) for a in report.anomalies}
    assert found == {
        ("missing_in_split", "extra", "test"),
        ("distribution_shift", "x", "test"),
        ("distribution_shift", "c", "test"),
        ("unseen_category", "c", "test"),
    }
    unseen = next(a for a in report.anomalies if a["kind"] == "unseen_category")
    assert unseen["value"] == 2000 and '"z"' in unseen["message"]
    # The whole and its parts agree.
    per_split = sum(s["features"]["x"]["numbers"]["count"] for s in report["splits"].values())
    assert report["features"]["x"]["numbers"]["count"] == per_split == 12000

    mapping = tfr.stats(
        splits={"old": str(tmp_path / "train-*"), "new": str(tmp_path / "test-*")},
        baseline="new",
    )
    assert mapping["baseline"] == "new"
    assert {(a["kind"], a["split"]) for a in mapping.anomalies} >= {("new_in_split", "old")}


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("train-00000-of-00004.tfrecord", "train"),
        ("data/validation-00003-of-00010.tfrecord.gz", "validation"),
        ("mnist-train.tfrecord-00000-of-00001", "train"),
        ("s3://bucket/test.tfrecord", "test"),
        ("my-data-eval-00001-of-00002.tfrecord", "eval"),
    ],
)
def test_split_names(name: str, split: str) -> None:
    assert tfr.statistics.split_of(name) == split


def test_json_is_pure_json_with_null_for_non_finite(tmp_path) -> None:
    path = tmp_path / "nan.tfrecord"
    with tfr.RecordWriter(str(path)) as w:
        for _ in range(3):
            w.write(tfr.encode_example({"f": np.float32([np.nan])}))
    out = subprocess.run(
        [sys.executable, "-m", "tfrecordkit", "stats", str(path), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "NaN" not in out.stdout
    report = json.loads(out.stdout)
    n = report["features"]["f"]["numbers"]
    assert n["nan"] == 3 and n["count"] == 0
    assert n["mean"] is None and n["min"] is None and n["quantiles"]["p50"] is None
    assert report["format"] == "tfrecordkit.stats/1"


def test_cli_summary_and_html(data, tmp_path) -> None:
    root, _ = data
    html = tmp_path / "report.html"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfrecordkit",
            "stats",
            str(root / "*.tfrecord"),
            "--html",
            str(html),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.splitlines()[0] == f"1 files, {N:,} records, 6 features; splits: train ({N:,})"
    assert "  word " in out and "top 'cat'" in out
    page = html.read_text()
    assert page.count("<svg class='plot'") == 6
    assert "http://" not in page and "https://" not in page and "<script" not in page


def test_cli_html_never_replaces_a_file_unasked_nor_an_input(data, tmp_path) -> None:
    from click.testing import CliRunner
    from tfrecordkit.cli import main

    root, _ = data
    shard = root / "train.tfrecord"
    before = shard.read_bytes()
    html = tmp_path / "report.html"
    html.write_text("someone's notes")
    run = CliRunner().invoke
    taken = run(main, ["stats", str(shard), "--html", str(html)])
    assert taken.exit_code == 1
    assert taken.output == f"error: a file is there already; pass --overwrite: {html}\n"
    assert html.read_text() == "someone's notes"
    assert run(main, ["stats", str(shard), "--html", str(html), "--overwrite"]).exit_code == 0
    assert "<svg class='plot'" in html.read_text()
    # An input, by name or by the glob that reads it, is refused even with --overwrite.
    for given in (str(shard), str(root / "*.tfrecord")):
        refused = run(main, ["stats", given, "--html", str(shard), "--overwrite"])
        assert refused.exit_code == 2 and "is one of the files read" in refused.output
    assert shard.read_bytes() == before
    # A new report in the folder the glob reads replaces nothing: it is written.
    beside = root / "report-new.html"
    assert run(main, ["stats", str(root / "*"), "--html", str(beside)]).exit_code == 0
    assert "<svg class='plot'" in beside.read_text()
    beside.unlink()
    # A directory that is a file: the error names the report, not a temporary beside it.
    inside = run(main, ["stats", str(shard), "--html", str(shard / "r.html")])
    assert inside.exit_code == 1
    assert inside.output == f"error: Not a directory: {shard / 'r.html'}\n"


def test_damage_is_an_error_naming_the_file(data, tmp_path) -> None:
    root, _ = data
    bad = tmp_path / "bad.tfrecord"
    raw = bytearray((root / "train.tfrecord").read_bytes())
    raw[5000] ^= 0xFF
    bad.write_bytes(bytes(raw))
    with pytest.raises(tfr.DataLossError) as err:
        tfr.stats(str(bad))
    assert str(bad) in str(err.value)

    notex = tmp_path / "notex.tfrecord"
    with tfr.RecordWriter(str(notex)) as w:
        w.write(tfr.encode_example({"a": np.int64([1])}))
        w.write(b"\x0a\x05\x0a\x03\x0a\x01")
    with pytest.raises(tfr.ExampleDecodeError) as err:
        tfr.stats(str(notex))
    assert str(notex) in str(err.value) and "record 1" in str(err.value)

    out = subprocess.run(
        [sys.executable, "-m", "tfrecordkit", "stats", str(notex)], capture_output=True, text=True
    )
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("error: ")


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="either paths or splits"):
        tfr.stats()
    with pytest.raises(ValueError, match="baseline split 'nope'"):
        tfr.stats(splits={"a": []}, baseline="nope")


def test_empty_and_gzip_files(tmp_path) -> None:
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    report = tfr.stats(str(empty))
    assert report["records"] == 0 and report["features"] == {}
    assert "0 records" in report.summary()
    gz = tmp_path / "data.tfrecord.gz"
    with tfr.RecordWriter(str(gz), compression="gzip") as w:
        for i in range(100):
            w.write(tfr.encode_example({"v": np.int64([i])}))
    n = tfr.stats(str(gz))["features"]["v"]["numbers"]
    assert (n["count"], n["min"], n["max"], n["mean"]) == (100, 0, 99, 49.5)
    assert not math.isnan(n["std"])
