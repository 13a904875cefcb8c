"""``torch`` tensors to and from safetensors files, as ``safetensors.torch`` does it.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

from kvikio.safetensors import _module
from kvikio.safetensors._open import Selection

PathLike = Union[str, "os.PathLike[str]"]
_FRAMEWORK = "pt"


def load_file(filename: PathLike, device: Any = "cpu", *, tensors: Selection = None,
              separate: bool = False, max_gap: int = 0, progress: Any = None,
              backend: str = "kvikio") -> Dict[str, Any]:
    """Load a safetensors file, a sharded checkpoint's ``*.safetensors.index.json`` or a URL
    into ``device`` ("cpu", "cuda", "cuda:N" or an ordinal).

    Args:
        filename: The file, index or URL (``http(s)://``, ``s3://``, ``webhdfs://``).
        device: Where the tensors go.
        tensors: None for all; a list of names; a predicate on the name (a filter).
        separate: One allocation per tensor instead of views of one per coalesced read.
        max_gap: Bytes between wanted tensors a read may span to join them (filtered loads).
        progress: None; a ``callback(done_bytes, total_bytes)``; a tqdm-like object; True.
        backend: Accepted for ``safetensors``' ``"mmap"``/``"pread"``; the reads are kvikio's.

    Returns:
        The tensors by name (``torch.Tensor``), in file order.

    Raises:
        kvikio.safetensors.errors.SafetensorError: A bad header or index; the message names
            the file and the tensor.
        FileNotFoundError: The file, or a shard of the index, does not exist.
    """
    return _module.load_file(_FRAMEWORK, filename, device, tensors, separate, max_gap, progress,
                             backend)


def save_file(tensors: Dict[str, Any], filename: PathLike,
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Save ``tensors`` as a safetensors file, byte for byte what ``safetensors`` writes;
    each tensor written from where it is (host or device), all at once. An ``s3://`` URL
    is written with a multipart upload.

    Args:
        tensors: The tensors by name.
        filename: The file, or an ``s3://`` URL.
        metadata: Free-form text metadata for the header.

    Raises:
        ValueError: A tensor is not a ``torch.Tensor``, or ``metadata`` is not a map of strings.
        TypeError: A dtype safetensors cannot store
            (:class:`~kvikio.safetensors.errors.UnsupportedDtypeError`).
    """
    _module.save_file(_FRAMEWORK, tensors, filename, metadata)


def save(tensors: Dict[str, Any], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of the safetensors file of ``tensors``.

    Args:
        tensors: The tensors by name.
        metadata: Free-form text metadata for the header.

    Returns:
        The file's bytes.
    """
    return _module.save(_FRAMEWORK, tensors, metadata)


def load(data: bytes) -> Dict[str, Any]:
    """The tensors of a safetensors file's bytes.

    Args:
        data: The file's bytes.

    Returns:
        The tensors by name (``torch.Tensor``).
    """
    return _module.load(_FRAMEWORK, data, "cpu")
