"""The errors of :mod:`kvikio.safetensors`: each names the file and, where one is at fault, the
tensor (also as the ``filename`` and ``tensor`` attributes)."""

from __future__ import annotations

from typing import Optional

__all__ = [
    "SafetensorError",
    "HeaderError",
    "MetadataError",
    "TensorInfoError",
    "UnknownDtypeError",
    "UnsupportedDtypeError",
    "TensorNotFoundError",
    "MissingShardError",
    "IndexFileError",
]


class SafetensorError(ValueError):
    """A safetensors file, index or argument that cannot be used (a ``ValueError``).

    Args:
        message: What is wrong; it names the file and the tensor.
        filename: The file (or URL) at fault, also the ``filename`` attribute.
        tensor: The tensor at fault, if one is, also the ``tensor`` attribute.
    """

    def __init__(self, message: str, *, filename: Optional[str] = None,
                 tensor: Optional[str] = None) -> None:
        super().__init__(message)
        self.filename = filename
        self.tensor = tensor

    __str__ = BaseException.__str__


class HeaderError(SafetensorError):
    """The header cannot be read: truncated file, header length past the end, not UTF-8,
    not a JSON object."""


class MetadataError(SafetensorError):
    """``__metadata__`` is not a map of strings to strings."""


class TensorInfoError(SafetensorError):
    """A tensor's entry is wrong: malformed, duplicate name, offsets out of range,
    overlapping or leaving a gap, shape times dtype not the byte length."""


class UnknownDtypeError(TensorInfoError):
    """A dtype the safetensors format does not define."""


class UnsupportedDtypeError(SafetensorError, TypeError):
    """A dtype the format defines but the framework cannot hold (BF16 or F8 in NumPy), or a
    framework dtype the format cannot store: a ``TypeError`` too."""


class TensorNotFoundError(SafetensorError, KeyError):
    """A tensor name the file (or the index) does not have: a ``KeyError`` too."""


class MissingShardError(SafetensorError, FileNotFoundError):
    """A shard that an index names does not exist: a ``FileNotFoundError`` too."""


class IndexFileError(SafetensorError):
    """A ``*.safetensors.index.json`` that is not an index (no ``weight_map``, bad JSON)."""
