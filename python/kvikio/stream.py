"""Registration of CUDA streams with cuFile's stream API."""

from __future__ import annotations

from typing import Any

from kvikio import _lib

__all__ = ["stream_register", "stream_deregister", "stream_handle"]


def stream_handle(stream: Any) -> int:
    """The ``CUstream`` handle of ``stream``: an int, or a CuPy (``.ptr``), Numba
    (``.handle``) or PyTorch (``.cuda_stream``) stream. ``None`` is the default stream (0)."""
    if stream is None:
        return 0
    if isinstance(stream, int) and not isinstance(stream, bool):
        if stream < 0:
            raise OverflowError(f"stream handle must not be negative, got {stream}")
        return stream
    for attr in ("ptr", "cuda_stream"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    handle = getattr(stream, "handle", None)
    if handle is not None:
        value = getattr(handle, "value", handle)  # numba: a ctypes c_void_p
        return int(value or 0)
    raise TypeError(f"expected a CUDA stream or its handle, got {type(stream).__name__}")


def stream_register(raw_stream: Any, flags: int) -> None:
    """Register CUDA stream ``raw_stream`` (its handle, or a stream object) with cuFile
    (``cuFileStreamRegister``) with ``flags``."""
    _lib.stream_register(stream_handle(raw_stream), flags)


def stream_deregister(raw_stream: Any) -> None:
    """Undo :func:`stream_register`."""
    _lib.stream_deregister(stream_handle(raw_stream))
