"""Loopback servers for the remote tests: the same scripts the C++ tests use (tests/servers/).

Session fixtures (imported by conftest.py):
- ``remote_root``: a directory of random files the HTTP and WebHDFS servers serve;
- ``http_server``: tests/servers/range_server.py (Range support, fault injection by query);
- ``webhdfs_server``: tests/servers/webhdfs_server.py (name node + data node);
- ``s3_server``: tests/servers/s3_server.py (moto, SigV4 checked), with buckets and objects.

Each server is a child process that prints "PORT <n>" when ready (waited for with a timeout)
and exits when its stdin closes; the fixture closes it and waits, killing it if it hangs.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

SERVERS = Path(__file__).resolve().parents[2] / "tests" / "servers"
START_TIMEOUT = 60.0
REPLY_TIMEOUT = 60.0

# Objects served, by name: odd sizes so that no read lines up with a task or page boundary.
FILE_SIZES = {
    # > 1_000_000 float32 (the seed's HTTP example reads 4 MB); a whole number of float32
    # (the seed's chunked S3 example reads it into float32 views).
    "data.bin": 4_000_000 + 12_344,
    "small.bin": 1,
    "odd.bin": 3 * 1024 * 1024 + 4099,
    "file.bin": 65_537,
}
# S3 objects: (bucket, key) -> local file name under remote_root.
S3_OBJECTS = {
    ("my-bucket", "data/file.bin"): "odd.bin",
    ("my-bucket", "large-dataset.bin"): "data.bin",
    ("my-bucket", "odd key (1).bin"): "file.bin",
    ("bucket", "object"): "file.bin",
    ("public-bucket", "data.bin"): "data.bin",
    # Keys with dot segments are keys of their own (reliability audit #1).
    ("my-bucket", "a/../b"): "odd.bin",
    ("my-bucket", "b"): "file.bin",
    ("other-bucket", "secret.bin"): "small.bin",
}
S3_PUBLIC = [("public-bucket", "data.bin")]
S3_REGION = "us-east-1"


class ServerProcess:
    """A server script run as a child; ``port`` once it said "PORT <n>"."""

    def __init__(self, script: str, *args: str) -> None:
        self.name = script
        # stderr to a file, not a pipe: a chatty server must never block on a full pipe.
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVERS / script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        line = self._next_line(START_TIMEOUT)
        if line is None or not line.startswith("PORT "):
            self.stop()
            self._stderr.seek(0)
            err = self._stderr.read()
            raise RuntimeError(f"{script} did not start (said {line!r}); stderr:\n{err[-4000:]}")
        self.port = int(line.split()[1])

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def _next_line(self, timeout: float) -> str | None:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"{self.name}: no answer within {timeout} s") from None

    def command(self, **cmd) -> dict:
        """One JSON command on stdin, one JSON answer on stdout (s3_server.py)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self._next_line(REPLY_TIMEOUT)
        if line is None:
            raise RuntimeError(f"{self.name} exited during {cmd}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.name}: {cmd['cmd']} failed: {reply['error']}")
        return reply

    def stop(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._stderr.close()


@pytest.fixture(scope="session")
def remote_root(tmp_path_factory) -> Path:
    rng = np.random.default_rng(20261129)
    root = tmp_path_factory.mktemp("remote-root")
    for name, size in FILE_SIZES.items():
        (root / name).write_bytes(rng.integers(0, 256, size=size, dtype=np.uint8).tobytes())
    # The path of the seed's WebHDFS example.
    (root / "path" / "to").mkdir(parents=True)
    (root / "path" / "to" / "file").write_bytes((root / "odd.bin").read_bytes()[::-1])
    return root


@dataclass
class HttpServer:
    root: Path
    port: int

    def url(self, name: str, query: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{name}" + (f"?{query}" if query else "")

    def data(self, name: str) -> bytes:
        return (self.root / name).read_bytes()


@pytest.fixture(scope="session")
def http_server(remote_root):
    server = ServerProcess("range_server.py", "--root", str(remote_root))
    yield HttpServer(remote_root, server.port)
    server.stop()


@dataclass
class WebHdfsServer:
    root: Path
    port: int

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/webhdfs/v1/{name}"


@pytest.fixture(scope="session")
def webhdfs_server(remote_root):
    server = ServerProcess("webhdfs_server.py", "--root", str(remote_root))
    yield WebHdfsServer(remote_root, server.port)
    server.stop()


@dataclass
class S3Server:
    root: Path
    port: int
    key: str
    secret: str
    role_key: str
    role_secret: str
    role_token: str
    process: ServerProcess = field(repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def data(self, bucket: str, key: str) -> bytes:
        return (self.root / S3_OBJECTS[(bucket, key)]).read_bytes()

    def presign(self, bucket: str, key: str, expires: int = 3600) -> str:
        return self.process.command(cmd="presign", bucket=bucket, key=key, expires=expires)["url"]

    @contextlib.contextmanager
    def anonymous_access(self):
        """moto answers anonymous requests (500) only while IAM authentication is off; the
        objects' ACLs still decide (a private object is 403). Turned back on afterwards."""
        self.process.command(cmd="auth", on=False)
        try:
            yield
        finally:
            self.process.command(cmd="auth", on=True)

    def env(self) -> dict[str, str]:
        """AWS_* variables that point S3 requests at this server with valid credentials."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": S3_REGION,
            "AWS_ACCESS_KEY_ID": self.key,
            "AWS_SECRET_ACCESS_KEY": self.secret,
        }


@pytest.fixture(scope="session")
def s3_server(remote_root):
    pytest.importorskip("moto", reason="needs moto[server] for the S3 tests")
    pytest.importorskip("boto3", reason="needs boto3 for the S3 tests")
    import boto3
    from botocore.config import Config

    server = ServerProcess("s3_server.py")
    try:
        creds = server.command(cmd="setup", bucket="my-bucket")
        client = boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{server.port}",
            region_name=S3_REGION,
            aws_access_key_id=creds["key"],
            aws_secret_access_key=creds["secret"],
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
        )
        for bucket in sorted({b for b, _ in S3_OBJECTS} - {"my-bucket"}):
            client.create_bucket(Bucket=bucket)
        for (bucket, key), name in S3_OBJECTS.items():
            server.command(cmd="put", bucket=bucket, key=key, path=str(remote_root / name))
        for bucket, key in S3_PUBLIC:
            server.command(cmd="public", bucket=bucket, key=key)
        server.command(cmd="auth", on=True)
        yield S3Server(
            remote_root,
            server.port,
            creds["key"],
            creds["secret"],
            creds["role_key"],
            creds["role_secret"],
            creds["role_token"],
            server,
        )
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The AWS_* environment pointing at the moto server (restored after the test)."""
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return s3_server
