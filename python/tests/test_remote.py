"""kvikio.RemoteFile against loopback servers: HTTP (range_server.py), S3 (moto) and WebHDFS.

Round trips compare byte for byte with the served random files; error cases check the
exception type, the status and URL it carries, and that no secret reaches the message.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import kvikio
import kvikio.defaults
from kvikio import RemoteEndpointType, RemoteError, RemoteFile


def read_all(f: RemoteFile) -> bytes:
    buf = np.empty(f.nbytes(), dtype=np.uint8)
    assert f.read(buf) == f.nbytes()
    return buf.tobytes()


# ---- HTTP ---------------------------------------------------------------------------------


def test_http_whole_file_round_trip(http_server):
    with RemoteFile.open_http(http_server.url("odd.bin")) as f:
        assert f.nbytes() == len(http_server.data("odd.bin"))
        assert f.remote_endpoint_type() == RemoteEndpointType.HTTP
        assert read_all(f) == http_server.data("odd.bin")
    assert f.closed


@pytest.mark.parametrize(
    "size,offset,task_size",
    [(1, 0, None), (1, 3 * 1024 * 1024 + 4098, None), (4099, 12345, 1000), (2_000_003, 777, 65_537)],
)
def test_http_odd_sizes_and_offsets(http_server, size, offset, task_size):
    expected = http_server.data("odd.bin")[offset : offset + size]
    with kvikio.defaults.set("num_threads", 4), RemoteFile.open_http(http_server.url("odd.bin")) as f:
        buf = np.zeros(size + 5, dtype=np.uint8)
        fut = f.pread(buf, size, offset, task_size=task_size)
        assert fut.get() == size
        assert buf[:size].tobytes() == expected
        assert not buf[size:].any()  # nothing written past `size`
        buf2 = bytearray(size)
        assert f.read(buf2, file_offset=offset) == size
        assert bytes(buf2) == expected


def test_http_read_into_a_typed_array_and_a_slice(http_server):
    data = http_server.data("data.bin")
    with RemoteFile.open_http(http_server.url("data.bin")) as f:
        arr = np.empty(1_000_000, dtype=np.float32)
        assert f.read(arr) == arr.nbytes
        assert arr.tobytes() == data[: arr.nbytes]
        big = np.zeros(100, dtype=np.uint8)
        assert f.read(big[10:20], file_offset=5) == 10
        assert big[10:20].tobytes() == data[5:15]


def test_http_zero_byte_read_sends_nothing(http_server):
    with RemoteFile.open_http(http_server.url("small.bin")) as f:
        assert f.read(np.empty(0, dtype=np.uint8)) == 0
        assert f.pread(bytearray(1), size=0, file_offset=1).get() == 0


def test_http_known_nbytes_skips_the_size_request(http_server):
    # The URL would answer 404: no request is made when the size is given.
    f = RemoteFile.open_http(http_server.url("small.bin", "fail=404"), nbytes=123)
    assert f.nbytes() == 123
    f.close()


def test_http_retry_on_listed_status_then_success(http_server):
    url = http_server.url("file.bin", "fail=503&count=1&fid=retry-once")
    with RemoteFile.open_http(url, nbytes=65_537) as f:
        assert read_all(f) == http_server.data("file.bin")


def test_http_404_raises_remote_http_error(http_server):
    url = http_server.url("absent.bin")
    with pytest.raises(kvikio.RemoteError) as info:
        RemoteFile.open_http(url)
    e = info.value
    assert isinstance(e, RuntimeError)
    assert isinstance(e, kvikio.remote_file.RemoteHttpError)
    assert e.http_status == 404
    assert e.url == url
    assert url in str(e) and "404" in str(e)


def test_http_error_during_read_names_status_and_url(http_server):
    url = http_server.url("file.bin", "fail=500")
    with kvikio.defaults.set("http_max_attempts", 1), RemoteFile.open_http(url, nbytes=100) as f:
        with pytest.raises(kvikio.remote_file.RemoteHttpError) as info:
            f.read(np.empty(100, dtype=np.uint8))
    assert info.value.http_status == 500
    assert "500" in str(info.value) and "file.bin" in str(info.value)


def test_http_connection_refused_is_a_transport_error(http_server):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/x.bin"
    with kvikio.defaults.set("http_max_attempts", 1):
        with pytest.raises(kvikio.remote_file.RemoteTransportError) as info:
            RemoteFile.open_http(url)
    assert info.value.http_status == 0
    assert f"127.0.0.1:{port}" in str(info.value)


def test_http_timeout_is_a_timeout_error(http_server):
    url = http_server.url("small.bin", "delay=3")
    with kvikio.defaults.set({"http_max_attempts": 1, "http_timeout": 1}):
        with pytest.raises(kvikio.remote_file.RemoteTimeoutError) as info:
            RemoteFile.open_http(url)
    assert isinstance(info.value, kvikio.remote_file.RemoteTransportError)
    assert "small.bin" in str(info.value)


def test_read_past_end_raises_before_any_request(http_server):
    url = http_server.url("file.bin")
    with RemoteFile.open_http(url) as f:
        with pytest.raises(RuntimeError, match=r"65537 bytes\).*no request") as info:
            f.read(np.empty(10, dtype=np.uint8), file_offset=65_530)
        assert url in str(info.value)
        with pytest.raises(RuntimeError, match="past the end"):
            f.pread(np.empty(2, dtype=np.uint8), file_offset=65_537)


def test_bad_arguments(http_server):
    with RemoteFile.open_http(http_server.url("file.bin")) as f:
        with pytest.raises(ValueError, match="size 11 is larger than the 10 bytes"):
            f.read(np.empty(10, dtype=np.uint8), size=11)
        with pytest.raises(OverflowError, match="file_offset must not be negative, got -1"):
            f.read(np.empty(10, dtype=np.uint8), file_offset=-1)
        with pytest.raises(ValueError, match="read-only"):
            f.read(b"immutable")
        with pytest.raises(TypeError, match="int"):
            f.read(np.empty(10, dtype=np.uint8), file_offset="3")
        with pytest.raises(ValueError, match="task_size"):
            f.pread(np.empty(10, dtype=np.uint8), task_size=0)
    with pytest.raises(ValueError, match="closed RemoteFile"):
        f.read(np.empty(10, dtype=np.uint8))
    assert f.nbytes() == 65_537  # known without the handle
    with pytest.raises(OverflowError, match="nbytes"):
        RemoteFile.open_http(http_server.url("file.bin"), nbytes=-5)


@pytest.mark.parametrize(
    "opener,url",
    [
        ("open_http", "ftp://127.0.0.1/x.bin"),
        ("open_http", "not a url"),
        # A path without /webhdfs/v1 gets the prefix (issue 13); a URL without a path cannot.
        ("open_webhdfs", "http://127.0.0.1:1/"),
        ("open_s3_presigned_url", "http://127.0.0.1:1/bucket/key"),
        ("open", "ftp://127.0.0.1/x.bin"),
        ("open_s3_url", "ftp://bucket/key"),
    ],
)
def test_bad_urls_raise_value_error_naming_the_url(opener, url):
    with pytest.raises(ValueError) as info:
        getattr(RemoteFile, opener)(url)
    assert url in str(info.value)


def test_gil_is_released_during_a_read(http_server):
    url = http_server.url("small.bin", "delay=1")
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    t = threading.Thread(target=tick)
    with RemoteFile.open_http(url, nbytes=1) as f:
        buf = np.zeros(1, dtype=np.uint8)
        t.start()
        start = time.monotonic()
        fut = f.pread(buf)
        assert time.monotonic() - start < 0.5  # pread returns before the delayed answer
        before = len(ticks)
        assert fut.get() == 1
        stop.set()
        t.join()
    assert len(ticks) - before >= 20  # the ticker ran while get() waited
    assert buf.tobytes() == http_server.data("small.bin")


def test_future_get_twice_is_an_error(http_server):
    with RemoteFile.open_http(http_server.url("file.bin")) as f:
        fut = f.pread(np.empty(100, dtype=np.uint8))
        assert fut.get() == 100
        with pytest.raises(RuntimeError, match="already called"):
            fut.get()


def test_str_names_the_endpoint(http_server):
    url = http_server.url("file.bin")
    f = RemoteFile.open_http(url)
    assert url in str(f) and "Http" in str(f)
    f.close()
    f.close()  # idempotent
    assert "closed" in repr(f)


def test_device_buffer_round_trip(http_server, cupy):
    with RemoteFile.open_http(http_server.url("odd.bin")) as f:
        buf = cupy.empty(f.nbytes(), dtype=cupy.uint8)
        assert f.read(buf) == f.nbytes()
        assert buf.get().tobytes() == http_server.data("odd.bin")


# ---- open() and endpoint inference --------------------------------------------------------


def test_open_infers_http_and_webhdfs(http_server, webhdfs_server):
    with RemoteFile.open(http_server.url("file.bin")) as f:
        assert f.remote_endpoint_type() == RemoteEndpointType.HTTP
        assert read_all(f) == http_server.data("file.bin")
    with RemoteFile.open(webhdfs_server.url("odd.bin")) as f:
        assert f.remote_endpoint_type() == RemoteEndpointType.WEBHDFS
        assert read_all(f) == http_server.data("odd.bin")


def test_open_explicit_type_and_allow_list(http_server):
    url = http_server.url("file.bin")
    with RemoteFile.open(url, RemoteEndpointType.HTTP, nbytes=10) as f:
        assert f.nbytes() == 10
    with pytest.raises(ValueError, match="not in the allowlist") as info:
        RemoteFile.open(url, RemoteEndpointType.HTTP, allow_list=[RemoteEndpointType.WEBHDFS])
    assert url in str(info.value)
    with pytest.raises(ValueError, match="no allowed endpoint type") as info:
        RemoteFile.open(url, allow_list=[RemoteEndpointType.S3_PRESIGNED_URL])
    assert url in str(info.value)


# ---- WebHDFS ------------------------------------------------------------------------------


def test_webhdfs_round_trip_at_odd_offsets(webhdfs_server, remote_root):
    data = (remote_root / "odd.bin").read_bytes()
    with kvikio.defaults.set("num_threads", 3), RemoteFile.open_webhdfs(webhdfs_server.url("odd.bin")) as f:
        assert f.nbytes() == len(data)
        assert f.remote_endpoint_type() == RemoteEndpointType.WEBHDFS
        buf = np.empty(1_000_003, dtype=np.uint8)
        assert f.pread(buf, file_offset=4097, task_size=100_001).get() == buf.size
        assert buf.tobytes() == data[4097 : 4097 + buf.size]


def test_webhdfs_missing_file(webhdfs_server):
    url = webhdfs_server.url("absent.bin")
    with pytest.raises(RemoteError) as info:
        RemoteFile.open_webhdfs(url)
    assert info.value.http_status == 404
    assert "absent.bin" in str(info.value)


# ---- S3 -----------------------------------------------------------------------------------


def test_s3_from_environment(s3_env):
    with RemoteFile.open_s3("my-bucket", "data/file.bin") as f:
        assert f.remote_endpoint_type() == RemoteEndpointType.S3
        assert read_all(f) == s3_env.data("my-bucket", "data/file.bin")


def test_s3_url_forms(s3_env):
    expected = s3_env.data("my-bucket", "data/file.bin")
    with RemoteFile.open_s3_url("s3://my-bucket/data/file.bin") as f:
        assert read_all(f) == expected
    with RemoteFile.open_s3_url(f"{s3_env.endpoint}/my-bucket/data/file.bin") as f:
        assert read_all(f) == expected
    with RemoteFile.open("s3://my-bucket/data/file.bin") as f:
        assert f.remote_endpoint_type() == RemoteEndpointType.S3
        assert read_all(f) == expected


def test_s3_key_needing_percent_encoding(s3_env):
    with RemoteFile.open_s3("my-bucket", "odd key (1).bin") as f:
        assert read_all(f) == s3_env.data("my-bucket", "odd key (1).bin")


def test_s3_explicit_arguments_override_a_bad_environment(s3_server, monkeypatch):
    for name in ("AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "wrong")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    with RemoteFile.open_s3(
        "my-bucket",
        "data/file.bin",
        aws_region_name="us-east-1",
        aws_access_key_id=s3_server.key,
        aws_secret_access_key=s3_server.secret,
        aws_endpoint_url=s3_server.endpoint,
    ) as f:
        buf = np.empty(12_345, dtype=np.uint8)
        assert f.read(buf, file_offset=999) == buf.size
        assert buf.tobytes() == s3_server.data("my-bucket", "data/file.bin")[999 : 999 + buf.size]
    # aws_region is accepted as an alias of aws_region_name
    with RemoteFile.open_s3_url(
        "s3://my-bucket/data/file.bin",
        aws_region="us-east-1",
        aws_access_key_id=s3_server.key,
        aws_secret_access_key=s3_server.secret,
        aws_endpoint_url=s3_server.endpoint,
    ) as f:
        assert read_all(f) == s3_server.data("my-bucket", "data/file.bin")


def test_s3_session_token_credentials(s3_env, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_env.role_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_env.role_secret)
    monkeypatch.setenv("AWS_SESSION_TOKEN", s3_env.role_token)
    with RemoteFile.open_s3("my-bucket", "data/file.bin") as f:
        assert read_all(f) == s3_env.data("my-bucket", "data/file.bin")


def test_s3_wrong_secret_is_403_without_the_secret_in_the_message(s3_env):
    secret = "Wr0ngSecretValueThatMustNotLeak"
    with pytest.raises(RemoteError) as info:
        RemoteFile.open_s3("my-bucket", "data/file.bin", aws_secret_access_key=secret)
    e = info.value
    assert e.http_status == 403
    assert "my-bucket/data/file.bin" in str(e) and "403" in str(e)
    assert secret not in str(e) and s3_env.secret not in str(e)


def test_s3_missing_credentials_is_value_error(s3_env, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    with pytest.raises(ValueError, match="AWS_ACCESS_KEY_ID"):
        RemoteFile.open_s3("my-bucket", "data/file.bin")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_env.key)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ValueError, match="AWS_SECRET_ACCESS_KEY"):
        RemoteFile.open_s3_url("s3://my-bucket/data/file.bin")


def test_s3_missing_region_is_value_error(s3_env, monkeypatch):
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    with pytest.raises(ValueError, match="region") as info:
        RemoteFile.open_s3("my-bucket", "data/file.bin")
    assert "my-bucket" in str(info.value)


def test_s3_missing_object_is_404(s3_env):
    with pytest.raises(RemoteError) as info:
        RemoteFile.open_s3("my-bucket", "absent.bin")
    assert info.value.http_status == 404
    assert "my-bucket/absent.bin" in info.value.url


def test_s3_public_object_without_credentials(s3_env, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    expected = s3_env.data("public-bucket", "data.bin")
    with s3_env.anonymous_access():
        with RemoteFile.open_s3_public("s3://public-bucket/data.bin") as f:
            assert f.remote_endpoint_type() == RemoteEndpointType.S3_PUBLIC
            assert read_all(f) == expected
        url = f"{s3_env.endpoint}/public-bucket/data.bin"
        with RemoteFile.open(url, RemoteEndpointType.S3_PUBLIC) as f:
            assert read_all(f) == expected
        # A private object read anonymously is refused.
        with pytest.raises(RemoteError) as info:
            RemoteFile.open_s3_public("s3://my-bucket/data/file.bin")
        assert info.value.http_status == 403
        assert "my-bucket/data/file.bin" in str(info.value)


def test_s3_presigned_url(s3_env):
    url = s3_env.presign("my-bucket", "data/file.bin")
    expected = s3_env.data("my-bucket", "data/file.bin")
    # moto cannot check query-string signatures while IAM authentication is on.
    with s3_env.anonymous_access():
        with RemoteFile.open_s3_presigned_url(url) as f:
            assert f.remote_endpoint_type() == RemoteEndpointType.S3_PRESIGNED_URL
            assert f.nbytes() == len(expected)
            buf = np.empty(len(expected) - 3, dtype=np.uint8)
            assert f.pread(buf, file_offset=3, task_size=1_000_001).get() == buf.size
            assert buf.tobytes() == expected[3:]
        with RemoteFile.open(url) as f:
            assert f.remote_endpoint_type() == RemoteEndpointType.S3_PRESIGNED_URL
            assert read_all(f) == expected


def test_s3_presigned_url_error_hides_the_signature(s3_env):
    url = s3_env.presign("my-bucket", "absent.bin")
    signature = url.split("X-Amz-Signature=")[1].split("&")[0]
    credential = url.split("X-Amz-Credential=")[1].split("&")[0]
    with s3_env.anonymous_access(), pytest.raises(RemoteError) as info:
        RemoteFile.open_s3_presigned_url(url)
    e = info.value
    assert e.http_status == 404
    assert "my-bucket/absent.bin" in str(e) and "404" in str(e)
    for secret in (signature, credential, s3_env.key):
        assert secret not in str(e) and secret not in e.url
    assert signature not in kvikio._lib.redact_url(url)


# ---- Reliability audit fixes ---------------------------------------------------------------


def test_s3_dot_segments_in_keys_read_the_literal_key(s3_env):
    """Audit #1: libcurl removed dot segments before signing, so "a/../b" read "b" and
    "../other-bucket/secret.bin" read another bucket's object."""
    with RemoteFile.open_s3("my-bucket", "a/../b") as f:
        assert read_all(f) == s3_env.data("my-bucket", "a/../b")
    for key in ("../other-bucket/secret.bin", "x/../../other-bucket/./secret.bin"):
        with pytest.raises(kvikio.remote_file.RemoteHttpError) as info:
            RemoteFile.open_s3("my-bucket", key)
        assert info.value.http_status == 404
        with RemoteFile.open_s3("my-bucket", key, nbytes=1) as f:
            with pytest.raises(kvikio.remote_file.RemoteHttpError):
                f.read(np.empty(1, dtype=np.uint8))


