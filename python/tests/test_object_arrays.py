"""Object arrays are not plain data (reliability audit #3): reading into one would turn file
bytes into PyObject pointers (a crash), writing one would store heap addresses. Refused with
TypeError (kvikio.numpy.fromfile: ValueError, as numpy.fromfile)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import kvikio
import kvikio.numpy

class FakeCuda:
    """A __cuda_array_interface__ (v3) over host memory, with a chosen stream/typestr."""

    def __init__(self, arr, stream="absent", typestr=None):
        self.arr = arr
        self.__cuda_array_interface__ = {
            "shape": arr.shape,
            "typestr": typestr or arr.dtype.str,
            "data": (arr.ctypes.data, False),
            "strides": None,
            "version": 3,
        }
        if stream != "absent":
            self.__cuda_array_interface__["stream"] = stream


@pytest.fixture
def ints_file(tmp_path):
    path = tmp_path / "ints.bin"
    path.write_bytes(np.arange(4, dtype=np.int64).tobytes())
    return path


@pytest.mark.parametrize("method", ["read", "pread"])
def test_reading_into_object_array_raises_type_error(ints_file, method):
    """Regression #3: the file's bytes used to land in the PyObject pointers (a segfault)."""
    a = np.empty(4, dtype=object)
    with kvikio.CuFile(ints_file, "r") as f:
        with pytest.raises(TypeError, match=r"cannot read into a numpy\.ndarray of format 'O'"):
            getattr(f, method)(a)
    assert all(x is None for x in a)  # untouched: still the None that np.empty puts there
    repr(a)  # would crash had the pointers been overwritten


def test_reading_into_structured_array_with_object_field_raises(ints_file):
    a = np.empty(2, dtype=[("O1", np.int32), ("obj", object)])
    with kvikio.CuFile(ints_file, "r") as f:
        with pytest.raises(TypeError, match=r"format 'T\{.*O:obj:"):
            f.read(a)


def test_field_names_with_capital_o_are_plain_data(ints_file):
    """Only item codes count: a field named 'O...' is not an object field."""
    a = np.zeros(4, dtype=[("Obj", np.int64)])
    with kvikio.CuFile(ints_file, "r") as f:
        assert f.read(a) == 32
    np.testing.assert_array_equal(a["Obj"], np.arange(4))


@pytest.mark.parametrize("method", ["write", "pwrite"])
def test_writing_object_array_raises_type_error(tmp_path, method):
    """Regression #3: writing used to store the objects' heap addresses in the file."""
    path = tmp_path / "out.bin"
    a = np.array([object(), "x"], dtype=object)
    with kvikio.CuFile(path, "w") as f:
        with pytest.raises(TypeError, match=r"cannot write a numpy\.ndarray of format 'O'"):
            fut = getattr(f, method)(a)
            if method == "pwrite":
                fut.get()
    assert path.read_bytes() == b""


def test_reading_into_ctypes_pointer_array_raises_type_error(ints_file):
    ptrs = (ctypes.POINTER(ctypes.c_int) * 2)()
    assert "&" in memoryview(ptrs).format
    with kvikio.CuFile(ints_file, "r") as f:
        with pytest.raises(TypeError, match="pointers, not plain data"):
            f.read(ptrs)
    assert not ptrs[0] and not ptrs[1]  # still null pointers


def test_writing_ctypes_pointer_array_is_allowed(tmp_path):
    """Pointers are refused for reads only: writing them is the caller's choice."""
    ptrs = (ctypes.c_void_p * 2)(None, None)
    with kvikio.CuFile(tmp_path / "p.bin", "w") as f:
        assert f.write(ptrs) == 2 * ctypes.sizeof(ctypes.c_void_p)


def test_cuda_array_interface_object_typestr_is_refused(tmp_path):
    arr = np.zeros(2, dtype=np.int64)
    fake = FakeCuda(arr, typestr="|O8")
    with kvikio.CuFile(tmp_path / "f.bin", "w+") as f:
        with pytest.raises(TypeError, match="FakeCuda of format '|O8'"):
            f.write(fake)
        with pytest.raises(TypeError, match="cannot read into"):
            f.read(fake)


def test_numpy_fromfile_object_dtype_raises_value_error_like_numpy(ints_file):
    """Regression #3: kvikio.numpy.fromfile(dtype=object) built a crashing object array."""
    with pytest.raises(ValueError, match="Cannot read into object array") as expected:
        np.fromfile(ints_file, dtype=object)
    with pytest.raises(ValueError, match="Cannot read into object array") as got:
        kvikio.numpy.fromfile(ints_file, dtype=object)
    assert str(got.value) == str(expected.value)
    with pytest.raises(ValueError, match="Cannot read into object array"):
        kvikio.numpy.fromfile(ints_file, dtype=[("a", np.int64), ("b", object)])


def test_numpy_tofile_object_array_raises_and_keeps_the_file(tmp_path):
    path = tmp_path / "keep.bin"
    path.write_bytes(b"old contents")
    with pytest.raises(TypeError, match="cannot write object arrays"):
        kvikio.numpy.tofile(np.array([1, "a"], dtype=object), path)
    assert path.read_bytes() == b"old contents"  # refused before "w" truncated it
