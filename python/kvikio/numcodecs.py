"""The base class of CUDA codecs for Numcodecs (https://numcodecs.readthedocs.io).

Upstream KvikIO keeps only this abstract class since its nvCOMP codecs were removed; a codec
that compresses or transforms on the GPU derives from :class:`CudaCodec` and implements
``encode`` and ``decode``. Needs ``numcodecs`` (and CuPy to run a codec).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Optional

from numcodecs.abc import Codec

BufferLike = Any
"""A NumPy or CuPy array, or anything exporting the buffer protocol."""

__all__ = ["BufferLike", "CudaCodec"]


class CudaCodec(Codec):
    """Abstract base class for codecs that run on the GPU."""

    @abstractmethod
    def encode(self, buf: BufferLike) -> Any:
        """Encode a buffer on the GPU.

        Args:
            buf: Host or device memory to encode.

        Returns:
            The encoded bytes, as a CuPy array.
        """

    @abstractmethod
    def decode(self, buf: BufferLike, out: Optional[BufferLike] = None) -> BufferLike:
        """Decode a buffer on the GPU.

        Args:
            buf: Host or device memory to decode.
            out: Where to decode to (exactly the decoded size); None allocates memory of
                ``buf``'s kind.

        Returns:
            The decoded data (``out`` when given).
        """
