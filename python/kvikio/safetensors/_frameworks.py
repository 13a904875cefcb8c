"""What each framework contributes to loading and saving: allocating a byte buffer on a device,
viewing a tensor in it, and handing a tensor's bytes to the IO calls. Everything else
(planning, reading, writing) is shared."""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional, Tuple

import numpy as np

from kvikio.safetensors._format import DTYPES, Dtype, TensorInfo
from kvikio.safetensors.errors import UnsupportedDtypeError

# Framework dtype names (``numpy.dtype.name``, ``str(torch.dtype)`` without ``torch.``) and the
# format codes the ``safetensors`` writer gives them.
NAME_TO_CODE = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "uint16": "U16", "int16": "I16",
    "uint32": "U32", "int32": "I32", "uint64": "U64", "int64": "I64", "float16": "F16",
    "bfloat16": "BF16", "float32": "F32", "float64": "F64", "complex64": "C64",
    "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2", "float8_e4m3fnuz": "F8_E4M3FNUZ",
    "float8_e5m2fnuz": "F8_E5M2FNUZ", "float8_e8m0fnu": "F8_E8M0", "float4_e2m1fn_x2": "F4",
}

# NumPy (and CuPy, shaped like it) hold what ``safetensors.numpy`` maps; the others raise.
_NUMPY_TYPES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
    "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64,
    "F16": np.float16, "F32": np.float32, "F64": np.float64, "C64": np.complex64,
}


def _code_of(name: str, tensor: str, framework: str) -> str:
    code = NAME_TO_CODE.get(name)
    if code is None:
        raise UnsupportedDtypeError(
            f"tensor {tensor!r}: {framework} dtype {name} has no safetensors dtype "
            f"(supported: {', '.join(NAME_TO_CODE)})", tensor=tensor)
    return code


# parse_cuda_device's answer for "cuda" without an ordinal: the current device.
CURRENT = -1


def parse_cuda_device(device: Any) -> Optional[int]:
    """The CUDA ordinal of ``device`` ("cuda:N", N, a torch/cupy device; :data:`CURRENT` for
    "cuda"), or None for the CPU ("cpu", None)."""
    if device is None:
        return None
    if isinstance(device, bool):
        raise ValueError(f"device {device!r} is not a device")
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f"device {device} is negative")
        return device
    if hasattr(device, "type") and hasattr(device, "index"):  # torch.device
        if device.type == "cpu":
            return None
        return CURRENT if device.index is None else device.index
    if hasattr(device, "id"):  # cupy.cuda.Device
        return int(device.id)
    if isinstance(device, str):
        text = device.strip().lower()
        if text == "cpu":
            return None
        if text == "cuda":
            return CURRENT
        if text.startswith("cuda:") and text[5:].isdigit():
            return int(text[5:])
    raise ValueError(f"device {device!r} is neither 'cpu' nor 'cuda[:N]' nor an ordinal")


class Framework:
    """The interface: ``name`` as safetensors spells the framework."""

    name = ""
    is_device = False

    def __init__(self, device: Any) -> None:
        self.device = device

    def empty(self, nbytes: int) -> Any:
        raise NotImplementedError

    def from_host(self, host: np.ndarray) -> Any:
        """A buffer on this framework's device with ``host``'s bytes (uint8)."""
        raise NotImplementedError

    def check(self, info: TensorInfo, filename: str) -> None:
        """Raise :class:`UnsupportedDtypeError` when this framework cannot hold ``info``."""
        _numpy_dtype(info, filename, self.name)

    def view(self, buf: Any, offset: int, info: TensorInfo, filename: str) -> Any:
        raise NotImplementedError

    def save_spec(self, tensor: Any, name: str) -> Tuple[str, Tuple[int, ...], Any, int]:
        """``(code, header shape, a contiguous uint8 buffer of the bytes, nbytes)``."""
        raise NotImplementedError

    def to_host_bytes(self, buf: Any) -> bytes:
        raise NotImplementedError

    def check_shared(self, tensors: Dict[str, Any]) -> None:
        """Raise when the tensors to save overlap in memory (torch only)."""


def _registered_bfloat16() -> Any:
    """NumPy's "bfloat16" where a module registered one (ml_dtypes, once imported, as JAX and
    others do): ``safetensors.numpy`` then gives BF16 tensors that dtype, and so do we."""
    try:
        return np.dtype("bfloat16")
    except TypeError:
        return None


