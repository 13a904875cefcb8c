"""NumPy-style helpers: :func:`fromfile` and :func:`tofile` through kvikio.

``like=`` selects the array library of the result (e.g. a CuPy array reads straight into
GPU memory).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from kvikio.cufile import CuFile

__all__ = ["fromfile", "tofile"]


def fromfile(
    file: "str | os.PathLike[str]",
    dtype: Any = float,
    count: int = -1,
    sep: str = "",
    offset: int = 0,
    *,
    like: Any = None,
) -> Any:
    """Read binary data of ``dtype`` from ``file`` (like ``numpy.fromfile``).

    ``count=-1`` reads to the end of the file; ``offset`` is in bytes. Only binary files
    (``sep=""``) are supported. Object dtypes raise ``ValueError``, as in NumPy."""
    if sep != "":
        raise ValueError(f"kvikio.numpy.fromfile reads binary files only (sep must be '', got {sep!r})")
    if offset < 0:
        raise OverflowError(f"offset must not be negative, got {offset}")
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        # Object items are PyObject pointers: file bytes in them would crash the interpreter.
        raise ValueError("Cannot read into object array")
    with CuFile(file, "r") as f:
        if count < 0:
            available = f.nbytes() - offset
            if available < 0:
                raise ValueError(f"offset {offset} is beyond the end of {os.fspath(file)!r}")
            count = available // dtype.itemsize
        if like is None:
            out = np.empty(count, dtype=dtype)
        else:
            out = np.empty_like(like, dtype=dtype, shape=(count,))
        f.read(out, file_offset=offset)
    return out


def tofile(ndarray: Any, file: "str | os.PathLike[str]", sep: str = "", format: str = "%s") -> None:
    """Write the bytes of a C-contiguous array to ``file`` (like ``ndarray.tofile``);
    binary only."""
    if sep != "":
        raise ValueError(f"kvikio.numpy.tofile writes binary files only (sep must be '', got {sep!r})")
    dtype = getattr(ndarray, "dtype", None)
    if getattr(dtype, "hasobject", False):
        # Refused before "w" truncates the file; CuFile.write refuses such buffers as well.
        raise TypeError(
            f"kvikio.numpy.tofile cannot write object arrays (dtype {dtype}): "
            "their items are Python object pointers, not data"
        )
    with CuFile(file, "w") as f:
        f.write(ndarray)
