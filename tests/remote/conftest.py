"""Real servers on loopback for the object-storage tests: moto's S3 server, and an HTTP
server that answers Range requests (and counts what it sends)."""

from __future__ import annotations

import http.server
import logging
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass
class S3:
    endpoint: str
    options: dict

    def bucket(self) -> str:
        """A new, empty bucket's name."""
        import boto3

        name = f"b-{uuid.uuid4().hex[:12]}"
        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=name)
        return name

    def fs(self):
        import s3fs

        return s3fs.S3FileSystem(**self.options)


@pytest.fixture(scope="module")
def s3_server():
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}
    yield S3(endpoint, options)
    server.stop()


@pytest.fixture
def s3(s3_server, monkeypatch):
    # Nothing may reach for real credentials or an instance metadata service.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    return s3_server


@dataclass
class Served:
    """What the range server sent: one ``(path, range header, bytes)`` per response."""

    root: Path
    url: str
    sent: list = field(default_factory=list)
    delay: float = 0.0

    def bytes_sent(self, name: str) -> int:
        return sum(n for path, _, n in self.sent if path.endswith("/" + name))


def _handler(served: Served):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _target(self) -> Path | None:
            path = self.path.split("?", 1)[0]
            if path.startswith("/forbidden/"):
                self.send_error(403, "Forbidden")
                return None
            if path.startswith("/busy/"):
                self.send_error(503, "Please reduce your request rate")
                return None
            if path.startswith("/slow/"):
                time.sleep(served.delay)
                path = path.removeprefix("/slow")
            file = served.root / path.lstrip("/")
            if not file.is_file():
                self.send_error(404, "Not Found")
                return None
            return file

        def do_HEAD(self):
            file = self._target()
            if file is None:
                return
            self.send_response(200)
            self.send_header("Content-Length", str(file.stat().st_size))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()

        def do_GET(self):
            file = self._target()
            if file is None:
                return
            data = file.read_bytes()
            header = self.headers.get("Range")
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", header or "")
            if m:
                start = int(m.group(1))
                end = min(int(m.group(2)) + 1 if m.group(2) else len(data), len(data))
                body = data[start:end]
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
            else:
                body = data
                self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            self.wfile.write(body)
            served.sent.append((self.path, header, len(body)))

    return Handler


@pytest.fixture
def range_server(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    served = Served(root, "")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield served
    server.shutdown()
    server.server_close()
