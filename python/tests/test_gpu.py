"""Device buffers: CuPy, Numba and PyTorch. Each test skips visibly without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import kvikio
import kvikio.defaults
import kvikio.numpy
from kvikio.mmap import Mmap


@pytest.fixture
def data_file(tmp_path, random_bytes):
    data = random_bytes(3 * (1 << 20) + 4097)
    path = tmp_path / "g.bin"
    path.write_bytes(data.tobytes())
    return path, data


@pytest.mark.parametrize("num_threads", [1, 4])
def test_cupy_round_trip(cupy, tmp_path, data_file, num_threads):
    path, data = data_file
    with kvikio.defaults.set({"num_threads": num_threads, "task_size": 1 << 20}):
        dev = cupy.asarray(data)
        with kvikio.CuFile(tmp_path / "w.bin", "w") as f:
            assert f.write(dev) == data.nbytes
        assert (tmp_path / "w.bin").read_bytes() == data.tobytes()
        out = cupy.zeros_like(dev)
        with kvikio.CuFile(path, "r") as f:
            assert f.pread(out[:1000], file_offset=0).get() == 1000
            assert f.pread(out[1000:], file_offset=1000).get() == data.nbytes - 1000
        np.testing.assert_array_equal(out.get(), data)


def test_cupy_small_request_below_gds_threshold(cupy, data_file):
    path, data = data_file
    out = cupy.zeros(1001, dtype=cupy.uint8)
    with kvikio.CuFile(path, "r") as f:
        assert f.read(out, file_offset=12345) == 1001
    np.testing.assert_array_equal(out.get(), data[12345:13346])


def test_cupy_raw_read_async_on_stream(cupy, data_file):
    path, data = data_file
    stream = cupy.cuda.Stream()
    out = cupy.zeros(8192, dtype=cupy.uint8)
    with kvikio.CuFile(path, "r") as f:
        fut = f.raw_read_async(out, stream, size=8192, file_offset=4096)
        stream.synchronize()
        assert fut.check_bytes_done() == 8192
        assert f.raw_read(out, size=100, file_offset=7, dev_offset=50) == 100
    expected = data[4096 : 4096 + 8192].copy()
    expected[50:150] = data[7:107]
    np.testing.assert_array_equal(out.get(), expected)


def test_cupy_raw_write_async_on_stream(cupy, tmp_path, random_bytes):
    data = random_bytes(10_007)
    dev = cupy.asarray(data)
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.Stream()
    path = tmp_path / "w.bin"
    with kvikio.CuFile(path, "w+") as f:
        fut = f.raw_write_async(dev, stream, size=6000, file_offset=0, dev_offset=1001)
        stream.synchronize()
        assert fut.check_bytes_done() == 6000
        assert f.raw_write(dev, size=1001, file_offset=6000) == 1001
    assert path.read_bytes() == data[1001:7001].tobytes() + data[:1001].tobytes()


def test_cupy_checks(cupy, data_file):
    path, _ = data_file
    with kvikio.CuFile(path, "r") as f:
        with pytest.raises(ValueError, match="not C-contiguous"):
            f.read(cupy.zeros(100, dtype=cupy.uint8)[::2])
        with pytest.raises(ValueError, match="size 101 is larger than the 100 bytes of the cupy"):
            f.read(cupy.zeros(100, dtype=cupy.uint8), size=101)


def test_cupy_mmap_and_numpy_helpers(cupy, tmp_path, data_file):
    path, data = data_file
    with Mmap(path) as m:
        out = cupy.zeros(4000, dtype=cupy.uint8)
        assert m.read(out, size=4000, offset=3) == 4000
        np.testing.assert_array_equal(out.get(), data[3:4003])
        assert m.pread(out, size=4000, offset=10).get() == 4000
        np.testing.assert_array_equal(out.get(), data[10:4010])
    a = cupy.arange(10_001, dtype=cupy.float32)
    kvikio.numpy.tofile(a, tmp_path / "a.bin")
    b = kvikio.numpy.fromfile(tmp_path / "a.bin", dtype=np.float32, like=cupy.empty(0))
    assert isinstance(b, cupy.ndarray)
    assert bool(cupy.all(a == b))


def test_cupy_memory_register(cupy, data_file):
    path, data = data_file
    out = cupy.zeros(data.nbytes, dtype=cupy.uint8)
    kvikio.memory_register(out)
    try:
        # The POSIX path: the read bounces through a pinned buffer, which stays pooled after.
        with kvikio.defaults.set("compat_mode", kvikio.CompatMode.ON):
            with kvikio.CuFile(path, "r") as f:
                assert f.read(out) == data.nbytes
    finally:
        kvikio.memory_deregister(out)
    np.testing.assert_array_equal(out.get(), data)
    freed = kvikio.bounce_buffer_free()
    assert freed >= kvikio.defaults.get("bounce_buffer_size"), freed
    assert kvikio.bounce_buffer_free() == 0  # the first call emptied the pool


def test_numba_round_trip(numba_cuda, tmp_path, data_file):
    path, data = data_file
    d_arr = numba_cuda.device_array(data.nbytes, dtype=np.uint8)
    with kvikio.CuFile(path, "r") as f:
        assert f.read(d_arr) == data.nbytes
    np.testing.assert_array_equal(d_arr.copy_to_host(), data)
    with kvikio.CuFile(tmp_path / "n.bin", "w") as f:
        f.write(numba_cuda.to_device(data[:5000]))
    assert (tmp_path / "n.bin").read_bytes() == data[:5000].tobytes()


def test_torch_cuda_round_trip(torch_cuda, tmp_path, data_file):
    torch = torch_cuda
    path, data = data_file
    t = torch.empty(data.nbytes, dtype=torch.uint8, device="cuda")
    with kvikio.CuFile(path, "r") as f:
        assert f.read(t) == data.nbytes
    np.testing.assert_array_equal(t.cpu().numpy(), data)
    with kvikio.CuFile(tmp_path / "t.bin", "w") as f:
        f.write(t[:4096])
    assert (tmp_path / "t.bin").read_bytes() == data[:4096].tobytes()
    with kvikio.CuFile(path, "r") as f, pytest.raises(ValueError, match="not C-contiguous"):
        f.read(torch.empty((64, 64), dtype=torch.uint8, device="cuda").t())


def test_torch_cpu_tensor_through_dlpack(tmp_path, random_bytes):
    torch = pytest.importorskip("torch", reason="needs torch (not installed here)")
    data = random_bytes(10_007)
    path = tmp_path / "c.bin"
    path.write_bytes(data.tobytes())
    t = torch.zeros(data.nbytes, dtype=torch.uint8)
    with kvikio.CuFile(path, "r") as f:
        assert f.read(t) == data.nbytes
    np.testing.assert_array_equal(t.numpy(), data)



# -- reliability audit #9: the producer's stream (CAI "stream", DLPack stream=) ------------

_SLOW_FILL = r"""
extern "C" __global__ void slow_fill(unsigned int* a, unsigned long long n, unsigned int seed,
                                     long long spin)
{
  long long start = clock64();
  while (clock64() - start < spin) { }
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    a[i] = (unsigned int)(i * 2654435761ull) ^ seed;
  }
}
"""


def _expected_fill(n: int, seed: int) -> np.ndarray:
    i = np.arange(n, dtype=np.uint64)
    return ((i * 2654435761) % (1 << 32)).astype(np.uint32) ^ np.uint32(seed)


def _slow_fill_on(cupy, stream, a, seed: int) -> None:
    """Queues on `stream` a kernel that spins for ~0.3 s, then fills `a` from `seed`."""
    kernel = cupy.RawKernel(_SLOW_FILL, "slow_fill")
    with stream:
        kernel((64,), (256,), (a, cupy.uint64(a.size), cupy.uint32(seed), cupy.int64(600_000_000)))


@pytest.mark.parametrize("num_threads", [1, 4])
def test_cupy_cai_stream_is_waited_for_before_write(cupy, tmp_path, num_threads):
    """Regression #9: a kernel still filling the array on a non-blocking stream must finish
    before kvikio copies the array out; the file holds the final values."""
    n = 1 << 22
    a = cupy.zeros(n, dtype=cupy.uint32)
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    _slow_fill_on(cupy, stream, a, 0xA5A5A5A5)
    path = tmp_path / "w.bin"
    with kvikio.defaults.set({"num_threads": num_threads, "task_size": 1 << 20}):
        with stream:
            assert a.__cuda_array_interface__["stream"] == stream.ptr
            assert not stream.done, "the kernel must still be running for the test to mean anything"
            with kvikio.CuFile(path, "w") as f:
                assert f.write(a) == a.nbytes
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.uint32), _expected_fill(n, 0xA5A5A5A5))


def test_cupy_cai_stream_is_waited_for_before_read(cupy, tmp_path, random_bytes):
    """A kernel still writing the array on its stream must not overwrite what kvikio reads."""
    n = 1 << 20
    data = np.frombuffer(random_bytes(4 * n).tobytes(), dtype=np.uint32)
    path = tmp_path / "r.bin"
    path.write_bytes(data.tobytes())
    a = cupy.zeros(n, dtype=cupy.uint32)
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    _slow_fill_on(cupy, stream, a, 0x5A5A5A5A)
    with stream:
        assert not stream.done
        with kvikio.CuFile(path, "r") as f:
            assert f.read(a) == a.nbytes
    cupy.cuda.Device().synchronize()
    np.testing.assert_array_equal(a.get(), data)


class _DLPackOnly:
    """Exposes a CuPy array through DLPack only (as JAX and others do), recording the
    arguments of __dlpack__."""

    def __init__(self, a):
        self.a = a
        self.kwargs = None

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        self.kwargs = kwargs
        return self.a.__dlpack__(**kwargs)


def test_dlpack_cuda_tensor_is_asked_for_the_legacy_stream(cupy, tmp_path):
    """Regression #9: __dlpack__ gets stream=1, so the producer orders its pending work
    before the legacy default stream that kvikio's IO follows."""
    n = 1 << 22
    a = cupy.zeros(n, dtype=cupy.uint32)
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    _slow_fill_on(cupy, stream, a, 0x3C3C3C3C)
    wrapped = _DLPackOnly(a)
    path = tmp_path / "d.bin"
    with stream:
        assert not stream.done
        with kvikio.CuFile(path, "w") as f:
            assert f.write(wrapped) == a.nbytes
    assert wrapped.kwargs["stream"] == 1
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.uint32), _expected_fill(n, 0x3C3C3C3C))


