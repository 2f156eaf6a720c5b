"""Shared helpers for the ``write_dataset`` / ``reshard`` / manifest-based ``count`` tests.

Everything here is an independent re-implementation (CRC32C, TFRecord framing, the shard
name pattern) so the tests do not trust the code they check. Helpers are exposed through
the ``ds`` fixture (this directory has no ``__init__.py``).
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Iterable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import tfrecordkit as tfr

# ---------------------------------------------------------------------------------------------
# CRC32C (Castagnoli), table driven, reflected polynomial 0x82F63B78
# ---------------------------------------------------------------------------------------------


def _make_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """Unmasked CRC32C of ``data``."""
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the standard check value
assert crc32c(b"") == 0

# ---------------------------------------------------------------------------------------------
# Framing
# ---------------------------------------------------------------------------------------------


def frames(raw: bytes) -> list[tuple[int, int, bytes]]:
    """``(offset, framed length, payload)`` for every record of an uncompressed file,
    checking both checksums with the pure-Python CRC; a torn tail fails the test."""
    out, pos = [], 0
    while pos < len(raw):
        assert pos + 12 <= len(raw), f"torn header at {pos}"
        (length,) = struct.unpack_from("<Q", raw, pos)
        (lcrc,) = struct.unpack_from("<I", raw, pos + 8)
        assert lcrc == masked(crc32c(raw[pos : pos + 8])), f"bad length CRC at {pos}"
        end = pos + 12 + length + 4
        assert end <= len(raw), f"torn record at {pos}"
        payload = raw[pos + 12 : pos + 12 + length]
        (dcrc,) = struct.unpack_from("<I", raw, pos + 12 + length)
        assert dcrc == masked(crc32c(payload)), f"bad data CRC at {pos}"
        out.append((pos, 16 + length, payload))
        pos = end
    return out


def frame(payload: bytes) -> bytes:
    head = struct.pack("<Q", len(payload))
    return (
        head
        + struct.pack("<I", masked(crc32c(head)))
        + payload
        + struct.pack("<I", masked(crc32c(payload)))
    )


# ---------------------------------------------------------------------------------------------
# Datasets on disk
# ---------------------------------------------------------------------------------------------

FINAL_RE = re.compile(r"^.+-\d{5}-of-\d{5}\.tfrecord(\.gz|\.zz)?(\.idx)?$")


def listing(directory: os.PathLike[str] | str) -> list[str]:
    return sorted(os.listdir(directory))


def finals(directory: os.PathLike[str] | str) -> list[str]:
    """Files that look like finished shards, sidecars or manifests."""
    return [n for n in listing(directory) if FINAL_RE.match(n) or n.endswith(".manifest.json")]


def hidden(directory: os.PathLike[str] | str) -> list[str]:
    return [n for n in listing(directory) if n.startswith(".")]


def records(files: Sequence[str]) -> list[bytes]:
    return list(tfr.read_records(list(files)))


def decoded(files: Sequence[str]) -> list[dict[str, Any]]:
    return [tfr.decode_example(r) for r in records(files)]


def per_shard(manifest: tfr.Manifest) -> list[list[bytes]]:
    return [list(tfr.read_records(f)) for f in manifest.files]


def manifest_json(prefix: os.PathLike[str] | str) -> dict[str, Any]:
    with open(f"{os.fspath(prefix)}.manifest.json", encoding="utf-8") as f:
        return json.load(f)


def expected_value(v: Any) -> Any:
    """A Python scalar/sequence as ``decode_example`` gives it back, for comparison:
    ("int", [..]) / ("float", [..]) / ("bytes", [..])."""
    if isinstance(v, np.ndarray):
        v = v.ravel().tolist()
    if not isinstance(v, (list, tuple)):
        v = [v]
    v = list(v)
    if v and isinstance(v[0], (bytes, str, np.bytes_, np.str_)):
        return ("bytes", [x.encode() if isinstance(x, str) else bytes(x) for x in v])
    if v and isinstance(v[0], (float, np.floating)):
        return ("float", np.asarray(v, dtype=np.float32).tolist())
    return ("int", [int(x) for x in v])


def got_value(v: Any, like: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
    if isinstance(v, np.ndarray):
        kind = "int" if v.dtype == np.int64 else "float"
        return (kind, v.tolist())
    return (like[0] if not v else "bytes", list(v))


def assert_rows_equal(got: Sequence[dict[str, Any]], expected: Sequence[dict[str, Any]]) -> None:
    """``expected`` rows are dicts of Python values, ``None`` meaning the feature is absent."""
    assert len(got) == len(expected), f"{len(got)} rows, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        present = {k: v for k, v in e.items() if v is not None}
        assert set(g) == set(present), f"row {i}: features {sorted(g)} != {sorted(present)}"
        for k, v in present.items():
            want = expected_value(v)
            have = got_value(g[k], want)
            if want[0] == "float":
                assert have[0] == "float", f"row {i} {k!r}: {have} is not floats"
                np.testing.assert_array_equal(
                    np.asarray(have[1], np.float32),
                    np.asarray(want[1], np.float32),
                    err_msg=f"row {i} {k!r}",
                )
            else:
                assert have == want, f"row {i} {k!r}: {have} != {want}"


def write(data: Any, prefix: Any, **kw: Any) -> tfr.Manifest:
    kw.setdefault("progress", False)
    return tfr.write_dataset(data, prefix, **kw)


def example_bytes(n: int, tag: str = "r") -> list[bytes]:
    return [tfr.encode_example({"i": i, "tag": f"{tag}{i}"}) for i in range(n)]


def payloads(n: int, size: int = 40) -> list[bytes]:
    """Distinct opaque records of ``size`` bytes each."""
    return [f"{i:010d}".encode().ljust(size, b"x") for i in range(n)]


def gen(items: Iterable[Any]):
    """An unsized iterator over ``items``."""
    yield from items


@pytest.fixture(scope="package")
def ds() -> SimpleNamespace:
    return SimpleNamespace(
        crc32c=crc32c,
        masked=masked,
        frames=frames,
        frame=frame,
        listing=listing,
        finals=finals,
        hidden=hidden,
        records=records,
        decoded=decoded,
        per_shard=per_shard,
        manifest_json=manifest_json,
        assert_rows_equal=assert_rows_equal,
        write=write,
        example_bytes=example_bytes,
        payloads=payloads,
        gen=gen,
        FINAL_RE=FINAL_RE,
    )
