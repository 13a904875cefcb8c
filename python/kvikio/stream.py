"""Registration of CUDA streams with cuFile's stream API."""

from __future__ import annotations

from typing import Any

from kvikio import _lib

__all__ = ["stream_register", "stream_deregister", "stream_handle"]


def stream_handle(stream: Any) -> int:
    """The ``CUstream`` handle of a stream object.

    Args:
        stream: An int handle, a CuPy (``.ptr``), Numba (``.handle``) or PyTorch
            (``.cuda_stream``) stream, or None for the default stream.

    Returns:
        The handle as an int (0 for the default stream).

    Raises:
        OverflowError: An int handle is negative.
        TypeError: ``stream`` is neither a stream nor a handle.
    """
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
    """Register a CUDA stream with cuFile (``cuFileStreamRegister``).

    Args:
        raw_stream: The stream: its handle or a stream object (see :func:`kvikio.stream.stream_handle`).
        flags: cuFile's stream flags (bit 0: offsets fixed at submission, bit 1: buffer
            offsets fixed, bit 2: sizes fixed, bit 3: 4 KiB aligned).

    Raises:
        TypeError: ``raw_stream`` is neither a stream nor a handle.
    """
    _lib.stream_register(stream_handle(raw_stream), flags)


def stream_deregister(raw_stream: Any) -> None:
    """Undo :func:`stream_register`.

    Args:
        raw_stream: The stream given to :func:`stream_register`.

    Raises:
        TypeError: ``raw_stream`` is neither a stream nor a handle.
    """
    _lib.stream_deregister(stream_handle(raw_stream))