def _numpy_dtype(info: TensorInfo, filename: str, framework: str) -> Any:
    dtype = _NUMPY_TYPES.get(info.dtype.code)
    if dtype is None and info.dtype.code == "BF16" and framework == "numpy":
        dtype = _registered_bfloat16()
    if dtype is None:
        raise UnsupportedDtypeError(
            f"{filename}: tensor {info.name!r}: {framework} has no dtype for {info.dtype.code} "
            f"(use framework 'pt'; the {framework} dtypes: {', '.join(_NUMPY_TYPES)})",
            filename=filename, tensor=info.name)
    return dtype


def _little_endian(arr: Any) -> Any:
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and sys.byteorder == "big"):
        return arr.astype(arr.dtype.newbyteorder("<"))
    return arr


class NumpyFramework(Framework):
    name = "numpy"

    def __init__(self, device: Any) -> None:
        if parse_cuda_device(device) is not None:
            raise ValueError(f"framework numpy loads into host memory only, not {device!r}")
        super().__init__(None)

    def empty(self, nbytes: int) -> np.ndarray:
        return np.empty(nbytes, dtype=np.uint8)

    def from_host(self, host: np.ndarray) -> np.ndarray:
        return host

    def view(self, buf: np.ndarray, offset: int, info: TensorInfo, filename: str) -> np.ndarray:
        dtype = np.dtype(_numpy_dtype(info, filename, "numpy"))
        part = buf[offset : offset + info.nbytes]
        if dtype.itemsize > 1 and part.ctypes.data % dtype.itemsize:
            part = part.copy()  # a file whose offsets break alignment: its own allocation
        return part.view(dtype).reshape(info.shape)

    def save_spec(self, tensor: Any, name: str):
        if not isinstance(tensor, np.ndarray):
            raise ValueError(f"tensor {name!r}: expected a numpy.ndarray, got {type(tensor)}")
        arr = _little_endian(tensor)
        if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
            arr = arr.copy(order="C")
        code = _code_of(arr.dtype.name, name, "numpy")
        return code, tuple(arr.shape), arr.reshape(-1).view(np.uint8), arr.nbytes

    def to_host_bytes(self, buf: np.ndarray) -> bytes:
        return buf.tobytes()


class CupyFramework(Framework):
    name = "cupy"
    is_device = True

    def __init__(self, device: Any) -> None:
        import cupy

        self.cupy = cupy
        ordinal = parse_cuda_device("cuda" if device is None else device)
        if ordinal is None:
            raise ValueError(f"framework cupy loads into device memory only, not {device!r}")
        super().__init__(cupy.cuda.runtime.getDevice() if ordinal == CURRENT else ordinal)

    def empty(self, nbytes: int) -> Any:
        with self.cupy.cuda.Device(self.device):
            return self.cupy.empty(nbytes, dtype=self.cupy.uint8)

    def from_host(self, host: np.ndarray) -> Any:
        with self.cupy.cuda.Device(self.device):
            return self.cupy.asarray(host)

    def view(self, buf: Any, offset: int, info: TensorInfo, filename: str) -> Any:
        dtype = np.dtype(_numpy_dtype(info, filename, "cupy"))
        part = buf[offset : offset + info.nbytes]
        if dtype.itemsize > 1 and part.data.ptr % dtype.itemsize:
            part = part.copy()
        return part.view(dtype).reshape(info.shape)

    def save_spec(self, tensor: Any, name: str):
        if isinstance(tensor, np.ndarray):
            return NumpyFramework(None).save_spec(tensor, name)
        if not isinstance(tensor, self.cupy.ndarray):
            raise ValueError(f"tensor {name!r}: expected a cupy.ndarray, got {type(tensor)}")
        arr = tensor if tensor.flags.c_contiguous else tensor.copy(order="C")
        code = _code_of(arr.dtype.name, name, "cupy")
        return code, tuple(arr.shape), arr.reshape(-1).view(self.cupy.uint8), arr.nbytes

    def to_host_bytes(self, buf: Any) -> bytes:
        if isinstance(buf, np.ndarray):
            return buf.tobytes()
        return self.cupy.asnumpy(buf).tobytes()


def torch_types(torch: Any) -> Dict[str, Any]:
    """Format code -> torch dtype, as ``safetensors.torch`` maps them (the F8 and unsigned
    kinds where this torch has them)."""
    names = {
        "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16",
        "I32": "int32", "U32": "uint32", "I64": "int64", "U64": "uint64", "F16": "float16",
        "BF16": "bfloat16", "F32": "float32", "F64": "float64", "C64": "complex64",
        "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "F8_E4M3FNUZ": "float8_e4m3fnuz",
        "F8_E5M2FNUZ": "float8_e5m2fnuz", "F8_E8M0": "float8_e8m0fnu", "F4": "float4_e2m1fn_x2",
    }
    return {code: getattr(torch, n) for code, n in names.items() if hasattr(torch, n)}


