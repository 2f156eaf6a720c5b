"""Thousands of mechanically damaged files through every reading mode, in child processes
with a hard address-space limit: each read ends cleanly or with a typed error, never a
crash, a hang, an untyped exception, or unbounded memory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    r"""
    import gzip, json, os, random, resource, sys, tempfile, zlib
    import numpy as np
    import tfrecordkit as tfr

    seed, count, limit = (int(a) for a in sys.argv[1:4])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    rng = random.Random(seed)
    work = tempfile.mkdtemp()

    def clean_file(kind):
        n = rng.randint(1, 40)
        cols = {"i": np.arange(n), "s": [b"v" * rng.randint(0, 300) for _ in range(n)]}
        path = os.path.join(work, "clean")
        with tfr.RecordWriter(path, kind, atomic=False) as w:
            w.write_examples(cols)
        with open(path, "rb") as f:
            return f.read()

    def damage(data):
        data = bytearray(data)
        how = rng.choice(["flip", "truncate", "insert", "splice", "zero", "huge"])
        if not data:
            return bytes(data), how
        at = rng.randrange(len(data))
        if how == "flip":
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif how == "truncate":
            del data[at:]
        elif how == "insert":
            data[at:at] = os.urandom(rng.randint(1, 64))
        elif how == "splice":
            del data[at : at + rng.randint(1, 200)]
        elif how == "zero":
            data[at : at + rng.randint(1, 64)] = bytes(min(64, len(data) - at))
        else:  # a length field claiming an enormous record, with a valid checksum
            from tfrecordkit._core import masked_crc32c
            head = (2**62).to_bytes(8, "little")
            data[at:at] = head + masked_crc32c(head).to_bytes(4, "little")
        return bytes(data), how

    schema = {"i": tfr.FixedLen([], "int64"), "s": tfr.VarLen("bytes")}
    modes = {
        "raise": lambda p: list(tfr.read_records(p)),
        "skip": lambda p: list(tfr.read_records(p, on_error="skip")),
        "resync": lambda p: list(tfr.read_records(p, on_error="skip", resync=True)),
        "unverified": lambda p: list(tfr.read_records(p, verify=False, on_error="skip")),
        "examples": lambda p: list(tfr.read_examples(p, schema, 7, on_error="skip")),
        # Unchecked payloads: damaged bytes reach the Example decoder and parser.
        "decode": lambda p: [
            tfr.decode_example(r) for r in tfr.read_records(p, verify=False, on_error="skip")
        ],
        "parse": lambda p: list(
            tfr.read_examples(p, schema, 7, verify=False, on_error="skip")
        ),
        "count": lambda p: tfr.count(p),
        "verify": lambda p: tfr.verify(p),
        "repair": lambda p: tfr.repair(p, p + ".fixed", overwrite=True),
    }
    outcomes = {}
    for k in range(count):
        kind = rng.choice([None, None, "gzip", "zlib"])
        data, how = damage(clean_file(kind))
        path = os.path.join(work, f"f{k}" + {None: ".tfrecord", "gzip": ".gz", "zlib": ".zz"}[kind])
        with open(path, "wb") as f:
            f.write(data)
        for name, read in modes.items():
            try:
                read(path)
                key = f"{name}:ok"
            except tfr.TFRecordError as err:
                key = f"{name}:{type(err).__name__}"
            except BaseException as err:
                print(json.dumps({"untyped": repr(err), "mode": name, "how": how,
                                  "kind": kind, "file": path}))
                sys.exit(3)
            outcomes[key] = outcomes.get(key, 0) + 1
        os.remove(path)
    print(json.dumps({"outcomes": outcomes}))
    """
)


@pytest.mark.parametrize("seed", [1, 2])
def test_damaged_files_in_every_mode(seed):
    count, limit = 2000, 3 << 30
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(seed), str(count), str(limit)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    outcomes = json.loads(proc.stdout.strip().splitlines()[-1])["outcomes"]
    for mode in ("raise", "skip", "resync", "examples", "count", "verify", "repair"):
        assert sum(v for k, v in outcomes.items() if k.startswith(mode + ":")) == count
    # Damage was really met, and the tolerant modes really tolerated it.
    assert sum(v for k, v in outcomes.items() if k.startswith("raise:") and k != "raise:ok") > 100
    assert outcomes.get("verify:ok") == count and outcomes.get("repair:ok") == count
