"""``python -m kvikio.benchmarks.overhead``: the cost of the Python layer.

Times ``CuFile.pread(buf).get()`` of a small request (4 KiB by default, page cache hot) from
a Python loop, and the same ``FileHandle::pread(...).get()`` from a C++ loop in the
benchmarks' native module ``kvikio._bench`` (no Python in between). Reports both per-call
times and their ratio; the target is a ratio of at most 1.5.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import kvikio
import kvikio.defaults
from kvikio import _bench


def measure(size: int, iterations: int, repetitions: int, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "overhead.bin")
        data = np.random.default_rng(1).integers(0, 256, size=size, dtype=np.uint8)
        data.tofile(path)
        buf = np.empty(size, dtype=np.uint8)
        py_times, cpp_times = [], []
        with kvikio.defaults.set({"num_threads": threads}), kvikio.CuFile(path, "r") as f:
            for _ in range(1000):  # warm the page cache, the pool and the code paths
                f.pread(buf).get()
            _bench.pread_get_loop(path, buf, size, 0, 1000)
            for _ in range(repetitions):
                pread = f.pread
                t0 = time.perf_counter()
                for _ in range(iterations):
                    pread(buf).get()
                py_times.append((time.perf_counter() - t0) / iterations)
                cpp_times.append(_bench.pread_get_loop(path, buf, size, 0, iterations) / iterations)
        assert np.array_equal(buf, data)
    py, cpp = statistics.median(py_times), statistics.median(cpp_times)
    return {"size": size, "iterations": iterations, "repetitions": repetitions,
            "threads": threads, "python_us": py * 1e6, "cpp_us": cpp * 1e6, "ratio": py / cpp}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kvikio.benchmarks.overhead", description=__doc__)
    p.add_argument("--size", type=int, default=4096, help="bytes per pread (default 4096)")
    p.add_argument("--iterations", type=int, default=20000, help="calls per timed loop")
    p.add_argument("--repetitions", type=int, default=5, help="timed loops; the median counts")
    p.add_argument("--threads", type=int, default=1, help="num_threads of the pool (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args(argv)
    r = measure(a.size, a.iterations, a.repetitions, a.threads)
    if a.json:
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}))
    else:
        print(f"pread({a.size} B).get(), {a.threads} thread(s), median of {a.repetitions} x "
              f"{a.iterations} calls:")
        print(f"  from Python: {r['python_us']:8.2f} us/call")
        print(f"  from C++:    {r['cpp_us']:8.2f} us/call")
        print(f"  ratio:       {r['ratio']:8.2f}x (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
