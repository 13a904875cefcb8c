"""Local file IO: :class:`CuFile` and the page-cache helpers."""

from __future__ import annotations

import os
from typing import Any, Iterable, Optional, Union

from kvikio import _lib
from kvikio.errors import ArgumentTypeError
from kvikio.stream import stream_handle
from kvikio.utils import kvikio_deprecation_notice

IOFuture = _lib.IOFuture
"""The result of :meth:`CuFile.pread`/:meth:`CuFile.pwrite`: ``get()`` waits and returns the
bytes moved (or raises the IO's error); ``done()`` says whether it finished. ``get()`` may be
called once. Ctrl-C (a signal handler that raises) interrupts ``get()`` within about 20 ms;
the IO is not cancelled, and the future stays pending, holding the buffer until the IO ends:
``get()`` may then be called again, and dropping the future waits for the IO."""

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

    Buffers may be NumPy arrays or anything with the buffer protocol, CuPy/Numba arrays
    (``__cuda_array_interface__``) or DLPack tensors (PyTorch). ``size`` defaults to the
    whole buffer and must fit in it; offsets and sizes must not be negative. The ``raw_*``
    methods take device memory only.

    Args:
        file: Path of the file.
        flags: ``"r"`` read, ``"w"`` create/truncate and write, ``"a"`` create and append,
            with ``"+"`` for reading and writing (``"r+"``, ``"w+"``, ``"a+"``).

    Raises:
        FileNotFoundError: The file does not exist (opened for reading). Other failures of
            ``open(2)`` raise the matching ``OSError`` subclass; each is also a
            ``RuntimeError`` (:class:`kvikio.errors.KvikioOSError`).
        ValueError: ``flags`` is not one of the modes above.

    IO errors common to the methods: ``OverflowError`` for a negative offset or size,
    ``ValueError`` for a size larger than the buffer, for IO a mode does not allow or on a
    closed file (:class:`kvikio.errors.ClosedFileError`), ``RuntimeError`` for a read past the
    end of the file (:class:`kvikio.errors.EndOfFileError`), ``OSError`` for a failed system
    call.

    Pickling: a ``CuFile`` pickles as its path and flags and is opened again, by path, where it
    is unpickled (in another process, the file must be reachable there under the same path).
    ``"w"``/``"w+"`` files are reopened as ``"r+"`` (never truncated again), the other flags as
    they were. A CuFile has no file position (every IO names its offset), so nothing else
    travels; a closed one unpickles closed.
    """

    def __init__(self, file: PathLike, flags: str = "r") -> None:
        self._flags = flags
        self._handle = _lib.FileHandle(os.fspath(file), flags)

    def __reduce__(self) -> tuple:
        reopen = {"w": "r+", "w+": "r+"}.get(self._flags, self._flags)
        return _unpickle_cufile, (self._handle.path, reopen, self.closed)

    # -- life cycle -------------------------------------------------------------------
    def close(self) -> None:
        """Close the file (idempotent). IO already queued still completes.

        Errors of a close deferred by queued IO cannot be reported.

        Raises:
            OSError: The operating system reported an error on close (for example a write-back
                error on NFS), as :meth:`io.FileIO.close` does; the file is closed either way.
        """
        self._handle.close()

    def fsync(self) -> None:
        """Wait until the file's data and metadata are on stable storage (``fsync(2)``).

        Raises:
            OSError: ``fsync(2)`` failed.
            ValueError: The file is closed.
        """
        self._handle.fsync()

    @property
    def closed(self) -> bool:
        """True once the file is closed."""
        return self._handle.closed

    def fileno(self) -> int:
        """The file descriptor.

        Returns:
            The POSIX file descriptor of the open file.

        Raises:
            ValueError: The file is closed.
        """
        return self._handle.fileno()

    def open_flags(self) -> int:
        """The ``open(2)`` flags of the file descriptor.

        Returns:
            The flags (``O_RDONLY``, ``O_DIRECT``, ...) as ``fcntl(F_GETFL)`` reports them.

        Raises:
            ValueError: The file is closed.
        """
        return self._handle.open_flags()

    def nbytes(self) -> int:
        """The current size of the file in bytes.

        Returns:
            The size, read from the file system now (it follows writes).

        Raises:
            ValueError: The file is closed.
        """
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

        The request is split into ``task_size`` pieces run on the shared thread pool. Keep
        ``buf`` unchanged until ``get()``.

        Args:
            buf: Host or device buffer to read into.
            size: Bytes to read; None reads ``buf``'s size.
            file_offset: Byte offset in the file to read from.
            task_size: Bytes per parallel task; None uses the ``task_size`` setting.

        Returns:
            A future whose ``get()`` returns the bytes read.

        Raises:
            OverflowError: ``size``, ``file_offset`` or ``task_size`` is negative.
            ValueError: ``size`` exceeds ``buf``, the file is closed or not open for reading.
            RuntimeError: From ``get()``: the read runs past the end of the file, or a task's
                system call failed (an ``OSError`` too).
        """
        return self._handle.pread(buf, size, file_offset, task_size)

    def pwrite(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: Optional[int] = None,
        task_size: Optional[int] = None,
    ) -> IOFuture:
        """Write ``size`` bytes of ``buf`` at ``file_offset`` in parallel; non-blocking.

        Args:
            buf: Host or device buffer to write from.
            size: Bytes to write; None writes all of ``buf``.
            file_offset: Byte offset in the file; None writes at 0, or at the end of the file
                when opened with ``"a"``.
            task_size: Bytes per parallel task; None uses the ``task_size`` setting.

        Returns:
            A future whose ``get()`` returns the bytes written.

        Raises:
            OverflowError: ``size``, ``file_offset`` or ``task_size`` is negative.
            ValueError: ``size`` exceeds ``buf``, the file is closed or not open for writing.
            OSError: From ``get()``: a task's system call failed (also a ``RuntimeError``).
        """
        return self._handle.pwrite(buf, size, file_offset, task_size)

    def pread_batch(self, requests: Iterable[tuple]) -> IOFuture:
        """Read many requests of this file in one call; non-blocking.

        Every request is checked before any IO. A read reaching the end of the file stops there
        (a short count, not an error). Host buffers use io_uring or the thread pool (the
        ``batch_backend`` setting), device buffers the usual device path.

        Args:
            requests: ``(buf, size, file_offset)`` tuples; ``size`` None reads the whole buffer.

        Returns:
            A future whose ``get()`` returns the total bytes read, or raises the first failed
            request's error once every request finished.

        Raises:
            TypeError: A request is not a ``(buf, size, file_offset)`` tuple.
            OverflowError: A size or offset is negative.
            ValueError: A size exceeds its buffer, or the file is closed or not readable.
        """
        return self._handle.pread_batch(requests)

    def pwrite_batch(self, requests: Iterable[tuple]) -> IOFuture:
        """Write many requests to this file in one call; non-blocking. See :meth:`pread_batch`.

        Args:
            requests: ``(buf, size, file_offset)`` tuples; ``size`` None writes the whole buffer,
                ``file_offset`` defaults to 0.

        Returns:
            A future whose ``get()`` returns the total bytes written, or raises the first failed
            request's error once every request finished.

        Raises:
            TypeError: A request is not a ``(buf, size, file_offset)`` tuple.
            OverflowError: A size or offset is negative.
            ValueError: A size exceeds its buffer, or the file is closed or not writable.
        """
        return self._handle.pwrite_batch(requests)

    def read(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: int = 0,
        task_size: Optional[int] = None,
    ) -> int:
        """Like :meth:`pread` but blocking.

        Ctrl-C interrupts the wait for a request split over the thread pool (KeyboardInterrupt
        within about 20 ms); its IO runs on, and kvikio holds ``buf`` and the file until it ends.
        A request of one piece is one system call on this thread: the signal takes effect when
        it returns.

        Args:
            buf: Host or device buffer to read into.
            size: Bytes to read; None reads ``buf``'s size.
            file_offset: Byte offset in the file to read from.
            task_size: Bytes per parallel task; None uses the ``task_size`` setting.

        Returns:
            The bytes read.

        Raises:
            OverflowError: ``size``, ``file_offset`` or ``task_size`` is negative.
            ValueError: ``size`` exceeds ``buf``, the file is closed or not open for reading.
            RuntimeError: The read runs past the end of the file, or a system call failed (an
                ``OSError`` too).
        """
        return self._handle.read(buf, size, file_offset, task_size)

    def write(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: Optional[int] = None,
        task_size: Optional[int] = None,
    ) -> int:
        """Like :meth:`pwrite` but blocking.

        Ctrl-C interrupts the wait for a request split over the thread pool (KeyboardInterrupt
        within about 20 ms); its IO runs on, and kvikio holds ``buf`` and the file until it ends.
        A request of one piece is one system call on this thread: the signal takes effect when
        it returns.

        Args:
            buf: Host or device buffer to write from.
            size: Bytes to write; None writes all of ``buf``.
            file_offset: Byte offset in the file; None writes at 0, or at the end of the file
                when opened with ``"a"``.
            task_size: Bytes per parallel task; None uses the ``task_size`` setting.

        Returns:
            The bytes written.

        Raises:
            OverflowError: ``size``, ``file_offset`` or ``task_size`` is negative.
            ValueError: ``size`` exceeds ``buf``, the file is closed or not open for writing.
            OSError: A system call failed (also a ``RuntimeError``).
        """
        return self._handle.write(buf, size, file_offset, task_size)

    def is_direct_io_supported(self) -> bool:
        """Whether this file's descriptor was opened with ``O_DIRECT``.

        Returns:
            True when Direct IO is usable on this file.
        """
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
        """Read with one call on this thread (no task splitting) into device memory; blocking.

        Args:
            buf: Device buffer to read into.
            size: Bytes to read; None reads ``buf``'s size less ``dev_offset``.
            file_offset: Byte offset in the file to read from.
            dev_offset: Byte offset in ``buf`` to read to.

        Returns:
            The bytes read.

        Raises:
            ValueError: ``buf`` is host memory, ``size`` exceeds it, or the file is closed or
                not open for reading.
            OverflowError: An offset or ``size`` is negative.
            RuntimeError: The read runs past the end of the file, or the IO failed.
        """
        return self._handle.raw_read(buf, size, file_offset, dev_offset)

    def raw_write(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: Optional[int] = None,
        dev_offset: int = 0,
    ) -> int:
        """Write with one call on this thread (no task splitting) from device memory; blocking.

        Args:
            buf: Device buffer to write from.
            size: Bytes to write; None writes ``buf``'s size less ``dev_offset``.
            file_offset: Byte offset in the file; None as in :meth:`pwrite`.
            dev_offset: Byte offset in ``buf`` to write from.

        Returns:
            The bytes written.

        Raises:
            ValueError: ``buf`` is host memory, ``size`` exceeds it, or the file is closed or
                not open for writing.
            OverflowError: An offset or ``size`` is negative.
            RuntimeError: The IO failed.
        """
        return self._handle.raw_write(buf, size, file_offset, dev_offset)

    def raw_read_async(
        self,
        buf: Any,
        raw_stream: Any,
        size: Optional[int] = None,
        file_offset: int = 0,
        dev_offset: int = 0,
    ) -> IOFutureStream:
        """Read into device memory ordered on a CUDA stream.

        The read runs after the work queued on the stream before it, and work queued after
        it sees the data.

        Args:
            buf: Device buffer to read into.
            raw_stream: The CUDA stream: its handle (an int, as upstream) or a CuPy, Numba or
                PyTorch stream object.
            size: Bytes to read; None reads ``buf``'s size less ``dev_offset``.
            file_offset: Byte offset in the file to read from.
            dev_offset: Byte offset in ``buf`` to read to.

        Returns:
            A future whose ``check_bytes_done()`` waits for the stream to reach the read and
            returns the bytes read (or raises the read's error).

        Raises:
            ValueError: ``buf`` is host memory, ``size`` exceeds it, or the file is closed or
                not open for reading.
            TypeError: ``raw_stream`` is neither a stream nor a handle.
            OverflowError: An offset or ``size`` is negative.
        """
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
        """Write from device memory ordered on a CUDA stream; see :meth:`raw_read_async`.

        Args:
            buf: Device buffer to write from.
            raw_stream: The CUDA stream: its handle or a CuPy, Numba or PyTorch stream object.
            size: Bytes to write; None writes ``buf``'s size less ``dev_offset``.
            file_offset: Byte offset in the file to write at.
            dev_offset: Byte offset in ``buf`` to write from.

        Returns:
            A future whose ``check_bytes_done()`` waits for the stream to reach the write and
            returns the bytes written (or raises the write's error).

        Raises:
            ValueError: ``buf`` is host memory, ``size`` exceeds it, or the file is closed or
                not open for writing.
            TypeError: ``raw_stream`` is neither a stream nor a handle.
            OverflowError: An offset or ``size`` is negative.
        """
        return self._handle.raw_write_async(
            buf, stream_handle(raw_stream), size, file_offset, dev_offset
        )


