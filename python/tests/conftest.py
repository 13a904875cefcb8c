"""Shared fixtures: random data, and which GPU array libraries are usable here."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import kvikio
import kvikio.defaults


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)


@pytest.fixture
def random_bytes(rng):
    """random_bytes(n) -> a uint8 NumPy array of n random bytes (never all zeros)."""

    def make(n: int) -> np.ndarray:
        return rng.integers(0, 256, size=n, dtype=np.uint8)

    return make


@pytest.fixture(autouse=True)
def restore_settings():
    """Every test starts and ends with the same settings."""
    keys = kvikio.defaults.keys()
    before = {k: kvikio.defaults.get(k) for k in keys}
    yield
    kvikio.defaults.set(before)


def _gpu_module(name: str):
    """The module if it imports and sees a CUDA device, else None (with the reason)."""
    try:
        mod = importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - any import failure means "not here"
        return None, f"{name} is not installed ({type(e).__name__})"
    try:
        if name == "cupy":
            ok = mod.cuda.runtime.getDeviceCount() > 0
        elif name == "numba.cuda":
            ok = mod.is_available()
        elif name == "torch":
            ok = mod.cuda.is_available()
        else:
            ok = False
    except Exception as e:  # noqa: BLE001
        return None, f"{name} sees no CUDA device ({e})"
    return (mod, "") if ok else (None, f"{name} sees no CUDA device")


def gpu_module(name: str):
    """The module, or a visible skip without a GPU."""
    mod, reason = _gpu_module(name)
    if mod is None:
        pytest.skip(f"needs a GPU: {reason}")
    return mod


@pytest.fixture
def cupy():
    return gpu_module("cupy")


@pytest.fixture
def numba_cuda():
    return gpu_module("numba.cuda")


@pytest.fixture
def torch_cuda():
    return gpu_module("torch")


# Loopback HTTP, WebHDFS and S3 (moto) servers for the remote tests (session-scoped).
from remote_servers import http_server, remote_root, s3_env, s3_server, webhdfs_server  # noqa: E402,F401
