"""CuFile with host memory: round trips, arguments, and every bad input."""

from __future__ import annotations

import array
import errno
import multiprocessing
import os
import re

import numpy as np
import pytest

import kvikio
import kvikio.defaults


def write_file(path, data: np.ndarray) -> None:
    path.write_bytes(data.tobytes())


@pytest.mark.parametrize("nbytes", [1, 4095, 4096, 1_000_003])
def test_write_then_read_round_trip(tmp_path, random_bytes, nbytes):
    data = random_bytes(nbytes)
    path = tmp_path / "f.bin"
    with kvikio.CuFile(path, "w") as f:
        assert f.write(data) == nbytes
    assert path.read_bytes() == data.tobytes()
    out = np.zeros_like(data)
    with kvikio.CuFile(path, "r") as f:
        assert f.read(out) == nbytes
    np.testing.assert_array_equal(out, data)


@pytest.mark.parametrize("num_threads", [1, 4])
def test_pread_pwrite_split_into_tasks(tmp_path, random_bytes, num_threads):
    data = random_bytes(3 * 65536 + 777)
    path = tmp_path / "f.bin"
    with kvikio.defaults.set({"num_threads": num_threads}):
        with kvikio.CuFile(path, "w") as f:
            fut = f.pwrite(data, task_size=65536 + 13)
            assert fut.get() == data.nbytes
        out = np.zeros_like(data)
        with kvikio.CuFile(path, "r") as f:
            futures = [
                f.pread(out[:100_000], task_size=4096),
                f.pread(out[100_000:], file_offset=100_000, task_size=10_001),
            ]
            assert [fu.get() for fu in futures] == [100_000, data.nbytes - 100_000]
            assert all(fu.done() for fu in futures)
    np.testing.assert_array_equal(out, data)


def test_odd_sizes_and_offsets(tmp_path, random_bytes):
    data = random_bytes(10_000)
    path = tmp_path / "f.bin"
    write_file(path, data)
    out = np.zeros(5000, dtype=np.uint8)
    with kvikio.CuFile(path, "r") as f:
        assert f.read(out, size=3333, file_offset=1234) == 3333
        np.testing.assert_array_equal(out[:3333], data[1234:4567])
        assert not out[3333:].any()  # nothing beyond size was written
        # Typed arrays: size and offset are in bytes, as in the seed's partial read.
        floats = np.empty(1000, dtype=np.float32)
        f.read(floats, size=4000, file_offset=4000)
        np.testing.assert_array_equal(floats.view(np.uint8), data[4000:8000])


def test_write_at_offset_keeps_other_bytes(tmp_path, random_bytes):
    data = random_bytes(8192)
    patch = random_bytes(1000)
    path = tmp_path / "f.bin"
    write_file(path, data)
    with kvikio.CuFile(path, "r+") as f:
        assert f.write(patch, file_offset=4001) == 1000
    expected = data.copy()
    expected[4001:5001] = patch
    assert path.read_bytes() == expected.tobytes()


def test_append_mode_writes_at_end(tmp_path, random_bytes):
    first, second = random_bytes(5000), random_bytes(3001)
    path = tmp_path / "f.bin"
    write_file(path, first)
    with kvikio.CuFile(path, "a") as f:
        assert f.write(second) == second.nbytes  # file_offset=None: append
        assert f.pwrite(second[:10]).get() == 10
    assert path.read_bytes() == first.tobytes() + second.tobytes() + second[:10].tobytes()


def test_w_plus_reads_back(tmp_path, random_bytes):
    data = random_bytes(12345)
    with kvikio.CuFile(tmp_path / "f.bin", "w+") as f:
        f.write(data)
        out = np.empty_like(data)
        assert f.read(out) == data.nbytes
    np.testing.assert_array_equal(out, data)


def test_buffer_kinds(tmp_path, random_bytes):
    data = random_bytes(4096 + 5)
    path = tmp_path / "f.bin"
    with kvikio.CuFile(path, "w") as f:
        f.write(bytes(data[:100]))  # bytes: read-only is fine for writes
        f.write(memoryview(data)[100:200].tobytes(), file_offset=100)
        f.write(bytearray(data[200:]), file_offset=200)
    assert path.read_bytes() == data.tobytes()
    with kvikio.CuFile(path, "r") as f:
        ba = bytearray(len(data))
        f.read(ba)
        assert bytes(ba) == data.tobytes()
        arr = array.array("B", bytes(len(data)))
        f.read(arr)
        assert arr.tobytes() == data.tobytes()
        mv = memoryview(bytearray(50))
        f.read(mv, file_offset=7)
        assert mv.tobytes() == data[7:57].tobytes()
        two_d = np.zeros((5, 7), dtype=np.uint8)
        f.read(two_d)
        np.testing.assert_array_equal(two_d.ravel(), data[:35])


