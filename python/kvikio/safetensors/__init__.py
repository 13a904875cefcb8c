"""Safetensors checkpoints straight into host or GPU memory, with the calls of the
``safetensors`` package: change ``from safetensors import safe_open`` to
``from kvikio.safetensors import safe_open`` (and ``safetensors.torch``/``.numpy`` to
``kvikio.safetensors.torch``/``.numpy``; ``kvikio.safetensors.cupy`` is ours, shaped like them).

Underneath, the header plans the reads; adjacent tensors share one read into one allocation
(the tensors are views of it); the reads of a whole checkpoint, all its shards, are issued at
once on kvikio's thread pool, through :class:`kvikio.CuFile` (local files) or
:class:`kvikio.RemoteFile` (HTTP, S3, WebHDFS). Pinned bounce buffers for device memory are
the pool bounded by the ``bounce_buffer_size`` and ``num_threads`` settings.

A sharded checkpoint is opened through its ``*.safetensors.index.json``; ``load_file`` and
``safe_open.get_tensors`` take a list of names or a filter; ``get_slice(name)[rows]`` and
``[:, cols]`` read only the selected bytes.
"""

from kvikio.safetensors._format import (
    DTYPES,
    Dtype,
    Header,
    ReadRange,
    TensorInfo,
    parse_header,
    plan_reads,
)
from kvikio.safetensors._open import Slice, safe_open
from kvikio.safetensors.errors import (
    HeaderError,
    IndexFileError,
    MetadataError,
    MissingShardError,
    SafetensorError,
    TensorInfoError,
    TensorNotFoundError,
    UnknownDtypeError,
    UnsupportedDtypeError,
)

__all__ = [
    "DTYPES",
    "Dtype",
    "Header",
    "HeaderError",
    "IndexFileError",
    "MetadataError",
    "MissingShardError",
    "ReadRange",
    "SafetensorError",
    "Slice",
    "TensorInfo",
    "TensorInfoError",
    "TensorNotFoundError",
    "UnknownDtypeError",
    "UnsupportedDtypeError",
    "parse_header",
    "plan_reads",
    "safe_open",
]
