"""The producer's stream (reliability audit #9): the CUDA Array Interface "stream" is
validated and synchronised before IO, and CUDA DLPack producers get stream=1. Without a GPU
this checks the argument handling (and, with the stand-in CUDA library, that the stream is
synchronised); test_gpu.py checks the ordering with real kernels."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kvikio

from test_object_arrays import FakeCuda  # noqa: E402


def test_cuda_array_interface_stream_zero_is_disallowed(tmp_path):
    """CAI v3: stream 0 is ambiguous (legacy or per-thread default) and disallowed."""
    path = tmp_path / "f.bin"
    path.write_bytes(b"abcd")
    buf = np.zeros(4, dtype=np.uint8)
    with kvikio.CuFile(path, "r+") as f:
        with pytest.raises(ValueError, match="FakeCuda __cuda_array_interface__ stream is 0"):
            f.read(FakeCuda(buf, stream=0))
        with pytest.raises(ValueError, match="stream is 0, which the CUDA Array Interface disallows"):
            f.write(FakeCuda(buf, stream=0))
        with pytest.raises(ValueError, match="stream -5 is not a CUDA stream handle"):
            f.read(FakeCuda(buf, stream=-5))
        with pytest.raises(TypeError, match="stream must be an integer or None, got '1'"):
            f.read(FakeCuda(buf, stream="1"))
        with pytest.raises(TypeError, match="stream must be an integer or None, got True"):
            f.read(FakeCuda(buf, stream=True))
    assert not buf.any()
    assert path.read_bytes() == b"abcd"


@pytest.mark.parametrize("stream", ["absent", None])
def test_cuda_array_interface_without_stream_needs_no_driver(tmp_path, stream):
    """No stream (or None): nothing to wait for, so this works without a CUDA driver."""
    path = tmp_path / "f.bin"
    path.write_bytes(b"abcd")
    buf = np.zeros(4, dtype=np.uint8)
    with kvikio.CuFile(path, "r") as f:
        assert f.read(FakeCuda(buf, stream=stream)) == 4
    assert buf.tobytes() == b"abcd"


def _standin_cuda() -> str | None:
    here = os.path.dirname(os.path.abspath(__file__))
    d = os.environ.get("KVIKIO_TEST_STANDIN_DIR") or os.path.join(here, "..", "..", "build", "tests")
    lib = os.path.join(d, "libkvikio_cuda_standin.so")
    return lib if os.path.exists(lib) else None


@pytest.mark.skipif(_standin_cuda() is None, reason="stand-in CUDA library not built (build/tests)")
@pytest.mark.parametrize("stream", [2, 0xDEAD00])
def test_cuda_array_interface_stream_is_synchronised_before_io(tmp_path, stream):
    """With the stand-in driver: a failing cuStreamSynchronize of the producer's stream shows
    that kvikio waits for that stream, before any IO (the file stays untouched)."""
    path = tmp_path / "f.bin"
    path.write_bytes(b"abcd")
    code = textwrap.dedent(
        f"""
        import ctypes, sys
        import numpy as np
        import kvikio
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_object_arrays import FakeCuda
        buf = np.frombuffer(bytearray(b"wxyz"), dtype=np.uint8)
        with kvikio.CuFile({str(path)!r}, "r+") as f:
            f.write(FakeCuda(buf, stream=None))  # no stream: no synchronisation
            standin = ctypes.CDLL({_standin_cuda()!r})
            standin.kvikio_standin_fail(b"cuStreamSynchronize", 1, 400)  # CUDA_ERROR_INVALID_HANDLE
            try:
                f.write(FakeCuda(np.frombuffer(bytearray(b"1234"), dtype=np.uint8), stream={stream}))
            except Exception as e:
                print(type(e).__name__, e)
        """
    )
    env = dict(os.environ, KVIKIO_LIBCUDA_PATH=_standin_cuda())
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "cuStreamSynchronize failed: CUDA_ERROR_INVALID_HANDLE" in r.stdout, r.stdout
    assert f"producer's stream {hex(stream)}" in r.stdout, r.stdout
    assert path.read_bytes() == b"wxyz"  # the second write never ran


@pytest.mark.skipif(_standin_cuda() is None, reason="stand-in CUDA library not built (build/tests)")
def test_legacy_default_stream_needs_no_synchronisation(tmp_path):
    """Stream 1 (CuPy's default) is not synchronised: kvikio's streams are blocking ones,
    ordered after it by CUDA. A failing cuStreamSynchronize does not stop the write."""
    path = tmp_path / "f.bin"
    path.write_bytes(b"abcd")
    code = textwrap.dedent(
        f"""
        import ctypes, sys
        import numpy as np
        import kvikio
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_object_arrays import FakeCuda
        with kvikio.CuFile({str(path)!r}, "r+") as f:
            standin = ctypes.CDLL({_standin_cuda()!r})
            standin.kvikio_standin_fail(b"cuStreamSynchronize", 1, 400)
            f.write(FakeCuda(np.frombuffer(bytearray(b"1234"), dtype=np.uint8), stream=1))
        """
    )
    env = dict(os.environ, KVIKIO_LIBCUDA_PATH=_standin_cuda())
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert path.read_bytes() == b"1234"


class FakeDLPack:
    """A DLPack producer over a NumPy array that claims `device_type` in __dlpack_device__
    and records the keyword arguments of each __dlpack__ call."""

    def __init__(self, arr, device_type, versioned=True):
        self.arr = arr
        self.device_type = device_type
        self.versioned = versioned
        self.calls = []

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def __dlpack__(self, **kwargs):
        self.calls.append(dict(kwargs))
        if "max_version" in kwargs and not self.versioned:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        kwargs.pop("stream", None)  # the capsule itself comes from NumPy (host memory)
        return self.arr.__dlpack__(**kwargs)


@pytest.mark.parametrize("versioned", [True, False])
def test_dlpack_cuda_producer_gets_the_legacy_stream(tmp_path, versioned):
    """Regression #9: a CUDA producer is asked for stream=1 (without it PyTorch does not
    synchronise at all); a CPU producer gets no stream."""
    data = np.arange(16, dtype=np.uint8)
    cuda = FakeDLPack(data, device_type=2, versioned=versioned)  # kDLCUDA
    with kvikio.CuFile(tmp_path / "f.bin", "w") as f:
        assert f.write(cuda) == 16
    assert all(call.get("stream") == 1 for call in cuda.calls), cuda.calls
    assert cuda.calls[-1] == ({"max_version": (1, 0), "stream": 1} if versioned else {"stream": 1})
    cpu = FakeDLPack(data, device_type=1)  # kDLCPU
    with kvikio.CuFile(tmp_path / "f.bin", "r+") as f:
        assert f.write(cpu) == 16
    assert cpu.calls == [{"max_version": (1, 0)}]
    assert (tmp_path / "f.bin").read_bytes() == data.tobytes()
