"""Issue 24: code written for upstream KvikIO matches phrases of its error messages
(``pytest.raises(match=...)``, ``except ... if "..." in str(e)``). Each of our messages keeps
what it says (the file, offset, size, URL or setting) and also carries upstream's phrase;
each error is also the class upstream raises. And the behaviours upstream's own tests check:
what ``bounce_buffer_free()`` returns, ``TypeError`` for a setting of the wrong type, and a
server that ignores ``Range`` failing every read."""

from __future__ import annotations

import http.server
import json
import os
import re
import threading

import numpy as np
import pytest

import kvikio
import kvikio.cufile_driver
import kvikio.defaults
import kvikio.errors
import kvikio.numpy
from kvikio.remote_file import RemoteRangeError


@pytest.fixture
def data_file(tmp_path, random_bytes):
    path = tmp_path / "data.bin"
    path.write_bytes(random_bytes(8192 + 17).tobytes())
    return path


def has(exc_info, *parts: str) -> None:
    for part in parts:
        assert part in str(exc_info.value), (part, str(exc_info.value))


# ------------------------------------------------------------------------------ local files


def test_missing_file_says_unable_to_open_file(tmp_path):
    missing = tmp_path / "no-such.bin"
    with pytest.raises(RuntimeError, match="Unable to open file.*No such file or directory") as e:
        kvikio.CuFile(missing, "r")
    assert isinstance(e.value, FileNotFoundError) and e.value.errno == 2
    has(e, str(missing), "'r'")
    with pytest.raises(RuntimeError, match=r".*Unable to open file.*") as e:
        kvikio.Mmap(missing)
    assert isinstance(e.value, FileNotFoundError)
    has(e, str(missing))
    with pytest.raises(RuntimeError, match="Unable to open file") as e:
        kvikio.get_page_cache_info(missing)
    assert isinstance(e.value, FileNotFoundError)
    has(e, str(missing))


def test_wrong_open_mode_says_operation_not_permitted(data_file):
    before = data_file.read_bytes()
    with kvikio.CuFile(data_file, "r") as f:
        with pytest.raises(RuntimeError, match="Operation not permitted") as e:
            f.write(np.arange(10))
    assert isinstance(e.value, ValueError)
    has(e, str(data_file), "read-only")
    assert data_file.read_bytes() == before
    with kvikio.CuFile(data_file, "w") as f:
        buf = np.zeros(10, np.int64)
        with pytest.raises(RuntimeError, match="Operation not permitted") as e:
            f.read(buf)
        with pytest.raises(RuntimeError, match="Operation not permitted"):
            f.pread(buf).get()
    has(e, str(data_file), "write-only")
    assert not buf.any()


@pytest.mark.parametrize("method", ["raw_read", "raw_write"])
def test_raw_io_of_host_memory_says_non_cuda_buffers(data_file, method):
    buf = np.zeros(1024, np.uint8)
    before = data_file.read_bytes()
    with kvikio.CuFile(data_file, "r+") as f:
        with pytest.raises(ValueError, match="Non-CUDA buffers not supported") as e:
            getattr(f, method)(buf)
    has(e, f"CuFile.{method}", str(data_file), "numpy.ndarray")
    assert not buf.any() and data_file.read_bytes() == before


def test_page_cache_info_of_a_non_path_is_value_error():
    for arg in (123.456, ["path_in_a_list"]):
        with pytest.raises(ValueError):
            kvikio.get_page_cache_info(arg)


# ---------------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    "key", ["num_threads", "task_size", "gds_threshold", "bounce_buffer_size", "http_max_attempts"]
)
def test_negative_setting_says_negative_value(key):
    before = kvikio.defaults.get(key)
    with pytest.raises(OverflowError, match="negative value") as e:
        kvikio.defaults.set(key, -1)
    assert isinstance(e.value, kvikio.errors.NegativeSettingError)
    has(e, key, "'-1'")
    assert kvikio.defaults.get(key) == before
    if key != "gds_threshold":  # gds_threshold may be 0
        with pytest.raises(ValueError, match="positive integer") as e:
            kvikio.defaults.set(key, 0)
        assert not isinstance(e.value, OverflowError)
        has(e, key)


