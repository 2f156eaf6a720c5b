"""Remote failures as users meet them: no credentials, an unreachable endpoint, a refused
HTTP connection, a busy store. Each is one typed error naming the URL, in the Python API and
in the command line (one ``error:`` line, exit 1, no traceback), and never reported as
damage."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tfrecordkit as tfr
from tfrecordkit import _core
from tfrecordkit.io.paths import _remote_error

URL = "s3://bucket/x.tfrecord"


def _typed(err: BaseException) -> OSError:
    typed = _remote_error(err, URL)
    assert typed is not None and typed.filename == URL
    return typed


def test_store_errors_are_typed_by_what_they_mean():
    from aiohttp import ClientConnectorError
    from aiohttp.client_reqrep import ConnectionKey
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        ReadTimeoutError,
    )

    def client_error(code: str, status: int) -> ClientError:
        response = {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {}}
        response["ResponseMetadata"]["HTTPStatusCode"] = status
        return ClientError(response, "GetObject")

    cases = [
        (NoCredentialsError(), PermissionError, "no usable credentials"),
        (client_error("AccessDenied", 403), PermissionError, "access refused"),
        (client_error("InvalidAccessKeyId", 403), PermissionError, "access refused"),
        (EndpointConnectionError(endpoint_url="http://h:1"), ConnectionError, "cannot connect"),
        (ReadTimeoutError(endpoint_url="http://h"), TimeoutError, "timed out"),
        (client_error("NoSuchKey", 404), FileNotFoundError, "no such object"),
        (client_error("NoSuchBucket", 404), FileNotFoundError, "no such bucket"),
        (client_error("SlowDown", 503), OSError, "the store is unavailable"),
        # s3fs's own translation of SlowDown.
        (OSError(errno.EBUSY, "Please reduce your request rate."), OSError, "unavailable"),
        (RuntimeError("something odd"), None, None),
    ]
    for err, kind, words in cases:
        typed = _remote_error(err, URL)
        if kind is None:
            assert typed is None  # not the filesystem's: raised as it is
            continue
        assert type(typed) is kind, (err, typed)
        assert words in typed.strerror and "\n" not in typed.strerror
    # fsspec's HTTP filesystem reports a refused connection as a missing file, with the
    # cause attached: the cause wins.
    key = ConnectionKey("h", 1, False, True, None, None, None)
    refused = ClientConnectorError(key, ConnectionRefusedError(111, "refused"))
    missing = FileNotFoundError("http://h:1/x")
    missing.__cause__ = refused
    assert type(_typed(missing)) is ConnectionError
    # What is typed already stays as it is.
    assert _remote_error(PermissionError(13, "access refused (x)", URL), URL) is None
    # An HTTP server's answer is said as HTTP says it, with the URL that answered.
    from aiohttp import ClientResponseError, RequestInfo
    from multidict import CIMultiDict, CIMultiDictProxy
    from yarl import URL as Url

    claim = Url("http://h/out/train.writing")
    info = RequestInfo(claim, "PUT", CIMultiDictProxy(CIMultiDict()), claim)
    refused = _typed(ClientResponseError(info, (), status=403, message="Forbidden"))
    assert type(refused) is PermissionError
    assert refused.strerror == f"access refused (HTTP 403 Forbidden from {claim})"


@pytest.fixture
def no_credentials(s3, monkeypatch, tmp_path):
    """The moto endpoint, a bucket with a file, and an environment without credentials."""
    bucket = s3.bucket()
    url = f"s3://{bucket}/x.tfrecord"
    s3.fs().pipe(url, _core.frame_record(tfr.encode_example({"a": 1})))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    return url, {"endpoint_url": s3.endpoint}


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("tfrecordkit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tfrecordkit.cli"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env or dict(os.environ),
    )


def _one_error_line(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in done.stderr
    assert "DAMAGED" not in done.stdout
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_without_credentials_every_command_says_so_in_one_line(no_credentials, tmp_path):
    url, options = no_credentials
    with pytest.raises(PermissionError, match="credentials") as info:
        tfr.verify(url, storage_options=options)
    assert info.value.filename == url
    with pytest.raises(PermissionError, match="credentials"):
        tfr.count(url, storage_options=options)
    with pytest.raises(PermissionError, match="credentials"):
        tfr.repair(url, str(tmp_path / "out.tfrecord"), storage_options=options)
    endpoint = f"endpoint_url={options['endpoint_url']}"
    glob = url.rsplit("/", 1)[0] + "/*"
    for args in (
        ["count", url],
        ["verify", glob],
        ["verify", url],
        ["head", url],
        ["inspect", url],
        ["repair", url, "-o", str(tmp_path / "out.tfrecord")],
    ):
        _one_error_line(_cli("--storage-option", endpoint, *args), "no usable credentials")
    assert not (tmp_path / "out.tfrecord").exists()


def test_an_unreachable_endpoint_is_a_connection_error(s3):
    # One attempt by botocore (it retries with a back-off by default).
    once = {"config_kwargs": {"retries": {"max_attempts": 1}}}
    options = {**s3.options, **once, "endpoint_url": "http://127.0.0.1:1"}
    url = "s3://bucket/x.tfrecord"
    with pytest.raises(ConnectionError, match="cannot connect") as info:
        tfr.count(url, storage_options=options)
    assert info.value.filename == url
    with pytest.raises(ConnectionError):
        tfr.verify(url, storage_options=options)
    flags = [
        *("--storage-option", "endpoint_url=http://127.0.0.1:1"),
        *("--storage-option", 'config_kwargs={"retries": {"max_attempts": 1}}'),
    ]
    for args in (["count", url], ["verify", url]):
        _one_error_line(_cli(*flags, *args), "cannot connect", url)


def test_a_refused_http_connection_is_not_a_missing_object():
    url = "http://127.0.0.1:1/x.tfrecord"
    with pytest.raises(ConnectionError, match="cannot connect"):
        tfr.count(url)
    with pytest.raises(ConnectionError):
        list(tfr.read_records(url))
    for args in (["count", url], ["verify", url], ["head", url]):
        _one_error_line(_cli(*args), "cannot connect", url)


def test_a_server_that_takes_no_writes_says_so(range_server, tmp_path):
    # fsspec's HTTP filesystem writes by PUT, which this server does not answer (501),
    # and has no exclusive create at all: each is one line naming the user's URL.
    local = tmp_path / "x.tfrecord"
    with tfr.RecordWriter(str(local)) as w:
        w.write_many([b"a", b"b"])
    prefix = f"{range_server.url}/out/train"
    with pytest.raises(OSError, match="cannot write a dataset here: the server does not allow"):
        tfr.write_dataset([b"a", b"b"], prefix)
    target = f"{range_server.url}/fixed.tfrecord"
    with pytest.raises(OSError, match="the http:// filesystem cannot do this") as info:
        tfr.repair(local, target)
    assert info.value.errno == errno.EOPNOTSUPP and info.value.filename == target
    _one_error_line(_cli("reshard", str(local), "-o", prefix), "does not allow", prefix)
    _one_error_line(_cli("repair", str(local), "-o", target), "cannot do this", target)


def test_a_busy_store_says_it_is_unavailable(range_server):
    url = f"{range_server.url}/busy/x.tfrecord"
    with pytest.raises(OSError, match="unavailable") as info:
        list(tfr.read_records(url))
    assert info.value.errno == errno.EBUSY and info.value.filename == url
    _one_error_line(_cli("verify", url), "unavailable", url)