# Issue 28: the caller's ordering holds without declaring a stream. A write stores what was
# queued before the call on ANY stream of the context (kvikio waits for the context once per
# write request), and a read's destination is complete when read() or get() returns.
@pytest.mark.parametrize("nbytes", [4096, 3 << 20])
def test_write_waits_for_a_kernel_on_an_undeclared_non_blocking_stream(cupy, tmp_path, nbytes):
    n = nbytes // 4
    a = cupy.zeros(n, dtype=cupy.uint32)
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    _slow_fill_on(cupy, stream, a, 0x77777777)
    assert a.__cuda_array_interface__.get("stream") in (None, 1, 2), "no stream is declared"
    assert not stream.done, "the kernel must still be running for the test to mean anything"
    path = tmp_path / "w.bin"
    with kvikio.defaults.set({"num_threads": 4, "task_size": 1 << 20}):
        with kvikio.CuFile(path, "w") as f:
            assert f.pwrite(a).get() == a.nbytes
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.uint32), _expected_fill(n, 0x77777777))


def test_write_waits_for_a_kernel_on_cupys_default_stream(cupy, tmp_path):
    n = 1 << 20
    a = cupy.zeros(n, dtype=cupy.uint32)
    cupy.cuda.Device().synchronize()
    _slow_fill_on(cupy, cupy.cuda.Stream.null, a, 0x1234)
    path = tmp_path / "w.bin"
    with kvikio.CuFile(path, "w") as f:
        assert f.write(a) == a.nbytes
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.uint32), _expected_fill(n, 0x1234))