@pytest.mark.parametrize("url", ["s3://127.0.0.1:1#/any/key", "s3://evil.example?/k", "s3://Bad_Bucket/k"])
def test_s3_bucket_that_could_change_the_host_is_value_error(url, monkeypatch):
    """Audit #6: the bucket went into the host name unchecked: a signed request to any host."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    bucket = url[5 : url.index("/", 5)]
    for opener in (RemoteFile.open_s3_url, RemoteFile.open):
        with pytest.raises(ValueError, match="invalid bucket name") as info:
            opener(url)
        assert bucket in str(info.value)
    with pytest.raises(ValueError, match="invalid bucket name"):
        RemoteFile.open_s3(bucket, "k")
    with pytest.raises(ValueError, match="invalid AWS region 'us-east-1.evil.example#'"):
        RemoteFile.open_s3("good-bucket", "k", aws_region_name="us-east-1.evil.example#")


def test_http_file_replaced_during_a_read_raises(http_server):
    """Audit #11: ranges of a replaced file were stitched from two versions without error."""
    path = http_server.root / "replaced.bin"
    path.write_bytes(b"a" * 100_000)
    with RemoteFile.open_http(http_server.url("replaced.bin")) as f:
        buf = np.empty(100_000, dtype=np.uint8)
        assert f.read(buf) == 100_000
        tmp = path.with_suffix(".new")
        tmp.write_bytes(b"b" * 100_000)
        tmp.replace(path)
        with pytest.raises(kvikio.RemoteError, match="the object changed") as info:
            f.pread(buf, task_size=10_000).get()
        assert info.value.http_status == 412


