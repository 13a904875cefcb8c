"""Issue 13, remote: RemoteFile.open infers S3_PUBLIC and falls back from S3 to public as
upstream does; scheme matching ignores case; open_webhdfs takes the name node's file path
without /webhdfs/v1."""

from __future__ import annotations

import numpy as np
import pytest

import kvikio
from kvikio import RemoteEndpointType, RemoteFile


def read_all(f) -> bytes:
    out = np.empty(f.nbytes(), np.uint8)
    assert f.read(out) == f.nbytes()
    return out.tobytes()


def test_open_s3_url_without_credentials_falls_back_to_public(s3_env, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    expected = s3_env.data("public-bucket", "data.bin")
    with s3_env.anonymous_access():
        for url in ("s3://public-bucket/data.bin", "S3://public-bucket/data.bin"):
            assert kvikio.infer_remote_endpoint_type(url) == RemoteEndpointType.S3_PUBLIC
            with RemoteFile.open(url) as f:
                assert f.remote_endpoint_type() == RemoteEndpointType.S3_PUBLIC
                assert read_all(f) == expected


def test_open_s3_url_with_credentials_stays_signed(s3_env):
    expected = s3_env.data("my-bucket", "data/file.bin")
    for url in ("s3://my-bucket/data/file.bin", "S3://my-bucket/data/file.bin"):
        assert kvikio.infer_remote_endpoint_type(url) == RemoteEndpointType.S3
        with RemoteFile.open(url) as f:
            assert f.remote_endpoint_type() == RemoteEndpointType.S3
            assert read_all(f) == expected
        with RemoteFile.open_s3_url(url) as f:
            assert read_all(f) == expected


def test_open_without_public_in_allow_list_does_not_fall_back(s3_env, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    with pytest.raises(RuntimeError) as info:
        RemoteFile.open("s3://public-bucket/data.bin", allow_list=[RemoteEndpointType.S3])
    assert isinstance(info.value, ValueError)
    assert "AWS_ACCESS_KEY_ID" in str(info.value) or "credential" in str(info.value).lower()


def test_open_webhdfs_without_the_rest_prefix(webhdfs_server):
    expected = (webhdfs_server.root / "file.bin").read_bytes()
    url = f"http://127.0.0.1:{webhdfs_server.port}/file.bin"
    with RemoteFile.open_webhdfs(url) as f:
        assert f.remote_endpoint_type() == RemoteEndpointType.WEBHDFS
        assert f.nbytes() == len(expected)
        assert read_all(f) == expected
    # The full REST URL still works, and inference keeps a plain path as HTTP (as upstream).
    with RemoteFile.open_webhdfs(webhdfs_server.url("file.bin")) as f:
        assert read_all(f) == expected
    assert kvikio.infer_remote_endpoint_type(url) == RemoteEndpointType.HTTP


def test_http_scheme_in_upper_case(http_server):
    url = http_server.url("file.bin").replace("http://", "HTTP://")
    with RemoteFile.open(url) as f:
        assert f.remote_endpoint_type() == RemoteEndpointType.HTTP
        assert read_all(f) == http_server.data("file.bin")