class DLPackOnly:
    """Exposes memory only through __dlpack__ (as a CPU PyTorch tensor does)."""

    def __init__(self, arr):
        self.arr = arr

    def __dlpack__(self, *args, **kwargs):
        return self.arr.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


def test_dlpack_buffers(tmp_path, random_bytes):
    data = random_bytes(3000)
    path = tmp_path / "f.bin"
    with kvikio.CuFile(path, "w") as f:
        f.write(DLPackOnly(data))
    assert path.read_bytes() == data.tobytes()
    out = np.zeros(1500, dtype=np.uint16)
    with kvikio.CuFile(path, "r") as f:
        f.read(DLPackOnly(out))
    assert out.tobytes() == data.tobytes()
    ro = np.zeros(10, dtype=np.uint8)
    ro.flags.writeable = False
    if np.lib.NumpyVersion(np.__version__) >= "2.1.0":  # versioned DLPack carries read-only
        with kvikio.CuFile(path, "r") as f, pytest.raises(ValueError, match="read-only"):
            f.read(DLPackOnly(ro))
    strided = np.zeros(20, dtype=np.uint8)[::2]
    with kvikio.CuFile(path, "r") as f, pytest.raises(ValueError, match="not C-contiguous"):
        f.read(DLPackOnly(strided))


class FakeCudaArray:
    """A __cuda_array_interface__ over host memory, to test its parsing without a GPU.

    The bindings take it for device memory; libkvikio asks CUDA what the pointer is, sees
    host memory and does POSIX IO. So the device-only raw_read/raw_write can be run here."""

    def __init__(self, arr, readonly=False, strides=None):
        self.arr = arr
        self.__cuda_array_interface__ = {
            "shape": arr.shape,
            "typestr": arr.dtype.str,
            "data": (arr.ctypes.data, readonly),
            "strides": strides,
            "version": 3,
        }


def test_cuda_array_interface_checks(tmp_path, random_bytes):
    path = tmp_path / "f.bin"
    write_file(path, random_bytes(100))
    base = np.zeros(64, dtype=np.uint8)
    with kvikio.CuFile(path, "r") as f:
        with pytest.raises(ValueError, match="read-only .*FakeCudaArray"):
            f.read(FakeCudaArray(base, readonly=True))
        with pytest.raises(ValueError, match="not C-contiguous"):
            f.read(FakeCudaArray(base[:32], strides=(2,)))
        with pytest.raises(ValueError, match="size 65 is larger than the 64 bytes"):
            f.read(FakeCudaArray(base), size=65)


def test_raw_read_write_with_dev_offset(tmp_path, random_bytes):
    data = random_bytes(9000)
    path = tmp_path / "f.bin"
    with kvikio.CuFile(path, "w+") as f:
        assert f.raw_write(FakeCudaArray(data)) == 9000
        out = np.zeros(9100, dtype=np.uint8)
        dev = FakeCudaArray(out)
        assert f.raw_read(dev, size=5000, file_offset=123, dev_offset=50) == 5000
        np.testing.assert_array_equal(out[50:5050], data[123:5123])
        assert not out[:50].any() and not out[5050:].any()
        with pytest.raises(ValueError, match="size 9100 is larger than the 9050 bytes.*dev_offset 50"):
            f.raw_read(dev, size=9100, dev_offset=50)
        with pytest.raises(ValueError, match="dev_offset 9101 is beyond"):
            f.raw_read(dev, dev_offset=9101)


