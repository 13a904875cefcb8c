"""Read-only memory-mapped access to a file: :class:`Mmap`."""

from __future__ import annotations

import os
from typing import Any, Optional

from kvikio import _lib
from kvikio.cufile import IOFuture

__all__ = ["Mmap"]


class _Closed:
    """Whether a mapping is closed, usable both ways: as a flag (``if m.closed:``, ours) and
    called (``m.closed()``, upstream's method). Compares equal to the bool it stands for."""

    __slots__ = ("_value",)

    def __init__(self, value: bool) -> None:
        self._value = value

    def __call__(self) -> bool:
        return self._value

    def __bool__(self) -> bool:
        return self._value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Closed):
            other = other._value
        return self._value == other if isinstance(other, bool) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return repr(self._value)


class Mmap:
    """A read-only map of ``[initial_map_offset, initial_map_offset + initial_map_size)`` of
    a file (to its end when ``initial_map_size`` is None). Reads copy from the map into host
    or device buffers; a read outside the mapped range raises ``IndexError``."""

    def __init__(
        self,
        file_path: "str | os.PathLike[str]",
        flags: str = "r",
        initial_map_size: Optional[int] = None,
        initial_map_offset: int = 0,
        mode: int = 0o644,
        map_flags: Optional[int] = None,
    ) -> None:
        self._handle = _lib.MmapHandle(
            os.fspath(file_path), flags, initial_map_size, initial_map_offset, mode, map_flags
        )

    def file_size(self) -> int:
        """Size of the file in bytes (as when mapped); 0 once closed, as upstream."""
        if self._handle.closed:
            return 0
        return self._handle.file_size()

    def initial_map_size(self) -> int:
        """The size in bytes of the mapped range."""
        return self._handle.initial_map_size()

    def initial_map_offset(self) -> int:
        """The file offset where the mapped range starts."""
        return self._handle.initial_map_offset()

    def close(self) -> None:
        """Unmap (idempotent)."""
        self._handle.close()

    @property
    def closed(self) -> _Closed:
        """True once the mapping is closed; ``m.closed`` and ``m.closed()`` both work."""
        return _Closed(self._handle.closed)

    def read(self, buf: Any, size: Optional[int] = None, offset: int = 0) -> int:
        """Copy ``size`` bytes (default: from ``offset`` to the end of the map) at file
        offset ``offset`` into ``buf``; blocking. Returns the bytes copied."""
        return self._handle.read(buf, size, offset)

    def pread(
        self,
        buf: Any,
        size: Optional[int] = None,
        offset: int = 0,
        task_size: Optional[int] = None,
    ) -> IOFuture:
        """Like :meth:`read`, split into ``task_size`` pieces on the thread pool;
        non-blocking."""
        return self._handle.pread(buf, size, offset, task_size)

    def __enter__(self) -> "Mmap":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
