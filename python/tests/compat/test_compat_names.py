"""Issue 13: the public names of upstream KvikIO 26.10, called the way its documentation and
examples call them, give upstream's results."""

from __future__ import annotations

import inspect
import re
import urllib.request
import warnings

import numpy as np
import pytest

import kvikio
import kvikio.cufile_driver
import kvikio.defaults
import kvikio.numpy
import kvikio.utils

# Upstream's kvikio.__all__, less statistics/nsys (not implemented; see docs/migration.md).
UPSTREAM_TOP_LEVEL = [
    "__git_commit__", "__version__", "clear_page_cache", "CuFile", "drop_file_page_cache",
    "drop_system_page_cache", "Mmap", "get_page_cache_info", "infer_remote_endpoint_type",
    "is_remote_file_available", "kvikio_deprecation_notice", "RemoteEndpointType", "RemoteFile",
    "stream_register", "stream_deregister", "memory_register", "memory_deregister",
    "bounce_buffer_free", "CompatMode",
]


@pytest.fixture
def data(tmp_path):
    payload = np.arange(10_000, dtype=np.int64)
    path = tmp_path / "data.bin"
    payload.tofile(path)
    return path, payload


@pytest.mark.parametrize("name", UPSTREAM_TOP_LEVEL)
def test_upstream_top_level_names(name):
    assert hasattr(kvikio, name)
    if not name.startswith("__"):
        assert name in kvikio.__all__


def test_version_and_git_commit():
    assert re.fullmatch(r"\d+\.\d+\.\d+", kvikio.__version__)
    assert kvikio.__git_commit__ == "" or re.fullmatch(r"[0-9a-f]{40}", kvikio.__git_commit__)


def test_mmap_at_top_level_and_closed_both_ways(data):
    path, payload = data
    assert kvikio.Mmap is kvikio.mmap.Mmap
    m = kvikio.Mmap(path, "r")
    assert m.closed() is False and not m.closed and m.closed == False  # noqa: E712
    out = np.empty_like(payload)
    assert m.read(out) == payload.nbytes
    np.testing.assert_array_equal(out, payload)
    out2 = np.empty_like(payload)
    assert m.pread(out2, task_size=4096).get() == payload.nbytes
    np.testing.assert_array_equal(out2, payload)
    m.close()
    assert m.closed() is True and m.closed and m.closed == True  # noqa: E712
    assert m.file_size() == 0  # upstream: 0 once closed


def test_cufile_upstream_calls(data, tmp_path):
    path, payload = data
    f = kvikio.CuFile(path, "r")
    assert f.closed is False  # a property, as upstream
    assert isinstance(f.is_direct_io_supported(), bool)
    out = np.empty_like(payload)
    assert f.pread(out, payload.nbytes, 0, task_size=8192).get() == payload.nbytes
    np.testing.assert_array_equal(out, payload)
    f.close()
    assert f.closed is True
    with kvikio.CuFile(tmp_path / "w.bin", "w") as w:
        assert w.write(payload) == payload.nbytes
    assert (tmp_path / "w.bin").read_bytes() == payload.tobytes()


def test_raw_stream_keyword_names():
    for method in (kvikio.CuFile.raw_read_async, kvikio.CuFile.raw_write_async):
        params = list(inspect.signature(method).parameters)
        assert params[:6] == ["self", "buf", "raw_stream", "size", "file_offset", "dev_offset"]
    assert list(inspect.signature(kvikio.stream_register).parameters) == ["raw_stream", "flags"]
    assert list(inspect.signature(kvikio.stream_deregister).parameters) == ["raw_stream"]