def test_webhdfs_keeps_doas_and_delegation_and_redacts_the_token(remote_root):
    """Audit #8: doas and delegation were dropped from the URL (a 401 on secure clusters, or
    the proxy service acting as itself)."""
    from remote_servers import ServerProcess

    server = ServerProcess(
        "webhdfs_server.py",
        "--root",
        str(remote_root),
        "--require-param",
        "doas=alice",
        "--require-param",
        "delegation=SECRETTOKEN",
    )
    try:
        base = f"http://127.0.0.1:{server.port}/webhdfs/v1/"
        query = "?user.name=svc&doas=alice&delegation=SECRETTOKEN"
        with RemoteFile.open_webhdfs(base + "file.bin" + query) as f:
            assert read_all(f) == (remote_root / "file.bin").read_bytes()
        with pytest.raises(kvikio.remote_file.RemoteHttpError) as info:
            RemoteFile.open_webhdfs(base + "absent.bin" + query)
        assert "user.name=svc&doas=alice&delegation=REDACTED" in str(info.value)
        assert "SECRETTOKEN" not in str(info.value)
        with pytest.raises(ValueError, match="'.' or '..' segment"):
            RemoteFile.open_webhdfs(base + "user/../../admin/x")
    finally:
        server.stop()


# ---- pread_batch (issue 14) and the remote IO backends (issue 13) ----------------------------


