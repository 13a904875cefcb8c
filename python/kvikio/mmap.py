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
    """A read-only memory map of a file range.

    Reads copy from the map into host or device buffers.

    Args:
        file_path: Path of the file.
        flags: ``"r"`` (the only mode: the map is read-only).
        initial_map_size: Bytes to map; None maps to the end of the file.
        initial_map_offset: File offset where the map starts.
        mode: Permission bits for a file ``open(2)`` would create (unused for ``"r"``).
        map_flags: ``mmap(2)`` flags; None is ``MAP_PRIVATE``.

    Raises:
        FileNotFoundError: The file does not exist (other ``open(2)`` and ``mmap(2)``
            failures raise the matching ``OSError``).
        ValueError: ``flags`` is not ``"r"``.
        IndexError: The range lies outside the file.
    """

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
        """Size of the file in bytes (as when mapped).

        Returns:
            The size; 0 once closed, as upstream.
        """
        if self._handle.closed:
            return 0
        return self._handle.file_size()

    def initial_map_size(self) -> int:
        """The size in bytes of the mapped range.

        Returns:
            The size.

        Raises:
            ValueError: The map is closed.
        """
        return self._handle.initial_map_size()

    def initial_map_offset(self) -> int:
        """The file offset where the mapped range starts.

        Returns:
            The offset.

        Raises:
            ValueError: The map is closed.
        """
        return self._handle.initial_map_offset()

    def close(self) -> None:
        """Unmap (idempotent)."""
        self._handle.close()

    @property
    def closed(self) -> _Closed:
        """True once the mapping is closed; ``m.closed`` and ``m.closed()`` both work."""
        return _Closed(self._handle.closed)

    def read(self, buf: Any, size: Optional[int] = None, offset: int = 0) -> int:
        """Copy a range of the file from the map into ``buf``; blocking.

        Args:
            buf: Host or device buffer to copy into.
            size: Bytes to copy; None copies from ``offset`` to the end of the map (at most
                ``buf``'s size).
            offset: File offset to copy from.

        Returns:
            The bytes copied.

        Raises:
            IndexError: The range lies outside the mapped range.
            ValueError: ``size`` exceeds ``buf``, or the map is closed.
        """
        return self._handle.read(buf, size, offset)

    def pread(
        self,
        buf: Any,
        size: Optional[int] = None,
        offset: int = 0,
        task_size: Optional[int] = None,
    ) -> IOFuture:
        """Like :meth:`read`, split into ``task_size`` pieces on the thread pool; non-blocking.

        Args:
            buf: Host or device buffer to copy into.
            size: Bytes to copy; None as in :meth:`read`.
            offset: File offset to copy from.
            task_size: Bytes per parallel task; None uses the ``task_size`` setting.

        Returns:
            A future whose ``get()`` returns the bytes copied.

        Raises:
            IndexError: The range lies outside the mapped range.
            ValueError: ``size`` exceeds ``buf``, or the map is closed.
        """
        return self._handle.pread(buf, size, offset, task_size)

    def __enter__(self) -> "Mmap":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
