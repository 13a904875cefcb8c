"""Every Python code example of the seed specification, run unchanged.

The examples are read from the seed file at test time (``KVIKIO_SEED_PATH``, or
``shared/seed/...`` found beside or above the repository). Each runs in a fresh temporary
directory holding the files the examples read (``data.bin``, ``large_data.bin``,
``signal.bin``), with random contents. A few snippets use names they do not define
(``f``/``buf`` in the alignment snippet, ``file_size`` in the pipelining one); those names
are provided, the code itself is not touched.

Where an example can run:
- host: NumPy/host memory only -> runs everywhere, CI included;
- gpu: uses CuPy or Numba device memory -> runs where a GPU is;
- driver: needs the cuFile driver properties -> runs where cuFile is usable;
- zarr: the GDSStore example (GPU chunks) -> runs where zarr>=3 and a GPU are;
- remote: RemoteFile into host memory -> runs everywhere against the loopback servers
  (python/tests/remote_servers.py): the example URLs are replaced by the local servers'
  (``https://example.com/...`` -> range_server.py, ``http://namenode:9870/...`` ->
  webhdfs_server.py), S3 goes to moto through AWS_ENDPOINT_URL and the other AWS_*
  variables, and ``presigned_url`` is provided; the code is otherwise run as written;
- remote-gpu: RemoteFile into CuPy memory -> also needs a GPU;
- needs cudf: cudf is installed nowhere here -> skipped with that reason.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from pathlib import Path

import numpy as np
import pytest

import kvikio

SEED_NAME = "000_6310cd0ca020fa06.txt"


def find_seed() -> Path | None:
    env = os.environ.get("KVIKIO_SEED_PATH")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for d in [here, *here.parents]:
        for candidate in (d / "shared" / "seed" / SEED_NAME, d.parent / "shared" / "seed" / SEED_NAME):
            if candidate.is_file():
                return candidate
    return None


def load_examples() -> list[tuple[str, str]]:
    """(id, code) of every ```python block, in order; the id names its heading."""
    path = find_seed()
    if path is None:
        return []
    text = path.read_text()
    examples = []
    heading = "top"
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):  # a fence: find its end
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            if line.strip() == "```python":
                code = "\n".join(lines[i + 1 : j]) + "\n"
                slug = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")
                examples.append((f"{len(examples) + 1:02d}-{slug}", code))
            i = j + 1
            continue
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        i += 1
    return examples


def classify(code: str) -> str:
    if "RemoteFile" in code:
        return "remote-gpu" if "cp." in code else "remote"
    if "zarr" in code:
        return "zarr"
    if "cudf" in code:
        return "cudf"
    if "cupy" in code or "numba" in code:
        return "gpu"
    if "cufile_driver" in code and ("major_version" in code or "cufile_driver.set" in code):
        return "driver"
    return "host"


EXAMPLES = load_examples()


def example_params():
    params = []
    for example_id, code in EXAMPLES:
        kind = classify(code)
        marks = []
        params.append(pytest.param(code, kind, id=f"{example_id}[{kind}]", marks=marks))
    return params


def test_seed_file_is_found_and_has_examples():
    path = find_seed()
    assert path is not None, (
        f"seed file {SEED_NAME} not found: set KVIKIO_SEED_PATH or keep shared/ beside the repo"
    )
    assert len(EXAMPLES) >= 25


@pytest.fixture(scope="session")
def seed_data(tmp_path_factory):
    rng = np.random.default_rng(7)
    d = tmp_path_factory.mktemp("seed-data")
    data = rng.standard_normal(10_000_000).astype(np.float32)  # 40 MB: the largest read
    (d / "data.bin").write_bytes(data.tobytes())
    large = rng.standard_normal(2 * 10_000_000).astype(np.float32)  # two pipeline chunks
    (d / "large_data.bin").write_bytes(large.tobytes())
    (d / "signal.bin").write_bytes(data[:1_000_000].tobytes())
    return d


def require(kind: str):
    if kind == "cudf":
        pytest.importorskip("cudf", reason="needs cudf (not installed here)")
    if kind == "zarr":
        pytest.importorskip("zarr", minversion="3", reason="needs zarr>=3 (not installed here)")
    if kind in ("gpu", "zarr", "remote-gpu"):
        from conftest import gpu_module

        gpu_module("cupy")
    if kind == "driver":
        try:
            kvikio.cufile_driver.get("major_version")
        except RuntimeError as e:
            pytest.skip(f"needs a usable cuFile driver (GPU machine): {e}")


@contextlib.contextmanager
def zarr_config_restored(kind: str):
    """The zarr example calls ``zarr.config.enable_gpu()`` for good; without this, every zarr
    test after it in the process would run with GPU buffers (and fail on GPU-less codecs)."""
    if kind != "zarr":
        yield
        return
    import copy

    import zarr

    saved = copy.deepcopy(zarr.config.config)
    try:
        yield
    finally:
        zarr.config.config = saved


def test_zarr_config_is_restored_after_the_zarr_example():
    zarr = pytest.importorskip("zarr", minversion="3")
    before = zarr.config.get("buffer")
    with zarr_config_restored("zarr"):
        zarr.config.enable_gpu()
        assert zarr.config.get("buffer") != before
    assert zarr.config.get("buffer") == before


