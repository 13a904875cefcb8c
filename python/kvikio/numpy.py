"""NumPy-style helpers: :func:`fromfile` and :func:`tofile` through kvikio, and
:class:`LikeWrapper`, which makes ``numpy.fromfile(..., like=...)`` read through kvikio.

``like=`` selects the array library of the result (e.g. a CuPy array reads straight into
GPU memory).
"""

from __future__ import annotations

import io
import os
from typing import Any, Protocol, Union, runtime_checkable

import numpy as np

from kvikio.cufile import CuFile
from kvikio.errors import NotSupportedError

__all__ = ["FileLike", "LikeWrapper", "fromfile", "tofile"]


@runtime_checkable
class FileLike(Protocol):
    """An open file of the OS: it has ``fileno()`` and a ``name`` (its path), as the objects
    ``open()`` returns do."""

    def fileno(self) -> int: ...

    @property
    def name(self) -> str: ...


class LikeWrapper:
    """Wraps an array so that ``numpy.fromfile(path, dtype, like=LikeWrapper(a))`` reads
    through :func:`kvikio.numpy.fromfile` into an array of ``a``'s kind (a CuPy ``a``: device
    memory). Other NumPy functions called with it run unchanged.

    Args:
        like: The array whose kind the results take.
    """

    def __init__(self, like: Any) -> None:
        self._like = like

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func is np.fromfile:
            return fromfile(*args, like=self._like, **kwargs)
        return func(*args, **kwargs)


PathOrFile = Union[str, "os.PathLike[str]", io.IOBase, FileLike]


def _path(file: Any) -> str:
    """The path of ``file``: a path, or an open file object's ``name``. The file is reopened
    by path, so the object's position is not used (as upstream)."""
    if isinstance(file, (str, bytes, os.PathLike)):
        return os.fsdecode(os.fspath(file))
    if isinstance(file, FileLike):
        name = file.name
        if isinstance(name, (str, bytes, os.PathLike)):
            return os.fsdecode(os.fspath(name))
    raise TypeError(
        f"expected a path or an open file with fileno() and a name, got {type(file).__name__}"
    )


def fromfile(
    file: PathOrFile,
    dtype: Any = float,
    count: int = -1,
    sep: str = "",
    offset: int = 0,
    *,
    like: Any = None,
) -> Any:
    """Read binary data from a file into a new array, like ``numpy.fromfile``.

    Args:
        file: A path, or an open file object (reopened by its ``name``; its position is not
            used).
        dtype: The items' data type.
        count: Items to read; -1 reads to the end of the file. A larger ``count`` than the
            file holds is cut to what it holds (as NumPy does); below -1 is a ``ValueError``.
        sep: Only ``""`` (binary) is supported.
        offset: Bytes to skip from the start of the file.
        like: An array whose kind the result takes (a CuPy array: device memory); None gives
            a NumPy array.

    Returns:
        A one-dimensional array of ``count`` items.

    Raises:
        ValueError: An object dtype, ``count`` below -1, or ``offset`` past the end of the
            file.
        kvikio.errors.NotSupportedError: ``sep`` is not ``""`` (a ``ValueError`` and a
            ``NotImplementedError``).
        OverflowError: ``offset`` is negative.
        TypeError: ``file`` is neither a path nor an open file.
        FileNotFoundError: The file does not exist.
    """
    if sep != "":
        raise NotSupportedError(
            "Non-default value of the `sep` argument is not supported: "
            f"kvikio.numpy.fromfile reads binary files only (sep must be '', got {sep!r})"
        )
    if count < -1:
        # As NumPy's empty(count) says, which upstream's callers match; -1 reads all.
        raise ValueError(
            f"kvikio.numpy.fromfile: count {count}: negative dimensions are not allowed "
            "(-1 reads to the end of the file)"
        )
    if offset < 0:
        raise OverflowError(f"offset must not be negative, got {offset}")
    path = _path(file)
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        # Object items are PyObject pointers: file bytes in them would crash the interpreter.
        raise ValueError("Cannot read into object array")
    with CuFile(path, "r") as f:
        available = f.nbytes() - offset
        if available < 0:
            raise ValueError(f"offset {offset} is beyond the end of {path!r}")
        whole = available // dtype.itemsize
        count = whole if count < 0 else min(count, whole)
        if like is None:
            out = np.empty(count, dtype=dtype)
        else:
            out = np.empty_like(like, dtype=dtype, shape=(count,))
        if count > 0:
            f.read(out, file_offset=offset)
    return out


def tofile(ary: Any, file: PathOrFile, sep: str = "", format: str = "%s") -> None:
    """Write the bytes of an array in C order to a file, like ``ndarray.tofile``; binary only.

    A CuPy array is written from device memory.

    Args:
        ary: The array (host or device).
        file: A path, or an open file object (reopened by name and truncated).
        sep: Only ``""`` (binary) is supported.
        format: Accepted for NumPy's signature; unused in binary mode.

    Raises:
        kvikio.errors.NotSupportedError: ``sep`` is not ``""`` (a ``ValueError`` and a
            ``NotImplementedError``).
        TypeError: An object array (refused before the file is truncated), or ``file`` is
            neither a path nor an open file.
    """
    if sep != "":
        raise NotSupportedError(
            "Non-default value of the `sep` argument is not supported: "
            f"kvikio.numpy.tofile writes binary files only (sep must be '', got {sep!r})"
        )
    dtype = getattr(ary, "dtype", None)
    if getattr(dtype, "hasobject", False):
        # Refused before "w" truncates the file; CuFile.write refuses such buffers as well.
        raise TypeError(
            f"kvikio.numpy.tofile cannot write object arrays (dtype {dtype}): "
            "their items are Python object pointers, not data"
        )
    path = _path(file)
    try:
        contiguous = np.ascontiguousarray(ary, like=ary)
    except TypeError:  # an array library without __array_function__ for it
        contiguous = ary
    with CuFile(path, "w") as f:
        f.write(contiguous)
