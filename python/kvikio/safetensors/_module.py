"""The four calls every framework module has, written once: ``load_file``, ``save_file``,
``load`` and ``save``."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from kvikio.safetensors._frameworks import framework_for
from kvikio.safetensors._io import deserialize, serialize, write_file
from kvikio.safetensors._open import Selection, safe_open


def load_file(framework: str, filename: Any, device: Any, tensors: Selection, separate: bool,
              max_gap: int, progress: Any, backend: str = "kvikio") -> Dict[str, Any]:
    with safe_open(filename, framework, device, separate=separate, max_gap=max_gap,
                   progress=progress, backend=backend) as f:
        return f.get_tensors(tensors)


def save_file(framework: str, tensors: Mapping[str, Any], filename: Any,
              metadata: Optional[Mapping[str, str]]) -> None:
    write_file(tensors, filename, metadata, framework_for(framework, _device_of(framework)))


def save(framework: str, tensors: Mapping[str, Any],
         metadata: Optional[Mapping[str, str]]) -> bytes:
    return serialize(tensors, metadata, framework_for(framework, _device_of(framework)))


def load(framework: str, data: bytes, device: Any) -> Dict[str, Any]:
    return deserialize(data, framework_for(framework, device))


def _device_of(framework: str) -> Any:
    return "cuda" if framework == "cupy" else "cpu"