def test_negative_driver_property_says_negative_value():
    with pytest.raises(OverflowError, match="negative value") as e:
        kvikio.cufile_driver.set("poll_thresh_size", -1)
    assert isinstance(e.value, kvikio.errors.NegativeSettingError)
    has(e, "poll_thresh_size", "-1")


@pytest.mark.parametrize(
    "key,value",
    [("http_status_codes", 0), ("http_status_codes", ["a"]), ("num_threads", "4"), ("task_size", 1.5)],
)
def test_setting_of_the_wrong_type_is_type_error(key, value):
    before = kvikio.defaults.get(key)
    with pytest.raises(TypeError) as e:
        kvikio.defaults.set(key, value)
    assert isinstance(e.value, ValueError)  # ours: a bad value names the setting
    assert isinstance(e.value, kvikio.errors.SettingTypeError)
    has(e, key)
    assert kvikio.defaults.get(key) == before


def test_setting_of_the_right_type_but_bad_value_stays_value_error():
    with pytest.raises(ValueError, match="http_status_codes") as e:
        kvikio.defaults.set("http_status_codes", [99])
    assert not isinstance(e.value, TypeError)
    with kvikio.defaults.set("http_status_codes", [429, 500]):
        assert kvikio.defaults.get("http_status_codes") == [429, 500]


# ------------------------------------------------------------------------------------- mmap


@pytest.fixture
def mapped_file(tmp_path, random_bytes):
    path = tmp_path / "mapped.bin"
    data = random_bytes(1 << 20)
    path.write_bytes(data.tobytes())
    return path, data


def test_mmap_flags_and_ranges_say_upstreams_words(mapped_file):
    path, data = mapped_file
    n = data.nbytes
    for flags in ("", "z"):
        with pytest.raises(ValueError, match="Unknown file open flag") as e:
            kvikio.Mmap(path, flags)
        has(e, str(path), f"'{flags}'")
    with pytest.raises(ValueError) as e:
        kvikio.Mmap(path, "w")
    assert "Unknown file open flag" not in str(e.value)  # a mode, only not supported
    with pytest.raises(IndexError, match="Offset must be less than the file size") as e:
        kvikio.Mmap(path, "r", None, 2 * n)
    has(e, str(path), str(2 * n), str(n))
    with pytest.raises(IndexError, match="Offset must be less than the file size"):
        kvikio.Mmap(path, "r", None, n)  # the offset of no byte
    with pytest.raises(IndexError, match="Mapped region is past the end of file") as e:
        kvikio.Mmap(path, "r", 2 * n)
    has(e, str(path), str(2 * n))
    with pytest.raises(ValueError, match="Mapped region should not be zero byte") as e:
        kvikio.Mmap(path, "r", 0)
    has(e, str(path))
    # The last byte alone is a valid mapping.
    with kvikio.Mmap(path, "r", None, n - 1) as m:
        out = np.zeros(1, np.uint8)
        assert m.read(out, 1, n - 1) == 1 and out[0] == data[-1]


def test_mmap_of_an_empty_file_maps_nothing(tmp_path):
    path = tmp_path / "empty.bin"
    path.write_bytes(b"")
    with kvikio.Mmap(path) as m:
        assert m.file_size() == 0
        assert m.read(np.zeros(0, np.uint8)) == 0


def test_mmap_reads_out_of_range_say_upstreams_words(mapped_file):
    path, data = mapped_file
    out = np.zeros(data.nbytes, np.uint8)
    with kvikio.Mmap(path, "r", 1024, 512) as m:
        with pytest.raises(IndexError, match="Offset is past the end of file") as e:
            m.read(out, 1024, data.nbytes + 1)
        has(e, str(path), str(data.nbytes + 1))
        for size, offset in ((1024, 513), (1024, 384), (1024 + 128, 512)):
            with pytest.raises(IndexError, match="Read is out of bound") as e:
                m.read(out, size, offset)
            has(e, str(path), str(offset), "[512, 1536)")
            with pytest.raises(IndexError, match="Read is out of bound"):
                m.pread(out, size, offset).get()
        assert not out.any()
        # Inside the range still reads the right bytes.
        assert m.read(out, 100, 700) == 100
        np.testing.assert_array_equal(out[:100], data[700:800])


