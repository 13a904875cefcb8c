"""``python -m kvikio.benchmarks.overhead``: the cost of the Python layer.

Times ``CuFile.pread(buf).get()`` of a small request (4 KiB by default, page cache hot) from
a Python loop, and the same ``FileHandle::pread(...).get()`` from a C++ loop in the
benchmarks' native module ``kvikio._bench`` (no Python in between). Reports both per-call
times and their ratio; the target is a ratio of at most 1.5. Also times ``CuFile.read(buf)``
against plain ``os.preadv`` from the same Python loop (issue 14's target: at most 2x).

With ``--open-read-close``, times instead opening a small file (64 KiB by default), reading
it whole into host memory and closing it, through ``CuFile`` and through plain ``os.open`` +
``os.preadv`` + ``os.close``, and reports their ratio (issue 14's target: at most 3x).
``--compare-upstream PYTHON`` runs the same loops under another interpreter (upstream
KvikIO's wheel in a venv) on the same file and reports both ratios.
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
        py_times, cpp_times, read_times, plain_times = [], [], [], []
        fd = os.open(path, os.O_RDONLY)
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
                read = f.read
                t0 = time.perf_counter()
                for _ in range(iterations):
                    read(buf)
                read_times.append((time.perf_counter() - t0) / iterations)
                preadv, bufs = os.preadv, [buf]
                t0 = time.perf_counter()
                for _ in range(iterations):
                    preadv(fd, bufs, 0)
                plain_times.append((time.perf_counter() - t0) / iterations)
        os.close(fd)
        assert np.array_equal(buf, data)
    py, cpp = statistics.median(py_times), statistics.median(cpp_times)
    rd, plain = statistics.median(read_times), statistics.median(plain_times)
    return {"size": size, "iterations": iterations, "repetitions": repetitions,
            "threads": threads, "python_us": py * 1e6, "cpp_us": cpp * 1e6, "ratio": py / cpp,
            "read_us": rd * 1e6, "plain_preadv_us": plain * 1e6, "read_ratio": rd / plain}


def measure_open_read_close(size: int, iterations: int, repetitions: int,
                            upstream: str | None) -> dict:
    from kvikio.benchmarks import _compare_worker as worker

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "open-read-close.bin")
        np.random.default_rng(2).integers(0, 256, size=size, dtype=np.uint8).tofile(path)
        spec = {"kind": "open_read_close", "path": path, "iterations": iterations,
                "repetitions": repetitions}
        out = {"size": size, "iterations": iterations, "repetitions": repetitions,
               "ours": worker.time_open_read_close(spec)}
        if upstream:
            out["upstream"] = worker.run_worker(upstream, spec)
            out["upstream"]["python"] = upstream
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kvikio.benchmarks.overhead", description=__doc__)
    p.add_argument("--size", type=int, default=None,
                   help="bytes per read (default 4096; 65536 with --open-read-close)")
    p.add_argument("--iterations", type=int, default=None,
                   help="calls per timed loop (default 20000; 2000 with --open-read-close)")
    p.add_argument("--repetitions", type=int, default=5, help="timed loops; the median counts")
    p.add_argument("--threads", type=int, default=1, help="num_threads of the pool (default 1)")
    p.add_argument("--open-read-close", action="store_true",
                   help="time open + read + close of a small file against the plain calls")
    p.add_argument("--compare-upstream", metavar="PYTHON", default=None,
                   help="with --open-read-close: the same loops under this interpreter too")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args(argv)
    if a.compare_upstream and not a.open_read_close:
        p.error("--compare-upstream goes with --open-read-close")
    if a.open_read_close:
        r = measure_open_read_close(a.size or 65536, a.iterations or 2000, a.repetitions,
                                    a.compare_upstream)
        up = r.get("upstream")
        if a.json:
            print(json.dumps(r))
        else:
            print(f"open + read({r['size']} B, host memory) + close, median of {a.repetitions} x "
                  f"{r['iterations']} calls:")
            for who, x in (("ours", r["ours"]), ("upstream", up)):
                if x is None:
                    continue
                if "error" in x:
                    print(f"  {who:<9} FAILED: {x['error']}")
                    continue
                print(f"  {who:<9} CuFile {x['kvikio_us']:8.2f} us, plain {x['plain_us']:8.2f} us: "
                      f"{x['ratio']:6.2f}x plain (kvikio {x['kvikio']['version']})")
            if up and "error" not in up:
                print(f"  ours/upstream: {r['ours']['kvikio_us'] / up['kvikio_us']:.2f}x the time "
                      "(target: ours <= 3x plain)")
        return 1 if up and "error" in up else 0
    a.size, a.iterations = a.size or 4096, a.iterations or 20000
    r = measure(a.size, a.iterations, a.repetitions, a.threads)
    if a.json:
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}))
    else:
        print(f"pread({a.size} B).get(), {a.threads} thread(s), median of {a.repetitions} x "
              f"{a.iterations} calls:")
        print(f"  from Python: {r['python_us']:8.2f} us/call")
        print(f"  from C++:    {r['cpp_us']:8.2f} us/call")
        print(f"  ratio:       {r['ratio']:8.2f}x (target <= 1.5x)")
        print(f"read({a.size} B) from Python, same loops:")
        print(f"  CuFile.read: {r['read_us']:8.2f} us/call")
        print(f"  os.preadv:   {r['plain_preadv_us']:8.2f} us/call")
        print(f"  ratio:       {r['read_ratio']:8.2f}x (target <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
