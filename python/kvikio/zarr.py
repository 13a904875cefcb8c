"""A zarr (>= 3) store for a local directory whose chunk IO goes through kvikio.

``GDSStore`` is a ``zarr.storage.LocalStore`` whose reads and writes of values use
``kvikio.CuFile``: cuFile (GPUDirect Storage) where the machine has it, the POSIX pipeline
with pinned bounce buffers otherwise. With ``zarr.config.enable_gpu()`` values are read
straight into GPU memory and chunks come back as CuPy arrays; without it they land in host
memory. Listing, deleting, existence checks and read-only mode are LocalStore's own.
"""

from __future__ import annotations

import asyncio
import os
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
from zarr.core.common import concurrent_map  # noqa: E402
from zarr.storage import LocalStore  # noqa: E402

import kvikio  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterable

    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

__all__ = ["GDSStore"]


def _wants_device_memory(prototype: BufferPrototype) -> bool:
    try:
        from zarr.core.buffer import gpu
    except ImportError:
        return False
    return issubclass(prototype.buffer, gpu.Buffer)


def _empty_bytes(nbytes: int, device: bool):
    if device:
        import cupy

        return cupy.empty(nbytes, dtype="uint8")
    import numpy

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


def _read(path: Path, prototype: BufferPrototype, byte_range: ByteRequest | None) -> Buffer:
    with kvikio.CuFile(path, "r") as f:
        offset, nbytes = _requested_range(byte_range, f.nbytes())
        out = _empty_bytes(nbytes, _wants_device_memory(prototype))
        if nbytes:
            f.read(out, nbytes, offset)
    return prototype.buffer.from_array_like(out)


def _write(path: Path, value: Buffer, exclusive: bool = False) -> int:
    """Writes to a temporary file and moves it into place, so a failure never leaves a
    half-written value behind; with ``exclusive`` an existing value raises FileExistsError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = value.as_array_like()
    partial = path.with_name(f"{path.name}.{uuid.uuid4().hex}.partial")
    try:
        with kvikio.CuFile(partial, "w") as f:
            written = f.write(data)
        if exclusive:
            os.link(partial, path)  # raises FileExistsError without touching the old value
            partial.unlink()
        else:
            os.replace(partial, path)
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
    """

    def __repr__(self) -> str:
        return f"GDSStore('{self}')"

    def get_sync(self, key, *, prototype=None, byte_range=None):
        """The value of ``key`` (the bytes of ``byte_range`` only, if given) read through
        :class:`kvikio.CuFile` into a buffer of ``prototype``; None when the key does not exist.
        Blocking."""
        prototype = prototype or default_buffer_prototype()
        self._ensure_open_sync()
        try:
            return _read(self.root / key, prototype, byte_range)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

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
        """Like :meth:`get_sync`, on a worker thread so that zarr's event loop goes on."""
        prototype = prototype or default_buffer_prototype()
        if not self._is_open:
            await self._open()
        try:
            # IO runs on a worker thread so zarr's event loop keeps serving other chunks.
            return await asyncio.to_thread(_read, self.root / key, prototype, byte_range)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        """The values of several ``(key, byte_range)`` pairs, read concurrently; None for
        each key that does not exist."""
        requests = [(key, prototype, byte_range) for key, byte_range in key_ranges]
        return await concurrent_map(requests, self.get, limit=None)

    async def _set(self, key: str, value: Buffer, exclusive: bool = False) -> None:
        if not self._is_open:
            await self._open()
        self._check_writable()
        self._check_value(value)
        await asyncio.to_thread(_write, self.root / key, value, exclusive)

    @staticmethod
    def _check_value(value: object) -> None:
        from zarr.core.buffer import Buffer

        if not isinstance(value, Buffer):
            raise TypeError(
                f"GDSStore.set(): `value` must be a Buffer instance. "
                f"Got an instance of {type(value)} instead."
            )
