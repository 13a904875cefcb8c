"""Page cache helpers, numpy helpers, registration calls and version."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

import kvikio
import kvikio.numpy


def test_version():
    assert isinstance(kvikio.__version__, str)
    assert kvikio.__version__.count(".") == 2


def test_page_cache_info_and_drop(tmp_path, random_bytes):
    path = tmp_path / "p.bin"
    path.write_bytes(random_bytes(5 * 4096).tobytes())
    cached, total = kvikio.get_page_cache_info(path)
    assert total == 5 and 0 <= cached <= total
    kvikio.drop_file_page_cache(str(path))
    with open(path, "rb") as f:
        assert kvikio.get_page_cache_info(f)[1] == 5
        assert kvikio.get_page_cache_info(f.fileno())[1] == 5
    with pytest.raises(FileNotFoundError, match="absent.bin"):
        kvikio.get_page_cache_info(tmp_path / "absent.bin")
    with pytest.raises(FileNotFoundError, match="absent.bin"):
        kvikio.drop_file_page_cache(tmp_path / "absent.bin")


def test_clear_page_cache_is_deprecated(monkeypatch):
    calls = []
    monkeypatch.setattr(kvikio.cufile, "drop_system_page_cache", lambda *a: calls.append(a))
    with pytest.warns(DeprecationWarning, match="drop_system_page_cache"):
        kvikio.clear_page_cache()
    assert calls == [(True, True)]


def test_numpy_fromfile_tofile(tmp_path, rng):
    a = rng.standard_normal(10_001).astype(np.float32)
    path = tmp_path / "n.bin"
    kvikio.numpy.tofile(a, path)
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.float32), a)
    b = kvikio.numpy.fromfile(path, dtype=np.float32)
    np.testing.assert_array_equal(b, a)
    c = kvikio.numpy.fromfile(str(path), dtype=np.float32, count=100, offset=40)
    np.testing.assert_array_equal(c, a[10:110])
    d = kvikio.numpy.fromfile(path, dtype="f4", like=np.empty(0))
    assert isinstance(d, np.ndarray)
    np.testing.assert_array_equal(d, a)
    with pytest.raises(ValueError, match="sep"):
        kvikio.numpy.fromfile(path, sep=",")
    # A count beyond the file is cut to the file, as upstream and numpy.fromfile (issue 13).
    np.testing.assert_array_equal(kvikio.numpy.fromfile(path, dtype=np.float32, count=20_000), a)
    with pytest.raises(FileNotFoundError, match="absent"):
        kvikio.numpy.fromfile(tmp_path / "absent")


def test_registration_calls_on_host_memory():
    buf = np.zeros(4096, dtype=np.uint8)
    kvikio.memory_register(buf)
    kvikio.memory_deregister(buf)
    kvikio.bounce_buffer_free()  # whatever earlier tests left pooled
    assert kvikio.bounce_buffer_free() == 0  # nothing is left to free, nor was allocated
    with pytest.raises(TypeError, match="stream"):
        kvikio.stream_register("not a stream", 0)
    with pytest.raises(OverflowError, match="-1"):
        kvikio.stream_deregister(-1)


def test_remote_file_is_available():
    # The behaviour itself is tested in test_remote.py against loopback servers.
    assert kvikio.is_remote_file_available() is True
    assert issubclass(kvikio.RemoteError, RuntimeError)


def test_stubs_ship_with_the_package():
    pkg = os.path.dirname(kvikio.__file__)
    assert os.path.exists(os.path.join(pkg, "_lib.pyi"))
    assert os.path.exists(os.path.join(pkg, "py.typed"))
