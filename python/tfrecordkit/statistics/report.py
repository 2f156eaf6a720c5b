"""``tfr.stats``: what is in a set of TFRecord files, per feature and per split, in one
streaming native pass."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .. import _core
from ..datasets.writer import Progress
from ..io.options import check_count
from ..io.paths import Paths, StorageOptions, basename, expand_paths, opener_for, write_file

#: The report's format name, written as its ``"format"`` field.
STATS_FORMAT = "tfrecordkit.stats/1"
#: Records counted per native step between progress updates.
_STEP = 1 << 18
_SHARD = re.compile(r"^(?P<stem>.+?)-\d+-of-\d+")
_EXTENSIONS = (".gz", ".zz", ".zlib", ".tfrecord", ".tfrecords", ".tfr")


def split_of(path: str) -> str:
    """The split a file belongs to, from its name.

    ``train-00000-of-00004.tfrecord`` and TFDS's ``mnist-train.tfrecord-00000-of-00001``
    are ``train``; a file not named as a shard is its own split, named by its stem
    (``test.tfrecord`` is ``test``).

    >>> split_of("data/validation-00003-of-00010.tfrecord.gz")
    'validation'
    """
    name = basename(path)
    m = _SHARD.match(name)
    stem = m.group("stem") if m else name
    while stem.endswith(_EXTENSIONS):
        stem = stem[: stem.rindex(".")]
    if m and "-" in stem:
        stem = stem.rsplit("-", 1)[1]
    return stem or name


def _group(files: list[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for f in files:
        groups.setdefault(split_of(f), []).append(f)
    return groups


def _finite(x: Any) -> Any:
    """``x`` with every non-finite float made ``None`` (JSON has no NaN or infinity)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def _quantile_name(level: float) -> str:
    return f"p{level * 100:g}"


def _top_value(sample: bytes, length: int, count: int) -> dict[str, Any]:
    out: dict[str, Any] = {"count": count, "length": length, "truncated": length > len(sample)}
    try:
        out["value"] = sample.decode("utf-8")
    except UnicodeDecodeError:
        out["value"] = None
        out["hex"] = sample.hex()
    return out


def _feature(raw: dict[str, Any]) -> dict[str, Any]:
    out = dict(raw)
    out["list_lengths"] = [list(p) for p in raw["list_lengths"]]
    if "numbers" in raw:
        n = dict(raw["numbers"])
        n["quantiles"] = {_quantile_name(level): v for level, v in n["quantiles"]}
        n["histogram"] = [list(b) for b in n["histogram"]]
        out["numbers"] = n
    if "bytes" in raw:
        b = dict(raw["bytes"])
        b["top"] = [_top_value(*t) for t in b["top"]]
        b["length_histogram"] = [list(h) for h in b["length_histogram"]]
        if "images" in b:
            b["images"] = dict(b["images"], sizes=[list(s) for s in b["images"]["sizes"]])
        out["bytes"] = b
    return out


def _split(raw: dict[str, Any], files: list[str]) -> dict[str, Any]:
    return {
        "files": files,
        "records": raw["records"],
        "uncounted_features": raw["uncounted_features"],
        "features": {name: _feature(f) for name, f in raw["features"].items()},
    }


class StatsReport(Mapping[str, Any]):
    """The statistics :func:`stats` computed: a read-only mapping in the documented JSON
    layout (``report["features"]["age"]["numbers"]["p50"]`` and so on), which can also be
    written as JSON or as a self-contained HTML report."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    @property
    def anomalies(self) -> list[dict[str, Any]]:
        """The differences found between splits (empty with one split)."""
        return list(self._data["anomalies"])

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON values: non-finite numbers become ``None``."""
        return _finite(self._data)

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text (``null`` for non-finite numbers)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def to_html(
        self,
        path: str | os.PathLike[str] | None = None,
        storage_options: StorageOptions = None,
        *,
        overwrite: bool = True,
    ) -> str:
        """The report as one self-contained HTML page (inline SVG plots, no network), also
        written to ``path`` (a local path or a URL) when given: whole, or not at all.
        Without ``overwrite``, a file already at ``path`` is a ``FileExistsError``."""
        from .html import render

        page = render(self.to_dict())
        if path is not None:
            write_file(os.fspath(path), page, storage_options, replace=overwrite)
        return page

    def summary(self) -> str:
        """A short text summary: one line per feature, then the anomalies."""
        from .text import summary

        return summary(self.to_dict())

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        d = self._data
        return (
            f"StatsReport(files={len(d['files'])}, records={d['records']}, "
            f"features={len(d['features'])}, splits={list(d['splits'])})"
        )