def _unpickle_cufile(path: str, flags: str, closed: bool) -> CuFile:
    f = CuFile(path, flags)
    if closed:
        f.close()
    return f


def _file_arg(file: Any) -> Union[str, int]:
    if isinstance(file, int) and not isinstance(file, bool):
        return file
    fileno = getattr(file, "fileno", None)
    if callable(fileno) and not isinstance(file, (str, bytes, os.PathLike)):
        return fileno()
    if not isinstance(file, (str, bytes, os.PathLike)):
        raise ArgumentTypeError(
            f"expected a path, a file descriptor or an object with fileno(), got {file!r}"
        )
    return os.fspath(file)


def _range(offset: int, length: int) -> tuple[int, int]:
    for name, value in (("offset", offset), ("length", length)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        if value < 0:
            raise OverflowError(f"{name} must not be negative, got {value}")
    return offset, length


def get_page_cache_info(file: Any, offset: int = 0, length: int = 0) -> tuple[int, int]:
    """Count the pages of a file range that are in the page cache.

    The range is clamped to the file and counted in whole pages (partial pages at either
    end included); an ``offset`` at or past the end gives ``(0, 0)``.

    Args:
        file: A path, a file descriptor or an object with ``fileno()``.
        offset: First byte of the range.
        length: Bytes in the range; 0 means to the end of the file.

    Returns:
        ``(pages in the page cache, pages)`` of the range.

    Raises:
        TypeError: ``offset`` or ``length`` is not an integer, or ``file`` is neither a path,
            a descriptor nor a file object (:class:`~kvikio.errors.ArgumentTypeError`, also
            the ``ValueError`` upstream raises).
        OverflowError: ``offset`` or ``length`` is negative.
        OSError: The file cannot be opened or mapped.
    """
    return _lib.get_page_cache_info(_file_arg(file), *_range(offset, length))


def drop_file_page_cache(
    file: Any, offset: int = 0, length: int = 0, sync_first: bool = True
) -> None:
    """Evict a file range's clean pages from the page cache. Needs no privileges.

    Only pages wholly inside ``[offset, offset + length)`` are evicted.

    Args:
        file: A path, a file descriptor or an object with ``fileno()``.
        offset: First byte of the range.
        length: Bytes in the range; 0 means to the end of the file.
        sync_first: Write dirty pages back first, so that they can be evicted too.

    Raises:
        TypeError: ``offset`` or ``length`` is not an integer.
        OverflowError: ``offset`` or ``length`` is negative.
        OSError: The file cannot be opened, synced or advised.
    """
    _lib.drop_file_page_cache(_file_arg(file), *_range(offset, length), sync_first)


def drop_system_page_cache(reclaim_dentries_and_inodes: bool = True, sync_first: bool = True) -> bool:
    """Drop the whole system's page cache (``vm.drop_caches``).

    Args:
        reclaim_dentries_and_inodes: Write 3 (pages, dentries and inodes) rather than 1
            (pages only).
        sync_first: Call ``sync()`` first so that dirty pages can be dropped too.

    Returns:
        Whether it was dropped; False when the process may not (it needs root; no ``sudo``
        is tried).
    """
    try:
        _lib.drop_system_page_cache(reclaim_dentries_and_inodes, sync_first)
    except OSError:
        return False
    return True


@kvikio_deprecation_notice("Use :func:`drop_system_page_cache` instead.", since="26.04")
def clear_page_cache(reclaim_dentries_and_inodes: bool = True, clear_dirty_pages: bool = True) -> bool:
    """Deprecated: use :func:`drop_system_page_cache` (or :func:`drop_file_page_cache`).

    Args:
        reclaim_dentries_and_inodes: As in :func:`drop_system_page_cache`.
        clear_dirty_pages: ``sync_first`` of :func:`drop_system_page_cache`.

    Returns:
        Whether the page cache was dropped.
    """
    return drop_system_page_cache(reclaim_dentries_and_inodes, clear_dirty_pages)


def pread_batch(requests: Iterable[tuple]) -> IOFuture:
    """Read many requests, across files, in one call; non-blocking.

    See :meth:`CuFile.pread_batch`.

    Args:
        requests: ``(file, buf, size, file_offset)`` tuples; ``file`` is a :class:`CuFile`.

    Returns:
        A future whose ``get()`` returns the total bytes read.

    Raises:
        TypeError: A request is not a ``(CuFile, buf, size, file_offset)`` tuple.
        ValueError: A size exceeds its buffer, or a file is closed or not readable.
        OverflowError: A size or offset is negative.
    """
    return _lib.pread_batch(requests)


def pwrite_batch(requests: Iterable[tuple]) -> IOFuture:
    """Write many requests, across files, in one call; non-blocking.

    See :meth:`CuFile.pread_batch`.

    Args:
        requests: ``(file, buf, size, file_offset)`` tuples; ``file`` is a :class:`CuFile`.

    Returns:
        A future whose ``get()`` returns the total bytes written.

    Raises:
        TypeError: A request is not a ``(CuFile, buf, size, file_offset)`` tuple.
        ValueError: A size exceeds its buffer, or a file is closed or not writable.
        OverflowError: A size or offset is negative.
    """
    return _lib.pwrite_batch(requests)
