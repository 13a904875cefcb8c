"""kvikio.mmap.Mmap with host buffers."""

from __future__ import annotations

import numpy as np
import pytest

import kvikio
import kvikio.defaults
from kvikio.mmap import Mmap


@pytest.fixture
def data_file(tmp_path, random_bytes):
    data = random_bytes(100_003)
    path = tmp_path / "m.bin"
    path.write_bytes(data.tobytes())
    return path, data


def test_read_whole_and_parts(data_file):
    path, data = data_file
    with Mmap(path, flags="r") as m:
        assert m.file_size() == data.nbytes
        out = np.zeros_like(data)
        assert m.read(out) == data.nbytes
        np.testing.assert_array_equal(out, data)
        part = np.zeros(4000, dtype=np.uint8)
        assert m.read(part, size=4000, offset=777) == 4000
        np.testing.assert_array_equal(part, data[777:4777])
    assert m.closed


def test_pread_in_parallel(data_file):
    path, data = data_file
    with kvikio.defaults.set("num_threads", 4), Mmap(path) as m:
        out = np.zeros_like(data)
        fut = m.pread(out, task_size=4096)
        assert fut.get() == data.nbytes
        np.testing.assert_array_equal(out, data)
        floats = np.empty(1000, dtype=np.float32)
        assert m.pread(floats, size=4000, offset=0).get() == 4000
        assert floats.tobytes() == data[:4000].tobytes()


def test_initial_map_range(data_file):
    path, data = data_file
    with Mmap(path, initial_map_size=5000, initial_map_offset=1000) as m:
        out = np.zeros(100, dtype=np.uint8)
        m.read(out, size=100, offset=1100)
        np.testing.assert_array_equal(out, data[1100:1200])
        with pytest.raises(IndexError, match="m.bin"):
            m.read(out, size=100, offset=500)
        with pytest.raises(IndexError, match="5950"):
            m.read(out, size=100, offset=5950)


def test_out_of_range_read_raises_index_error(data_file):
    path, data = data_file
    with Mmap(path) as m:
        out = np.zeros(200_000, dtype=np.uint8)
        with pytest.raises(IndexError, match="m.bin"):
            m.read(out, size=100, offset=data.nbytes + 1)
        with pytest.raises(IndexError, match="100000"):
            m.read(out, size=200, offset=100_000)


def test_bad_arguments(data_file):
    path, data = data_file
    with Mmap(path) as m:
        small = np.zeros(10, dtype=np.uint8)
        with pytest.raises(ValueError, match="does not fit the 10-byte numpy.ndarray"):
            m.read(small)
        with pytest.raises(OverflowError, match="offset must not be negative, got -1"):
            m.read(small, size=5, offset=-1)
        ro = np.zeros(10, dtype=np.uint8)
        ro.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            m.read(ro, size=10)
    with pytest.raises(ValueError, match="closed"):
        m.read(small, size=5)
    with pytest.raises(ValueError, match="'w'"):
        Mmap(path, flags="w")
    with pytest.raises(FileNotFoundError, match="nope.bin"):
        Mmap(path.parent / "nope.bin")


def test_close_with_pread_in_flight_keeps_the_mapping(data_file):
    path, data = data_file
    with kvikio.defaults.set("num_threads", 4):
        m = Mmap(path)
        out = np.zeros_like(data)
        fut = m.pread(out, task_size=1024)
        m.close()  # the future still holds the mapping
        assert m.closed
        assert fut.get() == data.nbytes
        np.testing.assert_array_equal(out, data)
        futures = []
        for _ in range(10):
            m2 = Mmap(path)
            futures.append(m2.pread(np.zeros_like(data), task_size=512))
            del m2  # dropped with its pread in flight
        assert [f.get() for f in futures] == [data.nbytes] * 10