@pytest.mark.parametrize("code,kind", example_params())
def test_seed_example(code, kind, seed_data, tmp_path, monkeypatch, request):
    require(kind)
    remote_expected = None
    anonymous = contextlib.nullcontext()
    if kind.startswith("remote"):
        code, remote_expected, anonymous = prepare_remote(code, request)
    for name in ("data.bin", "large_data.bin", "signal.bin"):
        (tmp_path / name).write_bytes((seed_data / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__seed_example__"}
    # Names that snippets use without defining them (the code itself is not changed).
    if re.search(r"^f\.read\(buf", code, re.M):
        namespace["f"] = kvikio.CuFile("data.bin", "r")
        namespace["buf"] = np.empty(4096 * 1000, dtype=np.uint8)
    if "file_size" in code and "file_size =" not in code and "file_size()" not in code:
        namespace["file_size"] = os.path.getsize("large_data.bin")
    if kind == "remote-gpu" and "cp." in code and "import cupy as cp" not in code:
        import cupy

        namespace["cp"] = cupy  # the WebHDFS snippet uses cp from the one before it
    if "presigned_url" in code and "presigned_url =" not in code:
        namespace["presigned_url"] = request.getfixturevalue("s3_server").presign(
            "my-bucket", "data/file.bin"
        )
    try:
        with anonymous, zarr_config_restored(kind):
            exec(compile(code, "<seed example>", "exec"), namespace)
    except PermissionError as e:
        if "drop_system_page_cache" in code:
            pytest.skip(f"needs permission to drop the system page cache: {e}")
        raise
    except OSError as e:
        if "drop_system_page_cache" in code and e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            pytest.skip(f"needs permission to drop the system page cache: {e}")
        raise
    finally:
        f = namespace.get("f")
        if isinstance(f, kvikio.CuFile):
            f.close()
    check_results(code, namespace, tmp_path, seed_data)
    if remote_expected is not None and "buf" in namespace:
        check_remote_buffer(namespace["buf"], remote_expected)


# The example's remote names, the local ones they are replaced with (None: kept, served by
# moto through AWS_ENDPOINT_URL), and the served file each one reads.
REMOTE_SOURCES = [
    ("https://example.com/data.bin", "http:data.bin", "data.bin"),
    ("https://example.com/file.bin", "http:file.bin", "file.bin"),
    ("http://namenode:9870/path/to/file", "webhdfs:path/to/file", "path/to/file"),
    ('"my-bucket", "data/file.bin"', None, "odd.bin"),
    ("s3://my-bucket/data/file.bin", None, "odd.bin"),
    ("s3://public-bucket/data.bin", None, "data.bin"),
    ("presigned_url", None, "odd.bin"),  # presigned for my-bucket/data/file.bin
    ('"my-bucket", "large-dataset.bin"', None, "data.bin"),
    ("s3://bucket/object", None, "file.bin"),
]


def prepare_remote(code: str, request):
    """The code with its URLs pointed at the loopback servers, the bytes of the object it
    reads last, and the context to run it in (anonymous access on for public and presigned
    S3, which moto serves only with IAM authentication off)."""
    last, expected = -1, None
    for name, local, served in REMOTE_SOURCES:
        pos = code.rfind(name)
        if pos < 0:
            continue
        root = request.getfixturevalue("remote_root")
        if pos > last:
            last, expected = pos, (root / served).read_bytes()
        if local is None:
            continue
        kind, path = local.split(":", 1)
        if kind == "http":
            code = code.replace(name, request.getfixturevalue("http_server").url(path))
        else:
            code = code.replace(name, request.getfixturevalue("webhdfs_server").url(path))
    anonymous = contextlib.nullcontext()
    if "s3" in code.lower() or "presigned_url" in code:
        s3 = request.getfixturevalue("s3_env")
        if "open_s3_public" in code or "presigned_url" in code:
            anonymous = s3.anonymous_access()
    return code, expected, anonymous


def check_remote_buffer(buf, expected: bytes) -> None:
    """The buffer the example read into holds the start of the object it read last."""
    host = buf.get() if hasattr(buf, "get") and not isinstance(buf, np.ndarray) else np.asarray(buf)
    data = host.tobytes()
    n = min(len(data), len(expected))
    assert n > 0
    assert data[:n] == expected[:n]


def check_results(code: str, ns: dict, tmp_path: Path, seed_data: Path) -> None:
    """Where an example leaves results behind, check them against the file contents."""
    expected = np.fromfile(seed_data / "data.bin", dtype=np.float32)
    if "save_checkpoint" in ns and "load_checkpoint" in ns:
        import cupy as cp

        arrays = {"w": cp.arange(1001, dtype=cp.float32), "b": cp.ones((7, 3), dtype=cp.float64)}
        ns["save_checkpoint"](arrays, str(tmp_path / "ckpt.bin"))
        back = ns["load_checkpoint"](
            {"w": ((1001,), cp.float32), "b": ((7, 3), cp.float64)}, str(tmp_path / "ckpt.bin")
        )
        for k in arrays:
            assert bool(cp.all(arrays[k] == back[k]))
    for name in ("arr", "data", "gpu_data", "buf_a"):
        value = ns.get(name)
        if value is None or not hasattr(value, "dtype") or value.dtype != np.float32:
            continue
        host = value.get() if hasattr(value, "get") and not isinstance(value, np.ndarray) else np.asarray(value)
        if name == "buf_a" or "f.write" in code:
            continue  # a pipeline buffer / data written by the example itself
        np.testing.assert_array_equal(host.ravel(), expected[: host.size])