class TorchFramework(Framework):
    name = "pt"

    def __init__(self, device: Any) -> None:
        import torch

        self.torch = torch
        self.types = torch_types(torch)
        ordinal = parse_cuda_device(device)
        if ordinal is None:
            where = torch.device("cpu")
        elif ordinal == CURRENT:
            where = torch.device("cuda", torch.cuda.current_device())
        else:
            where = torch.device("cuda", ordinal)
        super().__init__(where)
        self.is_device = ordinal is not None

    def empty(self, nbytes: int) -> Any:
        return self.torch.empty(nbytes, dtype=self.torch.uint8, device=self.device)

    def from_host(self, host: np.ndarray) -> Any:
        # torch warns on read-only arrays (load() of bytes): those are copied.
        t = self.torch.from_numpy(host if host.flags.writeable else host.copy())
        return t.to(self.device) if self.device.type != "cpu" else t

    def _dtype(self, code: str, filename: str, tensor: str) -> Any:
        dtype = self.types.get(code)
        if dtype is None:
            raise UnsupportedDtypeError(
                f"{filename}: tensor {tensor!r}: this torch ({self.torch.__version__}) has no "
                f"dtype for {code}", filename=filename, tensor=tensor)
        return dtype

    def check(self, info: TensorInfo, filename: str) -> None:
        self._dtype(info.dtype.code, filename, info.name)

    def view(self, buf: Any, offset: int, info: TensorInfo, filename: str) -> Any:
        dtype = self._dtype(info.dtype.code, filename, info.name)
        shape = list(info.shape)
        if info.dtype.code == "F4":  # two elements a byte: torch's shape counts bytes
            shape[-1] //= 2
        part = buf[offset : offset + info.nbytes]
        itemsize = dtype.itemsize
        if itemsize > 1 and (part.data_ptr() % itemsize or part.storage_offset() % itemsize):
            part = part.clone()
        return part.view(dtype).reshape(shape)

    def save_spec(self, tensor: Any, name: str):
        torch = self.torch
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"tensor {name!r}: expected a torch.Tensor, got {type(tensor)}")
        if tensor.layout != torch.strided:
            raise ValueError(f"tensor {name!r}: sparse tensors cannot be saved (use .to_dense())")
        if not tensor.is_contiguous():
            raise ValueError(f"tensor {name!r}: not contiguous (call .contiguous() before saving)")
        code = _code_of(str(tensor.dtype).split(".")[-1], name, "torch")
        shape = list(tensor.shape)
        if code == "F4":
            shape[-1] *= 2
        flat = tensor.detach().reshape(-1)
        if flat.dtype != torch.uint8:
            flat = flat.view(torch.uint8)
        return code, tuple(shape), flat, flat.numel()

    def to_host_bytes(self, buf: Any) -> bytes:
        return buf.cpu().numpy().tobytes()

    def check_shared(self, tensors: Dict[str, Any]) -> None:
        """Refuse tensors that share memory, as ``safetensors.torch`` does (the file would
        hold the bytes twice and load them as two tensors)."""
        spans = []
        for name, t in tensors.items():
            if isinstance(t, self.torch.Tensor) and t.numel():
                start = t.data_ptr()
                spans.append((str(t.device), start, start + t.numel() * t.element_size(), name))
        spans.sort()
        shared, reach = [], None  # reach: (device, end, name) of the farthest span so far
        for device, start, end, name in spans:
            if reach is not None and reach[0] == device and start < reach[1]:
                shared.append((reach[2], name))
            if reach is None or reach[0] != device or end > reach[1]:
                reach = (device, end, name)
        if shared:
            raise RuntimeError(
                f"tensors share memory: {shared}; save each once (or .clone() one of them)")


FRAMEWORKS = {"numpy": NumpyFramework, "np": NumpyFramework, "pt": TorchFramework,
              "torch": TorchFramework, "pytorch": TorchFramework, "cupy": CupyFramework,
              "cp": CupyFramework}


def framework_for(name: str, device: Any) -> Framework:
    """The framework called ``name`` (as safetensors' ``safe_open`` spells it, plus "cupy")."""
    cls = FRAMEWORKS.get(str(name).lower())
    if cls is None:
        raise ValueError(f"framework {name!r} is not one of {sorted(FRAMEWORKS)}")
    return cls(device)


__all__ = ["DTYPES", "Dtype", "framework_for", "parse_cuda_device", "NAME_TO_CODE"]
