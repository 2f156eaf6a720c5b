"""Fuzzes the loaders of a dataset's sidecars with arbitrary JSON: the manifest
(``Manifest.load``), ``schema.json`` (``Schema.from_json``) and TFDS's ``dataset_info.json``
and ``features.json`` (``tfr.tfds.info``), each followed by a parse of the dataset's one
real shard with whatever schema loaded.

Documents are valid sidecars mutated at random (values replaced by hostile ones: absurd
numbers, path escapes, format fields, deep nesting), or random JSON. The only outcomes
allowed are a load and parse that work, or an error of tfrecordkit's hierarchy
(``TFRecordError``) or the operating system's (``OSError``: a named shard that is not
there). Anything else (a ``KeyError``, a ``TypeError``, a ``PanicException``) is a bug: the
document is printed and the run fails.

    python scripts/fuzz_sidecars.py --seconds 20
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import tfrecordkit as tfr
from tfrecordkit.schema.features import _spec_to_dict

HOSTILE: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    2**63,
    2**64,
    -(2**63),
    10**30,
    1e308,
    -0.5,
    "",
    ".",
    "..",
    "../x",
    "/etc/passwd",
    "s3://other/x",
    "file:///etc/passwd",
    "C:x",
    "a\\b",
    "x\x00y",
    "\u202e",
    "{SPLIT.__class__}",
    "{0}",
    "{DATASET}",
    "{SHARD_X_OF_Y}",
    "fixed",
    "var",
    "sequence",
    "sparse",
    "ragged",
    "int64",
    "float32",
    "bytes",
    "complex",
    "tensorfl0w",
    "1e9",
    "-1",
    "999999999999999999999",
    "RowSplits",
    "UniformRowLength",
    [],
    {},
    [2**31, 2**31],
    [-1],
    ["1"],
    [[]],
    {"base64": ["!!"]},
    {"base64": 5},
]


def random_json(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth > 4 or pick < 0.5:
        return copy.deepcopy(rng.choice(HOSTILE))
    if pick < 0.75:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["kind", "dtype", "shape", "default", "file", "name", "x", "shards", "splits"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randrange(4))}


def mutate(doc: Any, rng: random.Random) -> Any:
    """``doc`` with one to four places changed: a value replaced, a key dropped, a list
    emptied or repeated, or the whole nested very deep."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.randrange(1, 5)):
        places: list[tuple[Any, Any]] = []

        def walk(node: Any, places: list[tuple[Any, Any]] = places) -> None:
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in list(items):
                places.append((node, k))
                if isinstance(v, (dict, list)):
                    walk(v)

        if isinstance(doc, (dict, list)):
            walk(doc)
        if not places or rng.random() < 0.03:
            return random_json(rng)
        node, key = rng.choice(places)
        action = rng.random()
        if action < 0.6:
            node[key] = random_json(rng)
        elif action < 0.75 and isinstance(node, dict):
            del node[key]
        elif action < 0.85 and isinstance(node[key], list):
            node[key] = node[key] * rng.choice([0, 2, 50])
        elif action < 0.9:
            node[key] = json.loads('{"a": ' * 200 + "1" + "}" * 200)
        else:
            node[key] = str(node[key])
    return doc


def valid_sidecars(root: Path) -> dict[str, Any]:
    """Valid sidecars of a small dataset written under ``root``."""
    data = root / "data"
    data.mkdir()
    columns = {
        "label": np.arange(8) % 3,
        "x": np.arange(16, dtype=np.float32).reshape(8, 2),
        "name": [f"r{i}" for i in range(8)],
        "idx": [[i % 4] for i in range(8)],
        "val": [[0.5] for _ in range(8)],
    }
    manifest = tfr.write_dataset(columns, data / "train", num_shards=1, progress=False)
    tfr.tfds.write_metadata(data, features={"label": tfr.tfds.ClassLabel(names=["a", "b", "c"])})
    schema = dict(manifest.schema.to_dict())
    schema["sparse"] = _spec_to_dict(tfr.SparseFeature("idx", "val", "float32", 4))
    schema["ragged"] = _spec_to_dict(
        tfr.RaggedFeature("float32", "val", [tfr.RaggedFeature.UniformRowLength(1)])
    )
    return {
        "manifest": json.loads((data / "train.manifest.json").read_text()),
        "schema": schema,
        "info": json.loads((data / "dataset_info.json").read_text()),
        "features": json.loads((data / "features.json").read_text()),
    }


def attempt(data: Path, which: str, doc: Any, valid: dict[str, Any]) -> None:
    """Loads one mutated sidecar (the others valid) and parses the shard with it."""
    docs = {**valid, which: doc}
    (data / "train.manifest.json").write_text(json.dumps(docs["manifest"]))
    (data / "schema.json").write_text(json.dumps(docs["schema"]))
    (data / "dataset_info.json").write_text(json.dumps(docs["info"]))
    (data / "features.json").write_text(json.dumps(docs["features"]))
    if which == "manifest":
        manifest = tfr.Manifest.load(data / "train")
        files, schema = manifest.files, manifest.schema
    elif which == "schema":
        schema = tfr.Schema.from_json((data / "schema.json").read_text())
        files = [str(data / "train-00000-of-00001.tfrecord")]
    else:
        info = tfr.tfds.info(data)
        schema = info.schema
        files = [f for split in info.splits for f in info.files(split)]
    if not schema:  # a manifest of serialized records, or of no features: read the records
        sum(1 for _ in tfr.read_records(files))
        return
    for _ in tfr.read_examples(files, schema, batch_size=3):
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    runs = loaded = 0
    with tempfile.TemporaryDirectory() as tmp:
        valid = valid_sidecars(Path(tmp))
        data = Path(tmp) / "data"
        attempt(data, "manifest", valid["manifest"], valid)  # the valid ones themselves load
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            which = rng.choice(sorted(valid))
            doc = mutate(valid[which], rng)
            runs += 1
            try:
                attempt(data, which, doc, valid)
                loaded += 1
            except (tfr.TFRecordError, OSError):
                pass
            except BaseException:
                print(f"fuzz_sidecars: {which} document (seed {seed}, run {runs}):")
                print(json.dumps(doc)[:4000])
                traceback.print_exc()
                return 1
    print(f"fuzz target sidecars: {runs} runs in {args.seconds:g}s ({loaded} loaded), clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