@pytest.fixture(params=["EASY_THREADPOOL", "MULTI_POLL"])
def remote_io_backend(request):
    with kvikio.defaults.set({"remote_io_backend": request.param, "num_threads": 3}):
        yield request.param


def test_pread_batch_random_overlapping_unsorted_ranges_byte_for_byte(http_server, remote_io_backend):
    data = http_server.data("odd.bin")
    rng = np.random.default_rng(3)
    ranges = []
    for _ in range(150):
        off = int(rng.integers(0, len(data)))
        ranges.append((off, int(min(rng.integers(0, 30_000), len(data) - off))))
    ranges += [(5000 + k * 700, 700) for k in range(20)]  # adjacent
    ranges += [(0, 0), (len(data) - 1, 1), (100, 200_000), (150, 10)]  # zero-size, overlapping
    rng.shuffle(ranges)
    bufs = [np.zeros(size, dtype=np.uint8) for _, size in ranges]
    with RemoteFile.open_http(http_server.url("odd.bin")) as f:
        fut = f.pread_batch([(b, size, off) for b, (off, size) in zip(bufs, ranges)])
        assert fut.get() == sum(size for _, size in ranges)
    for b, (off, size) in zip(bufs, ranges):
        assert b.tobytes() == data[off : off + size]


def test_pread_batch_whole_buffers_default_offset_and_empty(http_server, remote_io_backend):
    data = http_server.data("file.bin")
    with RemoteFile.open_http(http_server.url("file.bin")) as f:
        a, b = bytearray(10), np.zeros(7, dtype=np.uint8)
        assert f.pread_batch([(a,), (b, None, 3)]).get() == 17
        assert bytes(a) == data[:10] and b.tobytes() == data[3:10]
        assert f.pread_batch([]).get() == 0