def test_page_cache_functions_take_offset_and_length(data):
    path, payload = data
    size = payload.nbytes  # 80000 bytes: 20 pages of 4096 (the last one partial)
    pages = -(-size // 4096)
    cached, total = kvikio.get_page_cache_info(path)
    assert total == pages and 0 <= cached <= total
    assert kvikio.get_page_cache_info(path, 4096, 4096)[1] == 1
    assert kvikio.get_page_cache_info(path, 4095, 2)[1] == 2
    assert kvikio.get_page_cache_info(path, 8192)[1] == pages - 2
    assert kvikio.get_page_cache_info(path, 8192, 1 << 40)[1] == pages - 2
    assert kvikio.get_page_cache_info(path, size + 1) == (0, 0)
    with open(path, "rb") as fobj:
        assert kvikio.get_page_cache_info(fobj, offset=0, length=4096)[1] == 1
        assert kvikio.get_page_cache_info(fobj.fileno())[1] == pages
    # Positional offset/length land where upstream puts them (not in sync_first).
    assert kvikio.drop_file_page_cache(path, 0, 4096, True) is None
    assert kvikio.drop_file_page_cache(path, offset=0, length=0, sync_first=False) is None
    with pytest.raises(OverflowError, match="offset"):
        kvikio.get_page_cache_info(path, -1)


def test_drop_system_page_cache_returns_a_bool():
    assert isinstance(kvikio.drop_system_page_cache(reclaim_dentries_and_inodes=False), bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert isinstance(kvikio.clear_page_cache(False, True), bool)


def test_infer_remote_endpoint_type(monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION",
                 "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    T = kvikio.RemoteEndpointType
    presigned = ("https://bucket-name.s3.us-east-1.amazonaws.com/key?"
                 "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc")
    expected = {
        "s3://bucket-name/object-key-name": T.S3_PUBLIC,
        "S3://bucket-name/object-key-name": T.S3_PUBLIC,
        "https://bucket-name.s3.us-east-1.amazonaws.com/key": T.S3_PUBLIC,
        presigned: T.S3_PRESIGNED_URL,
        "https://host:1234/webhdfs/v1/data.bin": T.WEBHDFS,
        "http://namenode:9870/path": T.HTTP,
        "https://example.com/path/file.bin": T.HTTP,
        "HTTP://example.com/x": T.HTTP,
    }
    for url, kind in expected.items():
        assert kvikio.infer_remote_endpoint_type(url) == kind, url
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-access-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret-key")
    assert kvikio.infer_remote_endpoint_type("s3://bucket-name/object-key-name") == T.S3
    assert kvikio.infer_remote_endpoint_type("S3://bucket-name/object-key-name") == T.S3
    assert kvikio.infer_remote_endpoint_type(presigned) == T.S3_PRESIGNED_URL


def test_defaults_upstream_calls():
    n = kvikio.defaults.get("num_threads")
    assert kvikio.defaults.get("thread_pool_nthreads") == n  # upstream's alias
    ctx = kvikio.defaults.set({"num_threads": n + 1, "task_size": 1 << 20})
    assert isinstance(ctx, kvikio.defaults.ConfigContextManager)
    with kvikio.defaults.set("thread_pool_nthreads", n + 2) as entered:
        assert entered is None  # as upstream's __enter__
        assert kvikio.defaults.get("num_threads") == n + 2
    assert kvikio.defaults.get("num_threads") == n + 1
    kvikio.defaults.set({"num_threads": n, "task_size": 4 << 20})
    assert isinstance(kvikio.defaults.is_compat_mode_preferred(), bool)


def test_cufile_driver_upstream_names():
    d = kvikio.cufile_driver
    assert isinstance(d.properties.is_gds_available, bool)
    assert d.properties.is_gds_available == d.get("is_gds_available")
    with pytest.raises(AttributeError):
        d.properties.is_gds_available = True
    major, minor = d.libcufile_version()
    assert isinstance(major, int) and isinstance(minor, int) and major >= 0 and 0 <= minor < 100
    assert d.ConfigContextManager is kvikio.defaults.ConfigContextManager
    for name in ("driver_open", "driver_close", "initialize"):
        assert callable(getattr(d, name))
    if not d.get("is_gds_available"):
        # Without a usable cuFile, opening is the RuntimeError upstream raises.
        try:
            d.driver_open()
        except RuntimeError:
            pass
        else:
            d.driver_close()
    d.driver_close()  # nothing open: a no-op


def test_numpy_like_wrapper_and_file_objects(data, tmp_path):
    path, payload = data
    out = np.fromfile(path, dtype=np.int64, like=kvikio.numpy.LikeWrapper(np.empty(())))
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, payload)
    with open(path, "rb") as fobj:
        assert isinstance(fobj, kvikio.numpy.FileLike)
        np.testing.assert_array_equal(kvikio.numpy.fromfile(fobj, dtype=np.int64), payload)
    # count beyond the file is cut to the file, as upstream and NumPy.
    np.testing.assert_array_equal(
        kvikio.numpy.fromfile(path, dtype=np.int64, count=10**9, offset=8), payload[1:]
    )
    strided = payload.reshape(100, 100)[:, ::2]
    target = tmp_path / "t.bin"
    with open(target, "wb") as fobj:
        kvikio.numpy.tofile(ary=strided, file=fobj)
    assert target.read_bytes() == np.ascontiguousarray(strided).tobytes()


def test_numcodecs_cuda_codec():
    numcodecs = pytest.importorskip("kvikio.numcodecs")

    with pytest.raises(TypeError):
        numcodecs.CudaCodec()

    class Identity(numcodecs.CudaCodec):
        codec_id = "identity-test"

        def encode(self, buf):
            return np.frombuffer(bytes(buf), np.uint8)

        def decode(self, buf, out=None):
            return bytes(buf)

    assert Identity().decode(Identity().encode(b"abc")) == b"abc"


def test_local_http_server_serves_ranges(tmp_path):
    payload = np.random.default_rng(13).integers(0, 256, 100_003, dtype=np.uint8)
    (tmp_path / "myfile").write_bytes(payload.tobytes())
    with kvikio.utils.LocalHttpServer(root_path=tmp_path, max_lifetime=60) as server:
        assert server.url == f"http://{server.ip}:{server.port}"
        with kvikio.RemoteFile.open_http(f"{server.url}/myfile") as f:
            assert f.nbytes() == payload.nbytes
            out = np.empty_like(payload)
            assert f.read(out) == payload.nbytes
            np.testing.assert_array_equal(out, payload)
            part = np.empty(1000, np.uint8)
            assert f.pread(part, file_offset=99_000).get() == 1000
            np.testing.assert_array_equal(part, payload[99_000:100_000])
        req = urllib.request.Request(f"{server.url}/myfile", headers={"Range": "bytes=-3"})
        with urllib.request.urlopen(req) as r:
            assert r.status == 206
            assert r.headers["Content-Range"] == f"bytes 100000-100002/{payload.nbytes}"
            assert r.read() == payload[-3:].tobytes()
        req = urllib.request.Request(f"{server.url}/myfile", headers={"Range": "bytes=200000-"})
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(req)
        assert info.value.code == 416
    with kvikio.utils.LocalHttpServer(tmp_path, range_support=False) as server:
        req = urllib.request.Request(f"{server.url}/myfile", headers={"Range": "bytes=0-9"})
        with urllib.request.urlopen(req) as r:
            assert r.status == 200 and len(r.read()) == payload.nbytes


def test_call_once_and_deprecation_helpers():
    calls = []

    @kvikio.utils.call_once
    def f(x):
        calls.append(x)
        return x * 2

    assert f(2) == 4 and f(5) == 4 and calls == [2]

    @kvikio.kvikio_deprecation_notice("Use bar() instead.", since="26.10")
    def foo(a, b=1):
        """Adds."""
        return a + b

    with pytest.warns(FutureWarning, match=r"Use bar\(\) instead\."):
        assert foo(1, b=2) == 3
    assert foo.__doc__.startswith(".. deprecated:: 26.10 Use bar() instead.")
    assert "Adds." in foo.__doc__
    with pytest.warns(FutureWarning, match="deprecated since 26.10. gone"):
        kvikio.utils.kvikio_deprecate_module("gone", since="26.10")
