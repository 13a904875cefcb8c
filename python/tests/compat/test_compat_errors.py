"""Issue 13: every error upstream KvikIO 26.10 raises as RuntimeError / OverflowError /
KeyError / NotImplementedError is an instance of that class *and* of ours, with a message
that still names the file, offset, URL or value."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kvikio
import kvikio.cufile_driver
import kvikio.defaults
import kvikio.errors
import kvikio.numpy


def both(exc_info, upstream: type, ours: type, *parts: str) -> None:
    e = exc_info.value
    assert isinstance(e, upstream), type(e).__mro__
    assert isinstance(e, ours), type(e).__mro__
    for part in parts:
        assert part in str(e), (part, str(e))


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 40)
    return path


def test_missing_file_is_file_not_found_and_runtime_error(tmp_path):
    missing = tmp_path / "no" / "such.bin"
    with pytest.raises(RuntimeError) as info:
        kvikio.CuFile(missing, "r")
    both(info, RuntimeError, FileNotFoundError, str(missing))
    assert info.value.errno == 2
    assert isinstance(info.value, kvikio.errors.KvikioFileNotFoundError)
    with pytest.raises(FileNotFoundError) as info:
        kvikio.Mmap(missing)
    both(info, RuntimeError, FileNotFoundError, str(missing))
    with pytest.raises(RuntimeError) as info:
        kvikio.get_page_cache_info(missing)
    both(info, RuntimeError, FileNotFoundError, str(missing))


def test_open_a_directory_is_is_a_directory_and_runtime_error(tmp_path):
    with pytest.raises(RuntimeError) as info:
        kvikio.CuFile(tmp_path, "w")
    both(info, RuntimeError, OSError, str(tmp_path))


def test_write_to_read_only_handle_is_runtime_error(data_file):
    before = data_file.read_bytes()
    with kvikio.CuFile(data_file, "r") as f:
        with pytest.raises(RuntimeError) as info:
            f.write(np.zeros(16, np.uint8))
    assert isinstance(info.value, (OSError, ValueError))
    assert str(data_file) in str(info.value)
    assert data_file.read_bytes() == before


def test_io_on_closed_file_and_mapping(data_file):
    f = kvikio.CuFile(data_file, "r")
    f.close()
    with pytest.raises(RuntimeError) as info:
        f.read(np.empty(16, np.uint8))
    both(info, RuntimeError, ValueError, "closed", str(data_file))
    m = kvikio.Mmap(data_file)
    m.close()
    with pytest.raises(RuntimeError) as info:
        m.read(np.empty(16, np.uint8))
    both(info, RuntimeError, ValueError, "closed", str(data_file))
    assert isinstance(info.value, kvikio.errors.ClosedFileError)


def test_read_past_end_of_file_is_runtime_error(data_file):
    with kvikio.CuFile(data_file, "r") as f:
        with pytest.raises(RuntimeError) as info:
            f.read(np.empty(100, np.uint8), file_offset=os.path.getsize(data_file) - 10)
    assert str(os.path.getsize(data_file) - 10) in str(info.value) or str(data_file) in str(
        info.value
    )


@pytest.mark.parametrize(
    "url", ["ftp://host/file.bin", "not a url", "file:///etc/passwd", "gs://bucket/object"]
)
def test_bad_url_is_value_error_and_runtime_error(url):
    with pytest.raises(RuntimeError) as info:
        kvikio.RemoteFile.open(url)
    both(info, RuntimeError, ValueError, url.split("/")[0])
    assert isinstance(info.value, kvikio.errors.RemoteURLError)
    with pytest.raises(RuntimeError) as info:
        kvikio.infer_remote_endpoint_type(url)
    both(info, RuntimeError, ValueError)


def test_explicit_type_not_in_allow_list_is_runtime_error():
    with pytest.raises(RuntimeError) as info:
        kvikio.RemoteFile.open(
            "http://127.0.0.1:1/x",
            kvikio.RemoteEndpointType.HTTP,
            allow_list=[kvikio.RemoteEndpointType.WEBHDFS],
            nbytes=1,
        )
    both(info, RuntimeError, ValueError, "HTTP")


def test_remote_read_past_end_is_value_error_and_runtime_error(http_server):
    size = len(http_server.data("file.bin"))
    with kvikio.RemoteFile.open_http(http_server.url("file.bin")) as f:
        with pytest.raises(ValueError) as info:
            f.read(np.empty(100, np.uint8), file_offset=size - 10)
    both(info, RuntimeError, ValueError, str(size - 10))


@pytest.mark.parametrize("key", ["num_threads", "task_size", "gds_threshold", "bounce_buffer_size"])
def test_negative_setting_is_overflow_error_and_value_error(key):
    before = kvikio.defaults.get(key)
    with pytest.raises(OverflowError) as info:
        kvikio.defaults.set(key, -1)
    both(info, OverflowError, ValueError, key, "-1")
    assert isinstance(info.value, kvikio.errors.NegativeSettingError)
    assert kvikio.defaults.get(key) == before
    # Zero stays a plain ValueError, as upstream.
    if key in ("num_threads", "task_size"):
        with pytest.raises(ValueError) as info:
            kvikio.defaults.set(key, 0)
        assert not isinstance(info.value, OverflowError)


def test_negative_offset_is_overflow_error(data_file):
    with kvikio.CuFile(data_file, "r") as f:
        with pytest.raises(OverflowError, match="file_offset"):
            f.read(np.empty(16, np.uint8), file_offset=-1)


def test_set_called_wrongly_is_value_error_and_type_error():
    for module in (kvikio.defaults, kvikio.cufile_driver):
        with pytest.raises(ValueError) as info:
            module.set(1, 2, 3)
        both(info, ValueError, TypeError, "set()")


def test_read_only_driver_property_is_key_error_and_value_error():
    with pytest.raises(KeyError) as info:
        kvikio.cufile_driver.set("is_gds_available", True)
    both(info, KeyError, ValueError, "is_gds_available", "read-only")
    # A message, not a quoted key.
    assert str(info.value) == "cuFile driver property 'is_gds_available' is read-only"
    with pytest.raises(KeyError):
        kvikio.cufile_driver.set({"major_version": 1})


def test_unknown_settings_are_key_errors():
    with pytest.raises(KeyError, match="nope"):
        kvikio.defaults.set("nope", 1)
    with pytest.raises(KeyError, match="nope"):
        kvikio.defaults.get("nope")
    with pytest.raises(KeyError, match="nope"):
        kvikio.cufile_driver.get("nope")


def test_fromfile_text_is_not_implemented_and_value_error(data_file):
    with pytest.raises(NotImplementedError) as info:
        kvikio.numpy.fromfile(data_file, sep=",")
    both(info, NotImplementedError, ValueError, "','")


def test_deprecation_is_future_warning_and_deprecation_warning(monkeypatch):
    monkeypatch.setattr(kvikio.cufile, "drop_system_page_cache", lambda *a: True)
    with pytest.warns(FutureWarning) as record:
        assert kvikio.clear_page_cache() is True
    assert issubclass(record[0].category, DeprecationWarning)
    assert "drop_system_page_cache" in str(record[0].message)
