"""Planning a slice of a tensor: the byte runs that hold the selected elements (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Tuple

import numpy as np

from kvikio.safetensors._format import TensorInfo
from kvikio.safetensors.errors import UnsupportedDtypeError


@dataclass
class SlicePlan:
    """``run`` bytes at each of ``offsets`` (relative to the tensor's first byte), in order,
    make the result of shape ``shape`` (C order)."""

    shape: Tuple[int, ...]
    run: int
    offsets: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.run * len(self.offsets) if self.run else 0


def _normalise(key: Any, shape: Tuple[int, ...], name: str) -> List[Tuple[range, bool]]:
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        if any(k is Ellipsis for k in key[i + 1 :]):
            raise IndexError(f"tensor {name!r}: an index can only have a single ellipsis")
        fill = len(shape) - (len(key) - 1)
        key = key[:i] + (slice(None),) * max(fill, 0) + key[i + 1 :]
    if len(key) > len(shape):
        raise IndexError(f"tensor {name!r}: {len(key)} indices for {len(shape)} dimensions")
    key = key + (slice(None),) * (len(shape) - len(key))
    out = []
    for dim, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            if k.step is not None and k.step <= 0:
                raise ValueError(f"tensor {name!r}: slice step must be positive, got {k.step}")
            out.append((range(*k.indices(n)), False))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"tensor {name!r}: index {i} out of range for dimension {dim} "
                                 f"of size {n}")
            i %= n
            out.append((range(i, i + 1), True))
        else:
            raise TypeError(f"tensor {name!r}: index {k!r} is neither an int nor a slice")
    return out


def plan_slice(info: TensorInfo, key: Any) -> SlicePlan:
    """The reads of ``info[key]`` (ints, slices with positive steps, one ``...``).

    Only the selected bytes are read: trailing dimensions taken whole and one contiguous
    range before them make one run per combination of the leading indices, so a row range
    is one run and a column range of a matrix one run per row.

    Raises:
        IndexError, TypeError, ValueError: A bad index.
        UnsupportedDtypeError: A slice that splits the bytes of a packed dtype (F4, F6).
    """
    shape = info.shape
    sel = _normalise(key, shape, info.name)
    out_shape = tuple(len(r) for r, squeeze in sel if not squeeze)
    if not shape:
        return SlicePlan((), info.nbytes, np.zeros(1, dtype=np.int64))
    if any(len(r) == 0 for r, _ in sel):
        return SlicePlan(out_shape, 0, np.zeros(0, dtype=np.int64))
    bits = info.dtype.bits
    # Byte strides of each dimension, in bits first so that packed dtypes are caught.
    strides_bits = [bits * math.prod(shape[d + 1 :]) for d in range(len(shape))]
    # k: the last dimension not taken whole; the dimensions after it are one block.
    k = len(shape) - 1
    while k >= 0 and sel[k][0] == range(shape[k]):
        k -= 1
    if k < 0:
        run_bits, lead, base_bits = bits * math.prod(shape), 0, 0
    elif sel[k][0].step == 1:
        run_bits, lead, base_bits = len(sel[k][0]) * strides_bits[k], k, sel[k][0].start * strides_bits[k]
    else:
        run_bits, lead, base_bits = strides_bits[k], k + 1, 0
    if run_bits % 8 or base_bits % 8 or any(s % 8 for s in strides_bits[:lead]):
        raise UnsupportedDtypeError(
            f"tensor {info.name!r}: this slice splits bytes of packed dtype {info.dtype.code}",
            tensor=info.name)
    offsets = np.full(1, base_bits // 8, dtype=np.int64)
    for d in range(lead):
        idx = np.arange(sel[d][0].start, sel[d][0].stop, sel[d][0].step, dtype=np.int64)
        offsets = np.add.outer(offsets, idx * (strides_bits[d] // 8)).reshape(-1)
    return SlicePlan(out_shape, run_bits // 8, offsets)
