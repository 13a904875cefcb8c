"""What http_io and s3_io share: the options upstream's remote benchmarks take, the array
written and read back, and the timing loop."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np


def add_common_options(p: argparse.ArgumentParser, apis: tuple[str, ...], default_api: str) -> None:
    p.add_argument("-n", "--nelem", type=int, default=1024,
                   help="number of elements (default: %(default)s)")
    p.add_argument("--dtype", type=np.dtype, default=np.dtype("float32"),
                   help="NumPy dtype of the elements (default: float32)")
    p.add_argument("--nruns", type=int, default=1, help="timed reads per API (default: %(default)s)")
    p.add_argument("-t", "--nthreads", type=int, default=1,
                   help="kvikio IO threads (default: %(default)s)")
    p.add_argument("--api", nargs="+", choices=(*apis, "all"), default=[default_api],
                   help="APIs to time {%(choices)s} (default: %(default)s)")


def check_common_options(p: argparse.ArgumentParser, args: argparse.Namespace,
                         apis: tuple[str, ...]) -> list[str]:
    for name in ("nelem", "nruns", "nthreads"):
        if getattr(args, name) <= 0:
            p.error(f"--{name} must be positive, got {getattr(args, name)}")
    return list(apis) if "all" in args.api else list(dict.fromkeys(args.api))


def payload(args: argparse.Namespace) -> np.ndarray:
    """The array the benchmark writes and checks every read against."""
    return np.arange(args.nelem).astype(args.dtype)


def array_module(api: str) -> Any:
    if api == "cupy":
        import cupy

        return cupy
    return np


def time_reads(name: str, nruns: int, read: Callable[[], Any], expected: np.ndarray) -> list[float]:
    """Seconds of each of `nruns` reads; each result is compared with `expected`."""
    seconds = []
    for run in range(nruns):
        t0 = time.perf_counter()
        got = read()
        seconds.append(time.perf_counter() - t0)
        host = got.get() if hasattr(got, "get") and not isinstance(got, np.ndarray) else got
        if not np.array_equal(np.asarray(host), expected):
            raise RuntimeError(f"{name}: run {run + 1} read back different data")
    return seconds


def report(title: str, nbytes: int, results: dict[str, list[float]]) -> None:
    print(title)
    for api, seconds in results.items():
        best = statistics.median(seconds)
        print(f"  {api:<12} {nbytes / best / 1e6:12.2f} MB/s  (median of {len(seconds)}, "
              f"{nbytes} bytes)")
    sys.stdout.flush()
