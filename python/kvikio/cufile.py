"""Local file IO: :class:`CuFile` and the page-cache helpers."""

from __future__ import annotations

import os
from typing import Any, Iterable, Optional, Union

from kvikio import _lib
from kvikio.stream import stream_handle
from kvikio.utils import kvikio_deprecation_notice

IOFuture = _lib.IOFuture
"""The result of :meth:`CuFile.pread`/:meth:`CuFile.pwrite`: ``get()`` waits and returns the
bytes moved (or raises the IO's error); ``done()`` says whether it finished. ``get()`` may be
called once."""

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "CuFile",
    "IOFuture",
    "pread_batch",
    "pwrite_batch",
    "IOFutureStream",
    "get_page_cache_info",
    "drop_file_page_cache",
    "drop_system_page_cache",
    "clear_page_cache",
]


IOFutureStream = _lib.StreamIOFuture
"""The result of :meth:`CuFile.raw_read_async`/:meth:`CuFile.raw_write_async`:
``check_bytes_done()`` waits for the stream to reach the IO and returns the bytes moved (or
raises the IO's error). It holds the buffer until dropped."""


class CuFile:
    """A local file opened for IO between storage and host or device memory.

    ``flags``: ``"r"`` read, ``"w"`` create/truncate and write, ``"a"`` create and append,
    with ``"+"`` for reading and writing (``"r+"``, ``"w+"``, ``"a+"``). A missing file
    raises ``FileNotFoundError``, bad flags ``ValueError``.

    Buffers may be NumPy arrays or anything with the buffer protocol, CuPy/Numba arrays
    (``__cuda_array_interface__``) or DLPack tensors (PyTorch). ``size`` defaults to the
    whole buffer and must fit in it; offsets and sizes must not be negative
    (``OverflowError``). Reading past the end of the file raises ``RuntimeError``. The
    ``raw_*`` methods take device memory only.
    """

    def __init__(self, file: PathLike, flags: str = "r") -> None:
        self._handle = _lib.FileHandle(os.fspath(file), flags)

    # -- life cycle -------------------------------------------------------------------
    def close(self) -> None:
        """Close the file (idempotent). IO already queued still completes.

        Raises ``OSError`` when the operating system reports an error on close (for example
        a write-back error on NFS), as :meth:`io.FileIO.close` does; the file is closed
        either way. Errors of a close deferred by queued IO cannot be reported.
        """
        self._handle.close()

    def fsync(self) -> None:
        """Wait until the file's data and metadata are on stable storage (``fsync(2)``).

        ``OSError`` on failure, ``ValueError`` on a closed file.
        """
        self._handle.fsync()

    @property
    def closed(self) -> bool:
        """True once the file is closed."""
        return self._handle.closed

    def fileno(self) -> int:
        """The file descriptor. ``ValueError`` on a closed file."""
        return self._handle.fileno()

    def open_flags(self) -> int:
        """The ``open(2)`` flags of the file descriptor."""
        return self._handle.open_flags()

    def nbytes(self) -> int:
        """The current size of the file in bytes."""
        return self._handle.nbytes()

    def __enter__(self) -> "CuFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<kvikio.CuFile {self._handle.path!r} ({state})>"

    # -- parallel IO --------------------------------------------------------------------
    def pread(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: int = 0,
        task_size: Optional[int] = None,
    ) -> IOFuture:
        """Read ``size`` bytes at ``file_offset`` into ``buf`` in parallel; non-blocking.

        The request is split into ``task_size`` pieces (default: the ``task_size``
        setting) run on the shared thread pool. Keep ``buf`` unchanged until ``get()``."""
        return self._handle.pread(buf, size, file_offset, task_size)

    def pwrite(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: Optional[int] = None,
        task_size: Optional[int] = None,
    ) -> IOFuture:
        """Write ``size`` bytes of ``buf`` at ``file_offset`` in parallel; non-blocking.

        ``file_offset=None`` writes at 0, or at the end of the file when opened with ``"a"``."""
        return self._handle.pwrite(buf, size, file_offset, task_size)

    def pread_batch(self, requests: Iterable[tuple]) -> IOFuture:
        """Read many ``(buf, size, file_offset)`` requests of this file in one call;
        non-blocking. ``size`` None reads the whole buffer. Every request is checked before
        any IO; ``get()`` returns the total bytes read (a read reaching the end of the file
        stops there: a short count, not an error) or raises the first failed request's error
        once every request finished. Host buffers use io_uring or the thread pool (the
        ``batch_backend`` setting), device buffers the usual device path."""
        return self._handle.pread_batch(requests)

    def pwrite_batch(self, requests: Iterable[tuple]) -> IOFuture:
        """Write many ``(buf, size, file_offset)`` requests to this file in one call; see
        :meth:`pread_batch`. ``file_offset`` defaults to 0."""
        return self._handle.pwrite_batch(requests)

    def read(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: int = 0,
        task_size: Optional[int] = None,
    ) -> int:
        """Like :meth:`pread` but blocking; returns the bytes read."""
        return self._handle.read(buf, size, file_offset, task_size)

    def write(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: Optional[int] = None,
        task_size: Optional[int] = None,
    ) -> int:
        """Like :meth:`pwrite` but blocking; returns the bytes written."""
        return self._handle.write(buf, size, file_offset, task_size)

    def is_direct_io_supported(self) -> bool:
        """Whether this file's descriptor was opened with ``O_DIRECT`` (Direct IO usable)."""
        return self._handle.is_direct_io_supported()

    # -- single-call IO on device memory --------------------------------------------------
    # Like libkvikio, these take device memory only: a host buffer raises ValueError naming
    # the method (read/write and pread/pwrite are the calls for host memory).
    def raw_read(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: int = 0,
        dev_offset: int = 0,
    ) -> int:
        """Read with one call on this thread (no task splitting) into device buffer ``buf``
        at byte ``dev_offset``; blocking. Host buffers raise ``ValueError``."""
        return self._handle.raw_read(buf, size, file_offset, dev_offset)

    def raw_write(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: Optional[int] = None,
        dev_offset: int = 0,
    ) -> int:
        """Write with one call on this thread from device buffer ``buf`` at byte
        ``dev_offset``; blocking. Host buffers raise ``ValueError``."""
        return self._handle.raw_write(buf, size, file_offset, dev_offset)

    def raw_read_async(
        self,
        buf: Any,
        raw_stream: Any,
        size: Optional[int] = None,
        file_offset: int = 0,
        dev_offset: int = 0,
    ) -> IOFutureStream:
        """Read into device buffer ``buf`` ordered on CUDA stream ``raw_stream`` (its handle,
        as upstream, or a CuPy/Numba/PyTorch stream).

        The read runs after the work queued on the stream before it, and work queued after
        it sees the data. Call ``check_bytes_done()`` on the result to wait for it and get
        the bytes read. Host buffers raise ``ValueError``."""
        return self._handle.raw_read_async(
            buf, stream_handle(raw_stream), size, file_offset, dev_offset
        )

    def raw_write_async(
        self,
        buf: Any,
        raw_stream: Any,
        size: Optional[int] = None,
        file_offset: int = 0,
        dev_offset: int = 0,
    ) -> IOFutureStream:
        """Write from device buffer ``buf`` ordered on CUDA stream ``raw_stream``; see
        :meth:`raw_read_async`."""
        return self._handle.raw_write_async(
            buf, stream_handle(raw_stream), size, file_offset, dev_offset
        )


