"""KvikIO: file IO between storage and host or GPU memory.

A thin Python layer over the C++ library: :class:`CuFile` for local files,
:mod:`kvikio.defaults` and :mod:`kvikio.cufile_driver` for settings, :class:`kvikio.mmap.Mmap`,
the page-cache helpers, and buffer/stream registration. Buffers may be anything with the
buffer protocol (NumPy, bytearray), ``__cuda_array_interface__`` (CuPy, Numba) or DLPack
(PyTorch).
"""

from kvikio import cufile_driver, defaults, mmap, numpy
from kvikio._lib import CompatMode
from kvikio._lib import __version__ as __version__
from kvikio.buffer import bounce_buffer_free, memory_deregister, memory_register
from kvikio.cufile import (
    CuFile,
    IOFuture,
    IOFutureStream,
    clear_page_cache,
    drop_file_page_cache,
    drop_system_page_cache,
    get_page_cache_info,
)
from kvikio.remote_file import RemoteEndpointType, RemoteError, RemoteFile, is_remote_file_available
from kvikio.stream import stream_deregister, stream_register

__all__ = [
    "CompatMode",
    "CuFile",
    "IOFuture",
    "IOFutureStream",
    "RemoteEndpointType",
    "RemoteError",
    "RemoteFile",
    "__version__",
    "bounce_buffer_free",
    "clear_page_cache",
    "cufile_driver",
    "defaults",
    "drop_file_page_cache",
    "drop_system_page_cache",
    "get_page_cache_info",
    "is_remote_file_available",
    "memory_deregister",
    "memory_register",
    "mmap",
    "numpy",
    "stream_deregister",
    "stream_register",
]