def stats(
    paths: Paths | None = None,
    *,
    splits: Mapping[str, Paths] | None = None,
    compression: str | None = "auto",
    storage_options: StorageOptions = None,
    baseline: str | None = None,
    shift_threshold: float = 0.1,
    top: int = 10,
    threads: int = 0,
    progress: bool = False,
) -> StatsReport:
    """Statistics of the ``tf.train.Example`` records in TFRecord files, in one streaming
    native pass with bounded memory, however many records there are.

    For each feature: presence and missing counts, list kinds, exact list-length counts;
    for numbers min, max, mean, std, zeros, NaNs, infinities and quantiles (``p0`` ...
    ``p100``, from a mergeable sketch within 1% of the true value); for bytes a
    distinct-count estimate, the ``top`` most frequent values and a length histogram; for
    encoded images (JPEG, PNG, WebP) their formats and sizes, from their headers.

    The same per split: by file name (``train-00000-of-00004.tfrecord`` is in ``train``;
    see :func:`split_of`), or as given in ``splits`` (``{"train": paths, "test": paths}``).
    With more than one split, each is checked against ``baseline`` (default ``train``, else
    the first): a feature missing from one of them, a change of kind, a distribution shift
    past ``shift_threshold`` (Jensen-Shannon divergence for numbers, L-infinity distance of
    value frequencies for bytes), or a category the baseline never saw.

    ``paths`` are local paths or URLs, globs or directories of shards, as for
    :func:`read_records`; compression is detected unless given. A damaged record is an
    error naming its file and offset (or record and feature). ``progress`` shows a bar on a
    terminal.

    >>> report = tfr.stats("data/")                          # doctest: +SKIP
    >>> report["features"]["label"]["numbers"]["quantiles"]["p50"]  # doctest: +SKIP
    >>> report.to_html("report.html")                        # doctest: +SKIP
    """
    if (paths is None) == (splits is None):
        raise ValueError("give either paths or splits, not both or neither")
    if splits is not None:
        groups = {
            str(name): expand_paths(p, storage_options=storage_options)
            for name, p in splits.items()
        }
    else:
        assert paths is not None
        groups = _group(expand_paths(paths, storage_options=storage_options))
    if baseline is not None and baseline not in groups:
        raise ValueError(f"baseline split {baseline!r} is not one of the splits: {list(groups)}")
    if not 0 < shift_threshold:
        raise ValueError(f"shift_threshold must be positive, not {shift_threshold!r}")
    check_count("top", top, 0, high=1 << 20)
    check_count("threads", threads, 0, high=1024)
    files = [f for group in groups.values() for f in group]
    opener = opener_for(files, storage_options)
    native = _core.StatsPass(list(groups.items()), compression, threads, opener)
    bar = Progress(progress, None, "stats", "records")
    try:
        while not native.done:
            bar.update(native.step(_STEP))
    finally:
        bar.close()
    raw = native.report(baseline, shift_threshold, top)
    total = _split(raw["total"], files)
    data: dict[str, Any] = {
        "format": STATS_FORMAT,
        "files": files,
        "records": total["records"],
        "uncounted_features": total["uncounted_features"],
        "features": total["features"],
        "splits": {s["name"]: _split(s, groups[s["name"]]) for s in raw["splits"]},
        "baseline": raw["baseline"],
        "anomalies": raw["anomalies"],
        "settings": {
            "relative_accuracy": 0.01,
            "shift_threshold": shift_threshold,
            "top": top,
        },
    }
    return StatsReport(data)