def _file_arg(file: Any) -> Union[str, int]:
    if isinstance(file, int) and not isinstance(file, bool):
        return file
    fileno = getattr(file, "fileno", None)
    if callable(fileno) and not isinstance(file, (str, bytes, os.PathLike)):
        return fileno()
    return os.fspath(file)


def _range(offset: int, length: int) -> tuple[int, int]:
    for name, value in (("offset", offset), ("length", length)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        if value < 0:
            raise OverflowError(f"{name} must not be negative, got {value}")
    return offset, length


def get_page_cache_info(file: Any, offset: int = 0, length: int = 0) -> tuple[int, int]:
    """(pages of ``file`` in the page cache, pages of ``file``) over the byte range
    ``[offset, offset + length)``; ``length=0`` means to the end. The range is clamped to the
    file and counted in whole pages (partial pages at either end included); an ``offset`` at
    or past the end gives ``(0, 0)``. ``file`` is a path, a file descriptor or an object with
    ``fileno()``."""
    return _lib.get_page_cache_info(_file_arg(file), *_range(offset, length))


def drop_file_page_cache(
    file: Any, offset: int = 0, length: int = 0, sync_first: bool = True
) -> None:
    """Evict the clean pages of ``file`` wholly inside ``[offset, offset + length)``
    (``length=0``: to the end) from the page cache, writing dirty ones back first when
    ``sync_first``. Needs no privileges."""
    _lib.drop_file_page_cache(_file_arg(file), *_range(offset, length), sync_first)


def drop_system_page_cache(reclaim_dentries_and_inodes: bool = True, sync_first: bool = True) -> bool:
    """Drop the whole system's page cache (``vm.drop_caches`` 3, or 1 without
    ``reclaim_dentries_and_inodes``). Returns whether it was dropped: False when the process
    may not (it needs root; no ``sudo`` is tried)."""
    try:
        _lib.drop_system_page_cache(reclaim_dentries_and_inodes, sync_first)
    except OSError:
        return False
    return True


@kvikio_deprecation_notice("Use :func:`drop_system_page_cache` instead.", since="26.04")
def clear_page_cache(reclaim_dentries_and_inodes: bool = True, clear_dirty_pages: bool = True) -> bool:
    """Deprecated: use :func:`drop_system_page_cache` (or :func:`drop_file_page_cache`)."""
    return drop_system_page_cache(reclaim_dentries_and_inodes, clear_dirty_pages)


def pread_batch(requests: Iterable[tuple]) -> IOFuture:
    """Read many ``(file, buf, size, file_offset)`` requests, across files, in one call;
    non-blocking. ``file`` is a :class:`CuFile`; see :meth:`CuFile.pread_batch`."""
    return _lib.pread_batch(requests)


def pwrite_batch(requests: Iterable[tuple]) -> IOFuture:
    """Write many ``(file, buf, size, file_offset)`` requests, across files, in one call;
    see :meth:`CuFile.pread_batch`."""
    return _lib.pwrite_batch(requests)
