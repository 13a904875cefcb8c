"""Timing code that runs under any KvikIO: this one, or upstream KvikIO in another interpreter.

The benchmarks ``zarr_io`` and ``overhead`` call :func:`time_zarr` and
:func:`time_open_read_close` in their own process, and, with ``--compare-upstream PYTHON``,
run this file as a script under ``PYTHON`` (:func:`run_worker`) so that another
installation (upstream's ``kvikio-cu13`` wheel in its own venv) runs the very same code
over the very same files:

    PYTHON _compare_worker.py '{"kind": "zarr", ...}'

As a script it imports nothing of this package (only ``kvikio``, ``zarr``, ``numpy`` and
``cupy`` as the other interpreter has them) and prints one JSON object: the timings, or
``{"error": ...}`` with exit status 3 when ``kvikio`` does not import there, 4 when the
timing itself failed.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import traceback

IMPORT_FAILED = 3
TIMING_FAILED = 4


def expected_values(n: int, dtype, xp):
    """The array the benchmarks write: small integers, exact in any float or int dtype."""
    return (xp.arange(n, dtype="int64") % 1000).astype(dtype)


def _kvikio_identity() -> dict:
    import kvikio

    return {"version": getattr(kvikio, "__version__", "?"), "file": kvikio.__file__}


def _set_threads(threads: int) -> None:
    import kvikio.defaults

    try:
        kvikio.defaults.set({"num_threads": threads})
    except (AttributeError, TypeError):  # an older kvikio: only the *_reset setters
        kvikio.defaults.num_threads_reset(threads)


def time_zarr(spec: dict) -> dict:
    """Timings (seconds) of full reads of the zarr array at ``spec["root"]``.

    ``spec``: root, store ("gds": kvikio.zarr.GDSStore, "local": zarr's LocalStore),
    memory ("device": chunks in GPU memory, ``zarr.config.enable_gpu()`` for GDSStore and
    ``cupy.asarray`` after LocalStore; "host"), repetitions, warmup, threads. Every read is
    checked against :func:`expected_values`. Returns ``{"seconds": [...], "kvikio": ...}``."""
    import numpy
    import zarr

    device = spec["memory"] == "device"
    if device:
        import cupy

        xp, sync = cupy, cupy.cuda.runtime.deviceSynchronize
    else:
        xp, sync = numpy, (lambda: None)
    _set_threads(spec["threads"])
    root = spec["root"]
    if spec["store"] == "gds":
        from kvikio.zarr import GDSStore as store_cls
    else:
        from zarr.storage import LocalStore as store_cls

    def read():
        store = store_cls(root, read_only=True)
        if device and spec["store"] == "gds":
            with zarr.config.enable_gpu():
                return zarr.open_array(store=store, mode="r")[...]
        got = zarr.open_array(store=store, mode="r")[...]
        return xp.asarray(got)

    first = read()  # the first warm-up read also gives the shape and dtype to check against
    expected = expected_values(first.size, first.dtype, xp)
    del first
    for _ in range(max(0, spec["warmup"] - 1)):
        read()
    seconds = []
    for _ in range(spec["repetitions"]):
        sync()
        t0 = time.perf_counter()
        got = read()
        sync()
        seconds.append(time.perf_counter() - t0)
        if not isinstance(got, xp.ndarray) or not bool((got == expected).all()):
            raise RuntimeError(f"{spec['store']} store read back different data")
        del got
    return {"seconds": seconds, "kvikio": _kvikio_identity()}


def time_open_read_close(spec: dict) -> dict:
    """Per-call microseconds of open + read of the whole file + close of ``spec["path"]``
    into a host buffer: through ``kvikio.CuFile`` and through plain ``os.open`` +
    ``os.preadv`` + ``os.close``, the two loops taking turns; medians of ``repetitions``
    loops of ``iterations`` calls each."""
    import numpy

    import kvikio

    path, size = spec["path"], os.path.getsize(spec["path"])
    buf = numpy.empty(size, dtype=numpy.uint8)
    CuFile = kvikio.CuFile

    def through_kvikio():
        f = CuFile(path, "r")
        f.read(buf, size, 0)
        f.close()

    def plain():
        fd = os.open(path, os.O_RDONLY)
        os.preadv(fd, [buf], 0)
        os.close(fd)

    loops = {"kvikio": through_kvikio, "plain": plain}
    times: dict[str, list[float]] = {k: [] for k in loops}
    for fn in loops.values():  # warm the page cache and the code paths
        for _ in range(min(200, spec["iterations"])):
            fn()
    for _ in range(spec["repetitions"]):
        for name, fn in loops.items():
            t0 = time.perf_counter()
            for _ in range(spec["iterations"]):
                fn()
            times[name].append((time.perf_counter() - t0) / spec["iterations"])
    buf[:] = 0
    through_kvikio()
    with open(path, "rb") as f:
        if buf.tobytes() != f.read():
            raise RuntimeError("kvikio.CuFile read back different data")
    us = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    return {"kvikio_us": us["kvikio"], "plain_us": us["plain"],
            "ratio": us["kvikio"] / us["plain"], "kvikio": _kvikio_identity()}


_KINDS = {"zarr": time_zarr, "open_read_close": time_open_read_close}


def run_worker(python: str, spec: dict, timeout: float | None = None) -> dict:
    """Runs this file under the interpreter ``python`` with ``spec``; its JSON answer, or
    ``{"error": ...}`` saying why there is none (kvikio does not import there, the timing
    failed, the interpreter is missing, it ran past ``timeout`` seconds)."""
    try:
        r = subprocess.run([python, os.path.abspath(__file__), json.dumps(spec)],
                           capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return {"error": f"interpreter '{python}' not found"}
    except subprocess.TimeoutExpired:
        return {"error": f"'{python}' ran past {timeout} s"}
    lines = r.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"'{python}' exited with status {r.returncode}: {tail}"}
    return answer


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    try:
        import kvikio  # noqa: F401
    except Exception as e:  # any failure: a missing CUDA library raises OSError or ImportError
        print(json.dumps({"error": f"import kvikio failed under {sys.executable}: "
                                   f"{type(e).__name__}: {e}"}))
        return IMPORT_FAILED
    try:
        answer = _KINDS[spec["kind"]](spec)
    except Exception as e:
        traceback.print_exc()
        print(json.dumps({"error": f"{spec['kind']} timing failed under {sys.executable}: "
                                   f"{type(e).__name__}: {e}",
                          "kvikio": _kvikio_identity()}))
        return TIMING_FAILED
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    # Run by path, Python puts this file's folder first on sys.path; nothing there may
    # stand in for the other interpreter's own packages.
    del sys.path[0]
    sys.exit(main(sys.argv[1:]))