@pytest.mark.parametrize("method", ["raw_read", "raw_write", "raw_read_async", "raw_write_async"])
@pytest.mark.parametrize("kind", ["numpy.ndarray", "bytearray"])
def test_raw_methods_refuse_host_memory(tmp_path, random_bytes, method, kind):
    """raw_* are device-memory calls (as in libkvikio): host buffers are refused before any IO."""
    data = random_bytes(1000)
    path = tmp_path / "f.bin"
    write_file(path, data)
    buf = bytearray(100) if kind == "bytearray" else np.zeros(100, dtype=np.uint8)
    args = (buf, None) if method.endswith("_async") else (buf,)  # None: the default stream
    expected = rf"CuFile\.{method} of '.*f\.bin' takes device memory only .*host memory \({kind}\)"
    with kvikio.CuFile(path, "r+") as f, pytest.raises(ValueError, match=expected):
        getattr(f, method)(*args, size=100, file_offset=0)
    assert not any(buf)  # nothing was read into it
    assert path.read_bytes() == data.tobytes()  # nor written from it


def test_file_properties(tmp_path, random_bytes):
    path = tmp_path / "f.bin"
    write_file(path, random_bytes(777))
    f = kvikio.CuFile(str(path), "r")
    assert not f.closed
    assert f.nbytes() == 777
    assert f.fileno() >= 0
    assert os.fstat(f.fileno()).st_size == 777
    assert f.open_flags() & os.O_ACCMODE == os.O_RDONLY
    f.close()
    assert f.closed
    f.close()  # idempotent
    with pytest.raises(ValueError, match="closed file '.*f.bin'"):
        f.fileno()
    with pytest.raises(ValueError, match="closed file '.*f.bin'"):
        f.read(np.empty(10, dtype=np.uint8))
    with kvikio.CuFile(path, "r+") as g:
        assert g.open_flags() & os.O_ACCMODE == os.O_RDWR
    assert g.closed


def test_iofuture_get_twice_is_an_error(tmp_path, random_bytes):
    path = tmp_path / "f.bin"
    write_file(path, random_bytes(100))
    with kvikio.CuFile(path, "r") as f:
        fut = f.pread(np.empty(100, dtype=np.uint8))
        assert fut.get() == 100
        assert fut.done()
        with pytest.raises(RuntimeError, match="already called .*100 bytes"):
            fut.get()


def test_dropped_future_waits_for_its_io(tmp_path, random_bytes):
    data = random_bytes(1 << 20)
    path = tmp_path / "f.bin"
    write_file(path, data)
    with kvikio.defaults.set("num_threads", 4), kvikio.CuFile(path, "r") as f:
        for _ in range(20):
            buf = np.zeros_like(data)
            # Dropped at once: its destructor waits for the 256 reads, so that they never write
            # into a buffer the caller has let go, and the bytes are all there when it returns.
            f.pread(buf, task_size=4096)
            np.testing.assert_array_equal(buf, data)


# ---- errors ----------------------------------------------------------------------------


def test_missing_file_raises_file_not_found(tmp_path):
    path = tmp_path / "missing.bin"
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        kvikio.CuFile(path, "r")


def test_directory_raises_oserror(tmp_path):
    with pytest.raises(OSError, match=str(tmp_path)):
        kvikio.CuFile(tmp_path, "r")


@pytest.mark.parametrize("flags", ["x", "rw", "", "+", "q+"])
def test_bad_flags_raise_value_error(tmp_path, flags):
    with pytest.raises(ValueError, match=re.escape(f"'{flags}'")):
        kvikio.CuFile(tmp_path / "f.bin", flags)


def test_wrong_direction_raises_value_error(tmp_path, random_bytes):
    path = tmp_path / "f.bin"
    write_file(path, random_bytes(100))
    with kvikio.CuFile(path, "r") as f, pytest.raises(ValueError, match="read-only.*f.bin|f.bin.*read-only"):
        f.write(random_bytes(10))
    with kvikio.CuFile(path, "a") as f, pytest.raises(ValueError, match="f.bin"):
        f.read(np.empty(10, dtype=np.uint8))


def test_read_past_end_raises_runtime_error(tmp_path, random_bytes):
    path = tmp_path / "f.bin"
    write_file(path, random_bytes(100))
    with kvikio.CuFile(path, "r") as f:
        with pytest.raises(RuntimeError, match="f.bin"):
            f.read(np.empty(200, dtype=np.uint8))
        with pytest.raises(RuntimeError, match="f.bin"):
            f.pread(np.empty(50, dtype=np.uint8), file_offset=80).get()
        with pytest.raises(RuntimeError, match="f.bin"):
            f.raw_read(FakeCudaArray(np.empty(50, dtype=np.uint8)), file_offset=80)