def test_mmap_read_after_close_says_cannot_read_from_a_closed_handle(mapped_file):
    path, _ = mapped_file
    m = kvikio.Mmap(path, "r")
    m.close()
    assert m.closed()
    assert m.file_size() == 0
    out = np.zeros(16, np.uint8)
    with pytest.raises(RuntimeError, match="Cannot read from a closed MmapHandle") as e:
        m.read(out)
    assert isinstance(e.value, kvikio.errors.ClosedFileError)
    has(e, str(path), "closed")
    with pytest.raises(RuntimeError, match="Cannot read from a closed MmapHandle"):
        m.pread(out)


# ------------------------------------------------------------------------------------ numpy


def test_fromfile_and_tofile_say_upstreams_words(data_file):
    with pytest.raises(NotImplementedError, match="Non-default value of the `sep`") as e:
        kvikio.numpy.fromfile(data_file, sep=",")
    has(e, "','")
    with pytest.raises(NotImplementedError, match="Non-default value of the `sep`"):
        kvikio.numpy.tofile(np.arange(3), data_file.parent / "t.bin", sep=",")
    with pytest.raises(ValueError, match="[Nn]egative dimensions are not allowed") as e:
        kvikio.numpy.fromfile(data_file, dtype=np.uint8, count=-42)
    has(e, "-42")
    with pytest.raises(FileNotFoundError, match="no file"):
        kvikio.numpy.fromfile("no file")
    # -1 still reads to the end.
    got = kvikio.numpy.fromfile(data_file, dtype=np.uint8, count=-1)
    np.testing.assert_array_equal(got, np.frombuffer(data_file.read_bytes(), np.uint8))


# ----------------------------------------------------------------------------------- remote


def test_urls_without_a_scheme_say_bad_scheme():
    for url in ("example.com/path", "://bucket_name/object_name"):
        with pytest.raises(RuntimeError, match="Bad scheme") as e:
            kvikio.infer_remote_endpoint_type(url)
        assert isinstance(e.value, kvikio.errors.RemoteURLError)
        has(e, url)
        with pytest.raises(RuntimeError, match="Bad scheme") as e:
            kvikio.RemoteFile.open(url)
        has(e, url)


def test_urls_no_endpoint_takes_say_unsupported_endpoint_url():
    for url in ("unsupported://example.com/path", "s3://bucket-only"):
        with pytest.raises(RuntimeError, match="Unsupported endpoint URL") as e:
            kvikio.RemoteFile.open(url)
        assert "Bad scheme" not in str(e.value)
        has(e, url)
    with pytest.raises(RuntimeError, match="Unsupported endpoint URL"):
        kvikio.infer_remote_endpoint_type("unsupported://example.com/path")
    with pytest.raises(RuntimeError, match="Invalid URL") as e:
        kvikio.RemoteFile.open("s3://bucket-only", kvikio.RemoteEndpointType.S3)
    has(e, "s3://bucket-only", "S3")
    with pytest.raises(RuntimeError, match="not in the allowlist") as e:
        kvikio.RemoteFile.open(
            "http://127.0.0.1:1/b/o", kvikio.RemoteEndpointType.S3, [kvikio.RemoteEndpointType.WEBHDFS]
        )
    has(e, "http://127.0.0.1:1/b/o", "WEBHDFS")
    with pytest.raises(ValueError, match="Unsupported protocol") as e:
        kvikio.RemoteFile.open_s3_url("unknown://bucket/Data")
    has(e, "unknown://bucket/Data")


def test_http_read_past_the_end_says_cannot_read_into_a_file(http_server):
    url = http_server.url("file.bin")
    size = len(http_server.data("file.bin"))
    buf = np.zeros(100, np.uint8)
    with kvikio.RemoteFile.open_http(url) as f:
        with pytest.raises(ValueError, match=rf"cannot read {size - 10}\+100 bytes into a {size} bytes file") as e:
            f.read(buf, file_offset=size - 10)
        has(e, url, "no request was sent")
        with pytest.raises(ValueError, match=rf"cannot read {size + 100}\+5 bytes into a {size} bytes file"):
            f.read(buf, size=5, file_offset=size + 100)
    assert not buf.any()


