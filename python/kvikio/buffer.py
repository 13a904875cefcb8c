"""Registration of device buffers with cuFile, and the pooled bounce buffers."""

from __future__ import annotations

from typing import Any

from kvikio import _lib

__all__ = ["memory_register", "memory_deregister", "bounce_buffer_free"]


def memory_register(buf: Any) -> None:
    """Register the device memory of a buffer with cuFile (``cuFileBufRegister``).

    Registration speeds up repeated IO into the buffer. A no-op for host memory and when
    cuFile is not in use.

    Args:
        buf: A device buffer (``__cuda_array_interface__`` or DLPack); host buffers are
            ignored.
    """
    if _lib.is_device_buffer(buf):
        _lib.memory_register(buf)


def memory_deregister(buf: Any) -> None:
    """Undo :func:`memory_register` (a no-op for host memory).

    Args:
        buf: The buffer given to :func:`memory_register`.
    """
    if _lib.is_device_buffer(buf):
        _lib.memory_deregister(buf)


def bounce_buffer_free() -> int:
    """Free the pooled pinned bounce buffers.

    Returns:
        The number of bytes freed.
    """
    return int(_lib.bounce_buffer_free())