@pytest.mark.parametrize("method", ["read", "pread", "write", "pwrite", "raw_read", "raw_write"])
def test_negative_arguments_raise_overflow_error(tmp_path, method):
    buf = np.zeros(16, dtype=np.uint8)
    if method.startswith("raw_"):
        buf = FakeCudaArray(buf)  # device memory only
    with kvikio.CuFile(tmp_path / "f.bin", "w+") as f:
        fn = getattr(f, method)
        with pytest.raises(OverflowError, match="file_offset must not be negative, got -1"):
            fn(buf, file_offset=-1)
        with pytest.raises(OverflowError, match="size must not be negative, got -5"):
            fn(buf, size=-5)
    assert (tmp_path / "f.bin").stat().st_size == 0  # nothing was written


def test_negative_task_size_and_dev_offset(tmp_path):
    buf = np.zeros(16, dtype=np.uint8)
    with kvikio.CuFile(tmp_path / "f.bin", "w+") as f:
        with pytest.raises(OverflowError, match="task_size must not be negative, got -3"):
            f.pread(buf, task_size=-3)
        with pytest.raises(ValueError, match="task_size"):
            f.pwrite(buf, task_size=0)
        with pytest.raises(OverflowError, match="dev_offset must not be negative, got -2"):
            f.raw_read(FakeCudaArray(buf), dev_offset=-2)


def test_size_larger_than_buffer_is_refused_before_io(tmp_path, random_bytes):
    path = tmp_path / "f.bin"
    data = random_bytes(1000)
    write_file(path, data)
    buf = np.zeros(100, dtype=np.uint8)
    with kvikio.CuFile(path, "r+") as f:
        with pytest.raises(ValueError, match="size 101 is larger than the 100 bytes of the numpy.ndarray"):
            f.read(buf, size=101)
        with pytest.raises(ValueError, match="size 500 is larger than the 100 bytes"):
            f.pwrite(buf, size=500)
    assert path.read_bytes() == data.tobytes()
    assert not buf.any()


def test_read_only_and_strided_buffers_are_refused(tmp_path, random_bytes):
    path = tmp_path / "f.bin"
    write_file(path, random_bytes(1000))
    ro = np.zeros(100, dtype=np.uint8)
    ro.flags.writeable = False
    with kvikio.CuFile(path, "r") as f:
        with pytest.raises(ValueError, match="read-only numpy.ndarray"):
            f.read(ro)
        with pytest.raises(ValueError, match="read-only bytes"):
            f.pread(b"0123456789")
        with pytest.raises(ValueError, match="not C-contiguous"):
            f.read(np.zeros(100, dtype=np.uint8)[::2])
        with pytest.raises(ValueError, match="not C-contiguous"):
            f.read(np.zeros((10, 10), dtype=np.uint8).T)


def test_non_buffer_raises_type_error(tmp_path):
    with kvikio.CuFile(tmp_path / "f.bin", "w") as f:
        with pytest.raises(TypeError, match="got list"):
            f.write([1, 2, 3])
        with pytest.raises(TypeError, match="size must be an integer, got '10'"):
            f.write(b"abc", size="10")


def test_huge_offset_overflows(tmp_path):
    with kvikio.CuFile(tmp_path / "f.bin", "w+") as f:
        with pytest.raises(OverflowError, match=str(2**64)):
            f.read(np.zeros(1, dtype=np.uint8), file_offset=2**64)
        with pytest.raises(OverflowError, match=str(2**63)):
            f.write(b"x", file_offset=2**63)


def test_gil_is_released_during_io(tmp_path, random_bytes):
    """A Python thread keeps running while another one waits on a large read."""
    import threading
    import time

    data = random_bytes(64 << 20)
    path = tmp_path / "big.bin"
    write_file(path, data)
    ticks = 0
    stop = threading.Event()

    def spin():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0)

    t = threading.Thread(target=spin)
    t.start()
    out = np.empty_like(data)
    with kvikio.CuFile(path, "r") as f:
        before = ticks
        for _ in range(5):
            f.read(out)
        during = ticks - before
    stop.set()
    t.join()
    assert during > 0
    np.testing.assert_array_equal(out, data)