def test_pread_batch_bad_requests_name_their_index(http_server, remote_io_backend):
    with RemoteFile.open_http(http_server.url("file.bin")) as f:
        n = f.nbytes()
        with pytest.raises(kvikio.errors.EndOfFileError, match="batch request 1: "):
            f.pread_batch([(bytearray(4), 4, 0), (bytearray(4), 4, n - 3)])
        with pytest.raises(TypeError, match="batch request 0: "):
            f.pread_batch(["abc"])


def test_pread_batch_reports_the_lowest_numbered_failure(http_server, remote_io_backend):
    # Far apart (more than 64 KiB), so that each request is a range request of its own.
    url = http_server.url("odd.bin", "fail=500")
    with kvikio.defaults.set("http_max_attempts", 1), RemoteFile.open_http(url, nbytes=3_000_000) as f:
        reqs = [(bytearray(10), 10, 2_500_000), (bytearray(10), 10, 10), (bytearray(10), 10, 1_000_000)]
        with pytest.raises(kvikio.remote_file.RemoteHttpError, match="bytes=2500000-2500009") as info:
            f.pread_batch(reqs).get()
        assert info.value.http_status == 500


def test_remote_io_backend_takes_upstreams_enum():
    """Issue 24: kvikio.RemoteIOBackend, as upstream has it; get() equals the member set."""
    before = kvikio.defaults.get("remote_io_backend")
    with kvikio.defaults.set("remote_io_backend", kvikio.RemoteIOBackend.MULTI_POLL):
        assert kvikio.defaults.get("remote_io_backend") == kvikio.RemoteIOBackend.MULTI_POLL
        kvikio.defaults.set("remote_io_backend", kvikio.RemoteIOBackend.EASY_THREADPOOL)
        assert kvikio.defaults.get("remote_io_backend") == kvikio.RemoteIOBackend.EASY_THREADPOOL
        assert kvikio.defaults.get("remote_io_backend") != kvikio.RemoteIOBackend.MULTI_POLL
    assert kvikio.defaults.get("remote_io_backend") == before


def test_remote_io_settings_take_upstream_words():
    assert kvikio.defaults.get("remote_io_backend") == "EASY_THREADPOOL"
    assert kvikio.defaults.get("remote_io_num_reactors") == 1
    assert kvikio.defaults.get("remote_io_reactor_dispatch") == "PER_CHUNK"
    assert kvikio.defaults.get("remote_io_max_concurrent_requests") == 256
    with kvikio.defaults.set("remote_io_backend", "multi_poll"):
        assert kvikio.defaults.get("remote_io_backend") == "MULTI_POLL"
    with pytest.raises(ValueError, match="remote_io_reactor_dispatch"):
        kvikio.defaults.set("remote_io_reactor_dispatch", "PER_FILE")
