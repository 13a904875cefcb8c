"""A zarr (>= 3) store for a local directory whose chunk IO goes through kvikio.

``GDSStore`` is a ``zarr.storage.LocalStore`` whose reads and writes of values use
``kvikio.CuFile``: cuFile (GPUDirect Storage) where the machine has it, the POSIX pipeline
with pinned bounce buffers otherwise. With ``zarr.config.enable_gpu()`` values are read
straight into GPU memory and chunks come back as CuPy arrays; without it they land in host
memory. Listing, deleting, existence checks and read-only mode are LocalStore's own.

Durability: a value is written to a temporary file ``.<name>.<uuid hex>.partial`` next to
its key, the file is fsync'ed, renamed over the key, and the directory is fsync'ed, so after
a crash (process, kernel or power) every key holds either its old or its new value in full.
Temporary files are never listed. A temporary file left behind by a killed writer is removed
by the listing that meets it (``list``, ``list_prefix``, ``list_dir`` of a writable store)
once it is older than ``GDSStore.stale_partial_seconds`` (an hour: a younger one may belong
to a writer still running), or by :meth:`GDSStore.sweep_partials`.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import os
import re
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

_REQUIRED = (3, 0)

try:
    import zarr
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "kvikio.zarr needs zarr>=3, which is not installed (pip install 'zarr>=3')"
    ) from e


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


if _version_tuple(zarr.__version__) < _REQUIRED:
    raise ImportError(
        f"kvikio.zarr needs zarr>=3, but zarr {zarr.__version__} is installed "
        "(pip install --upgrade 'zarr>=3')"
    )

from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest  # noqa: E402
from zarr.core.buffer import default_buffer_prototype  # noqa: E402
from zarr.storage import LocalStore  # noqa: E402

import numpy  # noqa: E402

import kvikio  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Sequence

    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

__all__ = ["GDSStore"]


@functools.lru_cache(maxsize=None)
def _wants_device_memory(buffer_cls: type) -> bool:
    """Whether zarr's ``prototype.buffer`` class keeps its bytes in GPU memory (cached per
    class: this is asked once per chunk)."""
    try:
        from zarr.core.buffer import gpu
    except ImportError:
        return False
    return issubclass(buffer_cls, gpu.Buffer)


def _empty_bytes(nbytes: int, device: bool):
    # CuPy's memory pool serves device allocations: no cudaMalloc per chunk once warm.
    if device:
        import cupy

        return cupy.empty(nbytes, dtype="uint8")
    return numpy.empty(nbytes, dtype="uint8")


def _requested_range(byte_range: ByteRequest | None, size: int) -> tuple[int, int]:
    """(offset, nbytes) of the bytes a request asks for, clipped to the file as LocalStore does."""
    if byte_range is None:
        return 0, size
    if isinstance(byte_range, RangeByteRequest):
        start = min(byte_range.start, size)
        return start, max(0, min(byte_range.end, size) - start)
    if isinstance(byte_range, OffsetByteRequest):
        start = min(byte_range.offset, size)
        return start, size - start
    if isinstance(byte_range, SuffixByteRequest):
        start = max(0, size - byte_range.suffix)
        return start, size - start
    raise TypeError(f"Unexpected byte_range, got {byte_range}.")


#: Exceptions of a key that does not name a readable file: the store answers None.
_MISSING = (FileNotFoundError, IsADirectoryError, NotADirectoryError)


#: Average cost of opening a value on the event loop, in seconds (exponentially weighted):
#: where opening is slow (a cuFile registration tried and failing on every open, say),
#: GDSStore.get reads on worker threads instead, so that the opens overlap rather than queue
#: on the loop; one value in _PROBE_EVERY is still opened on the loop to follow the cost.
_open_seconds = 0.0
_PROBE_EVERY = 64
_threaded_reads = 0


def _open_file(path: str) -> kvikio.CuFile:
    """Opens ``path`` for reading on the event loop, counting the cost."""
    global _open_seconds
    # CPU time of this thread, not wall time: a loop thread that was preempted, or that
    # waited for the GIL after the open released it, did not pay that wait for the open.
    t0 = time.thread_time()
    f = kvikio.CuFile(path, "r")
    _open_seconds += (time.thread_time() - t0 - _open_seconds) * 0.05
    return f


def _opens_are_slow(limit: float) -> bool:
    """True where the next value should be read on a worker thread (see _open_seconds)."""
    global _threaded_reads
    if _open_seconds <= limit:
        return False
    _threaded_reads += 1
    return _threaded_reads % _PROBE_EVERY != 0


class _Pending:
    """One value being read: its open file and the buffer its bytes go to."""

    __slots__ = ("file", "out", "nbytes", "offset")

    def __init__(self, path: str, byte_range: ByteRequest | None, device: bool) -> None:
        self.file = kvikio.CuFile(path, "r")
        try:
            self.offset, self.nbytes = _requested_range(byte_range, self.file.nbytes())
            self.out = _empty_bytes(self.nbytes, device)
        except BaseException:
            self.file.close()
            raise


def _open_value(path: str, byte_range: ByteRequest | None, device: bool) -> _Pending | None:
    """Opens ``path`` for a read of ``byte_range``; None when it names no file."""
    try:
        return _Pending(path, byte_range, device)
    except _MISSING:
        return None


def _read(path: str, prototype: BufferPrototype, byte_range: ByteRequest | None) -> Buffer | None:
    """Blocking read of one value on the calling thread; None when the key names no file."""
    p = _open_value(path, byte_range, _wants_device_memory(prototype.buffer))
    if p is None:
        return None
    with p.file:
        if p.nbytes:
            _check_count(p.file.read(p.out, p.nbytes, p.offset), p.nbytes, path)
    return prototype.buffer.from_array_like(p.out)


async def _wait(future: kvikio.IOFuture, poll_seconds: float) -> int:
    """The result of ``future``: the event loop runs other coroutines (the reads of other
    chunks) between polls while the read is quick; one still running after ``poll_seconds``
    is awaited (``await future``: a waiter thread of kvikio wakes the loop when it ends, so
    a slow disk neither keeps the loop spinning nor takes a thread of asyncio's executor)."""
    if future.done():  # a small read of a hot file may come back finished
        return future.get()
    if poll_seconds <= 0:
        return await future
    deadline = time.perf_counter() + poll_seconds
    while True:
        await asyncio.sleep(0)
        if future.done():
            return future.get()
        if time.perf_counter() > deadline:
            return await future


def _check_count(got: int, expected: int, path: str) -> None:
    # The size was read just before: fewer bytes means the file shrank under the read.
    if got != expected:
        raise OSError(f"{path}: read {got} of {expected} bytes (did the file shrink?)")


# A temporary file: a leading dot, the key's name, 32 hex digits of a uuid4 and ".partial".
# No zarr key looks like this (zarr v2's metadata keys start with a dot, hence the uuid).
_PARTIAL_NAME = re.compile(r"\..+\.[0-9a-f]{32}\.partial")


def _is_partial(name: str) -> bool:
    return _PARTIAL_NAME.fullmatch(name) is not None


def _partial_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")


def _fsync_file(f: kvikio.CuFile) -> None:
    """Flushes the file's data and size to the device (CuFile.fsync where the library has it;
    fsync(2) of any descriptor of the file does the same)."""
    sync = getattr(f, "fsync", None)
    if sync is not None:
        sync()
    else:
        os.fsync(f.fileno())


def _fsync_dir(directory: Path) -> None:
    """Makes the directory's entries (a rename, a new file or subdirectory) durable."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_parents(directory: Path) -> None:
    """mkdir -p, and fsync the parent of every directory it created, so that the entries
    leading to a new key survive a crash too."""
    missing = []
    d = directory
    while not d.is_dir():
        missing.append(d)
        if d.parent == d:
            break
        d = d.parent
    directory.mkdir(parents=True, exist_ok=True)
    for created in reversed(missing):
        _fsync_dir(created.parent)


def _write(path: Path, value: Buffer, exclusive: bool = False) -> int:
    """Writes to a temporary file, syncs it, moves it into place and syncs the directory, so
    that neither a failure nor a crash leaves a half-written value behind; with
    ``exclusive`` an existing value raises FileExistsError."""
    _make_parents(path.parent)
    data = value.as_array_like()
    partial = _partial_path(path)
    try:
        with kvikio.CuFile(partial, "w") as f:
            written = f.write(data)
            # The data must be on the device before the rename can be: otherwise a crash can
            # leave the new name pointing at an empty or partial file.
            _fsync_file(f)
        if exclusive:
            os.link(partial, path)  # raises FileExistsError without touching the old value
            partial.unlink()
        else:
            os.replace(partial, path)
        _fsync_dir(path.parent)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return written


class GDSStore(LocalStore):
    """A zarr store for the local directory ``root`` whose value IO goes through kvikio.

    Parameters
    ----------
    root
        Directory of the store.
    read_only
        Refuse writes and deletes.

    Notes
    -----
    Temporary files of writes in progress (``.<name>.<uuid>.partial``) are never listed;
    listings of a writable store remove those older than ``stale_partial_seconds``.
    """

    #: Age (seconds since the last write) after which a temporary file is taken for the
    #: leftover of a killed writer and removed.
    stale_partial_seconds: float = 3600.0

    #: Values of at most this many bytes are read on the calling thread (see :meth:`get`).
    inline_read_bytes: int = 256 << 10

    #: How long :meth:`get` polls for a larger read before a worker thread takes the wait.
    poll_seconds: float = 0.002

    #: Where opening a file takes longer than this on average (seconds), :meth:`get` reads
    #: every value on a worker thread, so that slow opens overlap.
    slow_open_seconds: float = 100e-6

    #: Values of at least this many bytes are read on a worker thread (see :meth:`get`): the
    #: hand-off costs little beside their IO, and polling would take a core from it.
    thread_wait_bytes: int = 4 << 20

    #: The most files :meth:`get_partial_values` holds open at once: its keys are read in
    #: groups of this many, one batch per group (a group of files per batch is enough to keep
    #: the pool busy, and a process's descriptors, 1024 by default, are not its alone).
    batch_files: int = 64

    def __repr__(self) -> str:
        return f"GDSStore('{self}')"

    def _path(self, key: str) -> str:
        # os.path.join of strings: a pathlib join per chunk costs more than the read of a
        # small one.
        root = self._root_str
        if root is None:
            root = self._root_str = os.fspath(self.root)
        return os.path.join(root, key)

    _root_str: str | None = None

    def get_sync(self, key, *, prototype=None, byte_range=None):
        """The value of ``key`` (the bytes of ``byte_range`` only, if given) read through
        :class:`kvikio.CuFile` into a buffer of ``prototype``; None when the key does not exist.
        Blocking."""
        prototype = prototype or default_buffer_prototype()
        self._ensure_open_sync()
        return _read(self._path(key), prototype, byte_range)

    def set_sync(self, key: str, value: Buffer) -> None:
        """Write ``value`` to ``key`` through :class:`kvikio.CuFile`, atomically (a temporary
        file, then a rename). Blocking."""
        self._ensure_open_sync()
        self._check_writable()
        self._check_value(value)
        _write(self.root / key, value)

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        """Like :meth:`get_sync`, without blocking zarr's event loop for long.

        A value of at most ``inline_read_bytes`` is read on the event loop's thread (a
        thread hand-off costs more than such a read). A larger one is read by kvikio's
        thread pool while the loop serves other chunks; the loop polls for its end for up to
        ``poll_seconds``, then leaves the wait to a worker thread. A value of
        ``thread_wait_bytes`` or more is read by a worker thread from the start, and so is
        every value where opening a file costs more than ``slow_open_seconds``."""
        if prototype is None:
            prototype = default_buffer_prototype()
        if not self._is_open:
            await self._open()
        # One open file and one buffer per value, and no helper objects: at 64 KiB a chunk
        # the Python around the read costs as much as the read.
        path = self._path(key)
        if _opens_are_slow(self.slow_open_seconds):
            return await asyncio.to_thread(_read, path, prototype, byte_range)
        try:
            f = _open_file(path)
        except _MISSING:
            return None
        with f:
            size = f.nbytes()
            offset, nbytes = (0, size) if byte_range is None else _requested_range(byte_range, size)
            out = _empty_bytes(nbytes, _wants_device_memory(prototype.buffer))
            if nbytes >= self.thread_wait_bytes:
                # A blocking read on a worker thread, as LocalStore does: the hand-off is
                # small beside such a read, and the worker takes part in the IO besides the
                # pool.
                got = await asyncio.to_thread(f.read, out, nbytes, offset)
                _check_count(got, nbytes, path)
            elif nbytes > self.inline_read_bytes:
                got = await _wait(f.pread(out, nbytes, offset), self.poll_seconds)
                _check_count(got, nbytes, path)
            elif nbytes:
                _check_count(f.read(out, nbytes, offset), nbytes, path)
        return prototype.buffer.from_array_like(out)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        """The values of several ``(key, byte_range)`` pairs, read with
        :func:`kvikio.pread_batch`; None for each key that does not exist. Each key is opened
        once, however many of its ranges are asked for, and at most
        ``GDSStore.batch_files`` files are open at once (one batch per group of keys), so
        that a thousand ranges of a shard do not need a thousand descriptors."""
        if not self._is_open:
            await self._open()
        device = _wants_device_memory(prototype.buffer)
        pairs = [(self._path(key), byte_range) for key, byte_range in key_ranges]
        by_path: dict[str, list[int]] = {}
        for i, (path, _) in enumerate(pairs):
            by_path.setdefault(path, []).append(i)
        paths = list(by_path)
        outs: list = [None] * len(pairs)
        step = max(1, self.batch_files)
        for first in range(0, len(paths), step):
            await self._read_group(paths[first:first + step], by_path, pairs, outs, device)
        wrap = prototype.buffer.from_array_like
        return [None if out is None else wrap(out) for out in outs]

    async def _read_group(self, paths, by_path, pairs, outs, device) -> None:
        """Reads every pair of the keys `paths` into `outs` (by pair index) in one batch."""
        files = {}
        try:
            requests = []  # (file, out, nbytes, offset, path)
            for path in paths:
                try:
                    f = files[path] = kvikio.CuFile(path, "r")
                except _MISSING:
                    continue
                size = f.nbytes()
                for i in by_path[path]:
                    offset, nbytes = _requested_range(pairs[i][1], size)
                    outs[i] = _empty_bytes(nbytes, device)
                    if nbytes:
                        requests.append((f, outs[i], nbytes, offset, path))
            if requests:
                expected = sum(r[2] for r in requests)
                batch = kvikio.pread_batch([r[:4] for r in requests])
                if await _wait(batch, self.poll_seconds) != expected:
                    for f, out, nbytes, offset, path in requests:  # a file shrank: say which
                        _check_count(f.read(out, nbytes, offset), nbytes, path)
        finally:
            for f in files.values():
                f.close()

    async def get_ranges(
        self,
        key: str,
        byte_ranges: Sequence[ByteRequest | None],
        *,
        prototype: BufferPrototype,
        max_concurrency: int = 10,
        max_gap_bytes: int = 1 << 20,
        max_coalesced_bytes: int = 16 << 20,
    ) -> AsyncIterator[list[tuple[int, Buffer | None]]]:
        """Many byte ranges of the value ``key`` (a shard's inner chunks: zarr >= 3.2 asks for
        them this way), read through one open file in one :meth:`kvikio.CuFile.pread_batch`
        call; yields one batch of ``(index, buffer)`` pairs in input order. A missing key
        raises ``FileNotFoundError`` inside a ``BaseExceptionGroup``, as zarr's own
        implementation does. ``max_concurrency``, ``max_gap_bytes`` and
        ``max_coalesced_bytes`` are accepted for zarr's signature: every range is one
        request of the batch, so none is merged and no gap is read."""
        if not self._is_open:
            await self._open()
        path = self._path(key)
        try:
            f = kvikio.CuFile(path, "r")
        except _MISSING as e:
            missing = FileNotFoundError(key)
            missing.__cause__ = e
            group = getattr(builtins, "BaseExceptionGroup", None)
            raise (group(f"{key} does not exist", [missing]) if group else missing) from None
        device = _wants_device_memory(prototype.buffer)
        with f:
            size = f.nbytes()
            outs, requests = [], []
            for byte_range in byte_ranges:
                offset, nbytes = _requested_range(byte_range, size)
                outs.append(_empty_bytes(nbytes, device))
                if nbytes:
                    requests.append((outs[-1], nbytes, offset))
            if requests:
                expected = sum(r[1] for r in requests)
                poll = self.poll_seconds if expected < self.thread_wait_bytes else 0.0
                if await _wait(f.pread_batch(requests), poll) != expected:
                    for out, nbytes, offset in requests:  # the file shrank: say where
                        _check_count(f.read(out, nbytes, offset), nbytes, path)
        wrap = prototype.buffer.from_array_like
        yield [(i, wrap(out)) for i, out in enumerate(outs)]

    async def _set(self, key: str, value: Buffer, exclusive: bool = False) -> None:
        if not self._is_open:
            await self._open()
        self._check_writable()
        self._check_value(value)
        await asyncio.to_thread(_write, self.root / key, value, exclusive)

    # -- listing: temporary files are not keys ---------------------------------------------
    def _skip(self, path: Path) -> bool:
        """True for a temporary file (removed on the way when stale and the store writable)."""
        if not _is_partial(path.name):
            return False
        if not self.read_only:
            self._remove_if_stale(path, time.time() - self.stale_partial_seconds)
        return True

    @staticmethod
    def _remove_if_stale(path: Path, cutoff: float) -> bool:
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                return True
        except FileNotFoundError:
            pass  # renamed or removed meanwhile
        return False

    def sweep_partials(self, max_age: float | None = None) -> list[str]:
        """Removes the temporary files of the whole store older than ``max_age`` seconds
        (default ``stale_partial_seconds``; 0 removes all: only when no writer is running)
        and returns their paths relative to the root. Walks every directory."""
        self._check_writable()
        cutoff = time.time() - (self.stale_partial_seconds if max_age is None else max_age)
        removed = []
        for dirpath, _, filenames in os.walk(self.root):
            for name in filenames:
                if _is_partial(name):
                    path = Path(dirpath) / name
                    if self._remove_if_stale(path, cutoff):
                        removed.append(path.relative_to(self.root).as_posix())
        return sorted(removed)

    async def list(self):
        async for key in super().list():
            if not self._skip(self.root / key):
                yield key

    async def list_prefix(self, prefix: str):
        async for key in super().list_prefix(prefix):
            if not self._skip(self.root / key):
                yield key

    async def list_dir(self, prefix: str):
        base = self.root / prefix
        async for key in super().list_dir(prefix):
            if not self._skip(base / key):
                yield key

    @staticmethod
    def _check_value(value: object) -> None:
        from zarr.core.buffer import Buffer

        if not isinstance(value, Buffer):
            raise TypeError(
                f"GDSStore.set(): `value` must be a Buffer instance. "
                f"Got an instance of {type(value)} instead."
            )