def test_close_during_blocking_io_in_another_thread(tmp_path, random_bytes):
    """close() while another thread is inside a blocking call: that call finishes on its
    own hold of the file; later calls get the closed-file error."""
    import threading

    data = random_bytes(32 << 20)
    path = tmp_path / "big.bin"
    write_file(path, data)
    f = kvikio.CuFile(path, "r")
    out = np.empty_like(data)
    results = []

    def reader():
        for _ in range(20):
            try:
                results.append(f.raw_read(FakeCudaArray(out)))
            except ValueError as e:
                results.append(str(e))

    t = threading.Thread(target=reader)
    t.start()
    f.close()
    t.join()
    assert results[0] == data.nbytes or "closed file" in results[0]
    assert all(r == data.nbytes or "closed file" in r for r in results)
    if data.nbytes in results:
        np.testing.assert_array_equal(out, data)


class HostArrayWithCAI(np.ndarray):
    """Has the buffer protocol (inherited) and a __cuda_array_interface__, as a CuPy array
    does (CuPy's buffer protocol refuses device memory): the interface must win."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str,
                "data": (self.ctypes.data, True), "strides": None, "version": 3}


def test_cuda_array_interface_is_preferred_over_the_buffer_protocol(tmp_path, random_bytes):
    path = tmp_path / "f.bin"
    write_file(path, random_bytes(100))
    arr = np.zeros(64, dtype=np.uint8).view(HostArrayWithCAI)
    with kvikio.CuFile(path, "r") as f, pytest.raises(ValueError, match="read-only .*HostArrayWithCAI"):
        f.read(arr)  # read-only only through the interface


# ---- regressions of the reliability audit (each name keeps its finding) ----


def test_audit5b_close_reports_a_failing_close_as_oserror(tmp_path):
    """Audit #5(b): a failing close(2) was swallowed; io.FileIO.close() raises OSError."""
    path = tmp_path / "close.bin"
    f = kvikio.CuFile(path, "w")
    os.close(f.fileno())  # the descriptor vanishes behind the handle's back: EBADF
    with pytest.raises(OSError, match="close.bin") as info:
        f.close()
    assert info.value.errno == errno.EBADF
    assert f.closed
    f.close()  # idempotent, and silent once closed


def test_fsync_flushes_and_refuses_a_closed_file(tmp_path):
    path = tmp_path / "sync.bin"
    data = np.arange(10000, dtype=np.uint32)
    with kvikio.CuFile(path, "w") as f:
        f.write(data)
        f.fsync()
    assert path.read_bytes() == data.tobytes()
    with pytest.raises(ValueError, match="closed"):
        f.fsync()


def _child_reads(path: str, expected: bytes, queue) -> None:
    out = np.zeros(len(expected), dtype=np.uint8)
    with kvikio.CuFile(path, "r") as f:
        n = f.pread(out, task_size=64 * 1024).get()
    queue.put((n, out.tobytes() == expected))


def test_audit4_pread_in_a_forked_child_after_the_parent_used_the_pool(tmp_path):
    """Audit #4: the child's IOFuture.get() never returned (the pool had no threads)."""
    data = np.random.default_rng(4).integers(0, 256, 3 * 2**20 + 5, dtype=np.uint8)
    path = tmp_path / "fork.bin"
    path.write_bytes(data.tobytes())
    with kvikio.defaults.set({"num_threads": 4}):
        out = np.zeros_like(data)
        with kvikio.CuFile(path, "r") as f:
            assert f.pread(out, task_size=64 * 1024).get() == data.nbytes
        np.testing.assert_array_equal(out, data)
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        proc = ctx.Process(target=_child_reads, args=(str(path), data.tobytes(), queue))
        proc.start()
        proc.join(60)
        if proc.is_alive():
            proc.kill()
            proc.join()
            pytest.fail("the forked child hung")
        assert proc.exitcode == 0
        assert queue.get(timeout=5) == (data.nbytes, True)


def test_audit10_tiny_task_size_reads_in_bounded_memory(tmp_path):
    """Audit #10: task_size=1 queued one task per byte (about 150 bytes of memory each)."""
    data = np.random.default_rng(10).integers(0, 256, 64 * 2**20, dtype=np.uint8)
    path = tmp_path / "tiny.bin"
    path.write_bytes(data.tobytes())
    out = np.zeros_like(data)
    with kvikio.defaults.set({"num_threads": 4}):
        with kvikio.CuFile(path, "r") as f:
            assert f.pread(out, task_size=1).get() == data.nbytes
    np.testing.assert_array_equal(out, data)