def test_server_ignoring_range_fails_every_read_with_overflow_error(http_server):
    url = http_server.url("file.bin", "norange=1")
    data = np.frombuffer(http_server.data("file.bin"), np.uint8)
    with kvikio.RemoteFile.open_http(url) as f:
        assert f.nbytes() == data.nbytes
        for offset in (0, 10, 1000):
            buf = np.zeros(10, np.uint8)
            with pytest.raises(OverflowError, match="maybe the server doesn't support file ranges?") as e:
                f.read(buf, size=10, file_offset=offset)
            assert isinstance(e.value, RemoteRangeError) and isinstance(e.value, RuntimeError)
            has(e, url)
        # The whole object from offset 0 is what such a server sends: that read works.
        whole = np.zeros(data.nbytes, np.uint8)
        assert f.read(whole) == data.nbytes
        np.testing.assert_array_equal(whole, data)


def test_retries_running_out_say_maximum_number_of_attempts(http_server):
    url = http_server.url("file.bin", "fail=503")
    with kvikio.defaults.set("http_max_attempts", 2):
        with pytest.raises(RuntimeError) as e:
            kvikio.RemoteFile.open_http(url)
    assert e.match(r"KvikIO: HTTP request reached maximum number of attempts \(2\)")
    assert e.match("Got HTTP code 503")
    has(e, url, "HTTP status 503", "after 2 attempts")


def test_timeouts_running_out_say_maximum_number_of_attempts(http_server):
    url = http_server.url("file.bin", "delay=3")
    with kvikio.defaults.set({"http_max_attempts": 2, "http_timeout": 1}):
        with kvikio.RemoteFile.open_http(url, nbytes=100) as f:
            with pytest.raises(RuntimeError) as e:
                f.read(np.zeros(100, np.uint8))
    assert e.match("KvikIO: HTTP request reached maximum number of attempts")
    assert e.match("Operation timed out.")
    has(e, url)


def test_missing_object_says_url_returned_error(http_server):
    url = http_server.url("no-such-file.bin")
    with pytest.raises(RuntimeError, match="URL returned error: 404") as e:
        kvikio.RemoteFile.open_http(url)
    has(e, url, "HTTP status 404")


def test_missing_s3_object_says_url_returned_error(s3_env):
    for bucket, key in (("unknown-bucket", "Data"), ("my-bucket", "unknown-file")):
        with pytest.raises(RuntimeError, match="URL returned error: 404") as e:
            kvikio.RemoteFile.open_s3(bucket, key)
        has(e, bucket, "404")


class _NoLengthHandler(http.server.BaseHTTPRequestHandler):
    """A WebHDFS name node whose FileStatus answer has no length."""

    def do_GET(self):  # noqa: N802 - the http.server API
        body = json.dumps({"FileStatus": {"type": "FILE"}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_webhdfs_status_without_length_says_cannot_extract_file_length():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoLengthHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/webhdfs/v1/home/user/file.bin"
        with pytest.raises(
            RuntimeError,
            match=re.escape("Regular expression search failed. Cannot extract file length from the JSON response."),
        ) as e:
            kvikio.RemoteFile.open_webhdfs(url)
        has(e, url, "GETFILESTATUS")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# ------------------------------------------------------------------------- bounce buffers


def test_bounce_buffer_free_returns_the_bytes_of_the_buffers_freed(tmp_path, cupy):
    """Upstream's accounting: one buffer used at bounce_buffer_size 1024 frees 1024 bytes
    (ours rounds the pinned block behind it to whole pages), then nothing is left."""
    path = tmp_path / "f.bin"
    kvikio.bounce_buffer_free()
    with kvikio.defaults.set({"compat_mode": kvikio.CompatMode.ON, "num_threads": 1}):
        with kvikio.CuFile(path, "w") as f:
            for size in (1024, 2048, 1 << 20):
                with kvikio.defaults.set("bounce_buffer_size", size):
                    a = cupy.arange(10)
                    assert f.write(a) == a.nbytes
                    assert kvikio.bounce_buffer_free() == size
                    assert kvikio.bounce_buffer_free() == 0
    assert np.array_equal(np.fromfile(path, dtype=np.int64), np.arange(10))
    assert os.path.getsize(path) == 80
