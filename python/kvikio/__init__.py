"""KvikIO: file IO between storage and host or GPU memory.

A thin Python layer over the C++ library: :class:`CuFile` for local files,
:mod:`kvikio.defaults` and :mod:`kvikio.cufile_driver` for settings, :class:`kvikio.mmap.Mmap`,
the page-cache helpers, and buffer/stream registration. Buffers may be anything with the
buffer protocol (NumPy, bytearray), ``__cuda_array_interface__`` (CuPy, Numba) or DLPack
(PyTorch).
"""

import atexit as _atexit
import os as _os

from kvikio import cufile_driver, defaults, errors, mmap, numpy, utils
from kvikio._lib import CompatMode
from kvikio._version import __git_commit__, __version__
from kvikio.buffer import bounce_buffer_free, memory_deregister, memory_register
from kvikio.cufile import (
    CuFile,
    IOFuture,
    IOFutureStream,
    clear_page_cache,
    drop_file_page_cache,
    drop_system_page_cache,
    get_page_cache_info,
    pread_batch,
    pwrite_batch,
)
from kvikio.mmap import Mmap
from kvikio.remote_file import (
    RemoteEndpointType,
    RemoteError,
    RemoteIOBackend,
    RemoteFile,
    infer_remote_endpoint_type,
    is_remote_file_available,
)
from kvikio.stream import stream_deregister, stream_register
from kvikio.utils import kvikio_deprecation_notice

# The library's log lines go to logging.getLogger("kvikio") (handlers, levels and format are
# the application's; with none configured, logging's last resort prints warnings and worse to
# stderr, as the library did). KVIKIO_LOG_FILE, when set, keeps them in that file.
if not _os.environ.get("KVIKIO_LOG_FILE"):
    from kvikio import _lib as _native

    _native._log_to_python(True)
    _atexit.register(_native._log_to_python, False)

__all__ = [
    "CompatMode",
    "CuFile",
    "IOFuture",
    "IOFutureStream",
    "Mmap",
    "RemoteEndpointType",
    "RemoteError",
    "RemoteIOBackend",
    "RemoteFile",
    "__git_commit__",
    "__version__",
    "bounce_buffer_free",
    "clear_page_cache",
    "cufile_driver",
    "defaults",
    "drop_file_page_cache",
    "drop_system_page_cache",
    "errors",
    "get_page_cache_info",
    "infer_remote_endpoint_type",
    "is_remote_file_available",
    "kvikio_deprecation_notice",
    "memory_deregister",
    "memory_register",
    "mmap",
    "numpy",
    "pread_batch",
    "pwrite_batch",
    "stream_deregister",
    "stream_register",
    "utils",
]