@pytest.mark.parametrize("nbytes", [4096, 3 << 20])
def test_write_waits_for_work_on_a_torch_side_stream(torch_cuda, tmp_path, nbytes):
    torch = torch_cuda
    t = torch.zeros(nbytes, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(600_000_000)
        t.fill_(0xAB)
    assert not side.query(), "the side stream must still be busy for the test to mean anything"
    path = tmp_path / "t.bin"
    with kvikio.CuFile(path, "w") as f:  # the side stream is not current here
        assert f.write(t) == nbytes
    assert path.read_bytes() == b"\xab" * nbytes


@pytest.mark.parametrize("nbytes", [4096, 300_000, 5 << 20])
def test_read_is_complete_for_any_stream_when_it_returns(cupy, tmp_path, random_bytes, nbytes):
    data = random_bytes(nbytes)
    path = tmp_path / "r.bin"
    path.write_bytes(data.tobytes())
    a = cupy.zeros(nbytes, dtype=cupy.uint8)
    cupy.cuda.Device().synchronize()
    other = cupy.cuda.Stream(non_blocking=True)
    with kvikio.CuFile(path, "r") as f:
        assert f.read(a) == nbytes
        with other:  # ordered after nothing of ours: only complete bytes may be seen
            b = a.copy()
        futures = [f.pread(a[i : i + 4096], file_offset=i) for i in range(0, min(nbytes, 1 << 20), 4096)]
        assert sum(fu.get() for fu in futures) == min(nbytes, 1 << 20)
        with other:
            c = a.copy()
    other.synchronize()
    np.testing.assert_array_equal(b.get(), data)
    np.testing.assert_array_equal(c.get(), data)
